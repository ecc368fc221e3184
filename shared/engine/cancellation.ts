/** Cancelling an execution: pending work at once, running work through its heartbeat. */

import { conflict, notFound } from "../domain/errors.js";
import { isTerminalExecution } from "../domain/states.js";
import type { EngineContext } from "./context.js";
import type { ExecutionCleanup } from "./contracts.js";
import { executionEvent, executionLifecycleEvent, HISTORY } from "./lifecycle.js";
import { notifyParent } from "./parent-notice.js";
import { sendTasks } from "./send.js";
import type { ExecutionSummary } from "./views.js";

/**
 * The node id of a cleanup message: not a node (node ids begin with a letter or digit) but the
 * execution's cleanup (Propagation.cleanUp), asked of a worker by the cancellation of its parent.
 */
export const CLEANUP_NODE_ID = "$cleanUp";

/**
 * Cancels an execution: its own write, then its cleanup — at once (`cleanUp: "now"`, a client's
 * cancel), or by a message to a worker (`"message"`, a child cancelled by its parent's cleanup).
 * So a cancel does the work of one execution however large its tree: each level of children is
 * cancelled by the workers, in parallel, one queue hop per level (CHILD_LIMITS.maxDepth at most).
 * A lost message only delays it: the execution stays in the sweeper's index until its cleanup is
 * confirmed.
 */
export async function cancelExecution(
  ctx: EngineContext,
  propagation: ExecutionCleanup,
  executionId: string,
  reason = "cancelled by request",
  options: { cleanUp?: "now" | "message" } = {},
): Promise<ExecutionSummary> {
  const now = ctx.clock.now();
  const error = { name: "Cancelled", message: reason };
  const cancelled = await ctx.store.transitionExecution(
    executionId,
    ["PENDING", "RUNNING"],
    {
      status: "CANCELLED",
      finishedAt: now,
      error,
      cancelRequested: { reason, at: now },
      // In the sweeper's index until the cleanup below is confirmed (it finishes it after a crash).
      sweepAt: now + ctx.sweep.graceMs,
    },
    executionEvent(ctx, HISTORY.executionCancelled, now, { reason }),
  );
  if (!cancelled.ok) {
    if (!cancelled.current) throw notFound(`execution "${executionId}" does not exist`);
    throw conflict(`execution "${executionId}" is already ${cancelled.current.status}`);
  }
  await ctx.events.publish([executionLifecycleEvent(cancelled.record, error)]);
  await notifyParent(ctx, cancelled.record);
  if (options.cleanUp === "message")
    await sendTasks(ctx, [{ message: { executionId, nodeId: CLEANUP_NODE_ID, attempt: 0 } }]);
  else await propagation.cleanUp(executionId, "CANCELLED", reason);
  return { executionId, status: "CANCELLED", created: false };
}

/** A cleanup message (CLEANUP_NODE_ID): an ended execution's cleanup, unless it is confirmed already. */
export async function cleanUpByMessage(
  ctx: EngineContext,
  propagation: ExecutionCleanup,
  executionId: string,
): Promise<void> {
  const execution = await ctx.store.getExecution(executionId);
  // Still RUNNING (a stale message after a redrive), gone, or its cleanup confirmed: nothing to do.
  if (!execution || !isTerminalExecution(execution.status) || execution.sweepAt === undefined) return;
  const reason = execution.cancelRequested?.reason ?? execution.error?.message ?? "execution ended";
  await propagation.cleanUp(executionId, execution.status, reason);
}
