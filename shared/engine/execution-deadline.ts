/**
 * An execution's deadline (the workflow's `timeoutSeconds`): a timer armed at its start — a message
 * delayed to the deadline, or a durable timer when it is further than SQS's reach (send.ts) — that
 * fails the execution still running then with `ExecutionTimedOut`. Its end tells running work to
 * stop (the cleanup, as any end). The sweeper's look at a running execution checks it too.
 */
import type { WorkflowGraph } from "../domain/graph.js";
import type { ExecutionRecord } from "../domain/records.js";
import type { EngineContext } from "./context.js";
import { notifyParent } from "./parent-notice.js";
import type { Propagation } from "./propagation.js";
import { sendTasks, taskMessage } from "./send.js";

/** The node id of a deadline message: not a node (node ids begin with a letter or digit). */
export const DEADLINE_NODE_ID = "$deadline";

/** The error an execution past its deadline fails with. */
export const EXECUTION_TIMED_OUT = "ExecutionTimedOut";

/** Arms the deadline of a started execution, if it has one. */
export async function armDeadline(ctx: EngineContext, execution: ExecutionRecord): Promise<void> {
  if (execution.deadline === undefined) return;
  await sendTasks(ctx, [
    { message: taskMessage(execution, DEADLINE_NODE_ID, 1), notBefore: execution.deadline },
  ]);
}

/** A deadline message: fails the execution if it is still running past its deadline. */
export async function deadlineByMessage(
  ctx: EngineContext,
  propagation: Pick<Propagation, "finishExecution">,
  executionId: string,
): Promise<void> {
  const execution = await ctx.store.getExecution(executionId);
  if (!execution || execution.deadline === undefined) return;
  if (execution.status !== "RUNNING") {
    // Ended (by this deadline, perhaps, in a handling that died before it told the parent).
    if (execution.status !== "PENDING") await notifyParent(ctx, execution);
    return;
  }
  if (execution.deadline > ctx.clock.now()) {
    // Early (a redrive moved its deadline, or a clock ahead of the queue's): armed again for it.
    await armDeadline(ctx, execution);
    return;
  }
  const graph = await ctx.graphs.get(execution.workflow, execution.version);
  await timeOut(propagation, execution, graph);
}

/** Fails the execution for its deadline (conditional on RUNNING, as every end). */
export function timeOut(
  propagation: Pick<Propagation, "finishExecution">,
  execution: ExecutionRecord,
  graph: WorkflowGraph,
): Promise<void> {
  return propagation.finishExecution(execution.executionId, graph, "FAILED", "execution timed out", {
    name: EXECUTION_TIMED_OUT,
    message: `the execution exceeded its timeout of ${graph.definition.timeoutSeconds} s`,
  });
}
