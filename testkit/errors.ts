/** The errors the test runtime throws at a test, each saying what to do about it. */
import { hasCode, type ProblemDetail } from "../shared/domain/errors.js";
import type { TestRun } from "./run.js";
import type { WaitingNode } from "./waiting.js";

/**
 * A workflow definition that fails validation: the same problems `POST /workflows` answers 400
 * with, every one of them in the message and in `problems`.
 */
export class InvalidWorkflowError extends Error {
  override name = "InvalidWorkflowError";

  constructor(readonly problems: readonly ProblemDetail[]) {
    super(
      [
        `the workflow definition has ${problems.length} problem(s):`,
        ...problems.map((p) => `  - ${p.path || "(definition)"}: ${p.message} [${p.code}]`),
      ].join("\n"),
    );
  }
}

/** The engine's InvalidDefinition as an InvalidWorkflowError; anything else as it is. */
export function asInvalidWorkflow(error: unknown): unknown {
  return hasCode(error, "InvalidDefinition") ? new InvalidWorkflowError(error.details) : error;
}

/**
 * The execution cannot end by itself: it waits for a callback the test has not settled (before its
 * timeout would fire), or for something nothing in the runtime will ever do. `run` is the
 * execution as it is, `waiting` its unfinished nodes (those of child executions included).
 */
export class ExecutionWaitingError extends Error {
  override name = "ExecutionWaitingError";

  constructor(
    readonly run: TestRun,
    readonly waiting: readonly WaitingNode[],
    now: number,
  ) {
    const callbacks = waiting.filter((node) => node.callbackToken !== undefined);
    const lines = waiting.map((node) => `  - ${describeNode(node, run.executionId, now)}`);
    const advice =
      callbacks.length > 0
        ? "Settle a callback with weft.callbacks.complete(token, output) or weft.callbacks.fail(token, error) " +
          "(the token: run.nodes[id].callbackToken, or weft.callbacks.waitFor(executionId, nodeId)), " +
          "or let it time out with weft.clock.advance(ms); then call weft.runToEnd again."
        : "Nothing in the runtime will move it on at any time.";
    super(
      [
        `execution ${run.executionId} (workflow "${run.workflow}") is ${run.status} and cannot end by itself; it waits on:`,
        ...(lines.length > 0 ? lines : ["  (no unfinished node)"]),
        advice,
      ].join("\n"),
    );
  }
}

function describeNode(node: WaitingNode, rootId: string, now: number): string {
  const where = node.executionId === rootId ? "" : ` of child execution ${node.executionId}`;
  const what = `node "${node.nodeId}"${where} (${node.type}, ${node.status}, attempt ${node.attempt})`;
  if (node.callbackToken === undefined || node.dueAt === undefined) return what;
  const seconds = Math.max(0, Math.round((node.dueAt - now) / 1000));
  return `${what} waits for its callback; it times out in ${seconds} s of virtual time (at ${new Date(node.dueAt).toISOString()}); token ${node.callbackToken}`;
}
