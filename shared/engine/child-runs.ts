/**
 * Starting a child execution for a node that waits for one (a `workflow` node per attempt, a `loop`
 * per iteration): idempotent by the key the caller gives, one level deeper than its parent, counted
 * against its root's fan-out budget, continuing its parent attempt's trace.
 */
import { CHILD_LIMITS, type ChildWorkflowParams } from "../domain/child.js";
import { RetryableError, TerminalError, WeftError } from "../domain/errors.js";
import { rootOf } from "../domain/fan-out.js";
import type { GraphNode } from "../domain/graph.js";
import { PayloadError } from "../domain/json.js";
import type { Payload } from "../domain/payload.js";
import type { ExecutionRecord } from "../domain/records.js";
import { isTerminalExecution } from "../domain/states.js";
import { attemptTrace } from "../domain/trace.js";
import type { EngineContext } from "./context.js";
import type { Executions } from "./executions.js";

/** Starts (or, under the same key, finds) the child; a failure to start it is the node's (asTaskError). */
export async function startChild(
  executions: Executions,
  execution: ExecutionRecord,
  node: GraphNode,
  attempt: number,
  params: ChildWorkflowParams,
  idempotencyKey: string,
): Promise<string> {
  const depth = (execution.depth ?? 0) + 1;
  if (depth > CHILD_LIMITS.maxDepth)
    throw new TerminalError(
      `node "${node.id}" would start a child execution ${depth} levels deep; executions nest at most ${CHILD_LIMITS.maxDepth} deep`,
      { code: "WorkflowDepthExceeded" },
    );
  try {
    const child = await executions.create({
      workflow: params.name,
      ...(params.version !== undefined ? { version: params.version } : {}),
      input: params.input ?? null,
      idempotencyKey,
      parent: { executionId: execution.executionId, nodeId: node.id, attempt },
      depth,
      // Counted against the root's fan-out budget (domain/fan-out.ts): over it, the node fails.
      rootExecutionId: rootOf(execution),
      // The child continues its parent's trace: a child span of this attempt's.
      traceparent: attemptTrace(execution, node.id, attempt).traceparent,
    });
    return child.executionId;
  } catch (error) {
    throw asTaskError(node, error);
  }
}

/** A failure to start the child, as the node's: an unknown workflow or version is terminal. */
function asTaskError(node: GraphNode, error: unknown): unknown {
  if (error instanceof WeftError && !(error instanceof TerminalError) && error.code === "NotFound")
    return new TerminalError(`node "${node.id}": ${error.message}`, {
      code: "WorkflowNotFound",
      cause: error,
    });
  return error;
}

/** Where a child stands for the node that waits for it. */
export type ChildOutcome =
  | { kind: "running" }
  | { kind: "failed"; error: Error }
  | { kind: "succeeded"; output: Payload };

/**
 * The child's end as its parent node sees it: its output (adopted into the parent's payloads), or
 * the node's error — a failed child is retried as a new child (RetryableError); a cancelled or
 * vanished one is not the node's to redo; outputs over the limit of a value fail it for good.
 */
export async function childOutcome(
  ctx: EngineContext,
  executions: Executions,
  execution: ExecutionRecord,
  node: GraphNode,
  childId: string,
): Promise<ChildOutcome> {
  const child = await ctx.store.getExecution(childId);
  if (child && !isTerminalExecution(child.status)) return { kind: "running" };
  if (child?.status !== "SUCCEEDED") {
    const why = child ? `${child.status.toLowerCase()}: ${child.error?.message ?? ""}` : "is gone";
    const message = `child execution ${childId} of node "${node.id}" ${why}`;
    return {
      kind: "failed",
      error:
        child?.status === "FAILED"
          ? new RetryableError(message, { code: "ChildWorkflowFailed" })
          : new TerminalError(message, { code: "ChildWorkflowCancelled" }),
    };
  }
  try {
    const output = await ctx.payloads.adopt(
      execution.executionId,
      await executions.outputOf(child),
      `the output of child execution ${child.executionId}`,
    );
    return { kind: "succeeded", output };
  } catch (error) {
    // Its sinks' outputs together are over the limit of a value.
    if (!(error instanceof PayloadError)) throw error;
    return { kind: "failed", error };
  }
}
