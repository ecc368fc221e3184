/** Cancelling an execution: pending work at once, running work through its heartbeat. */

import { conflict, notFound } from "../domain/errors.js";
import { notifyParent } from "./children.js";
import type { EngineContext } from "./context.js";
import { executionEvent, executionLifecycleEvent, HISTORY } from "./lifecycle.js";
import type { Propagation } from "./propagation.js";
import type { ExecutionSummary } from "./views.js";

export async function cancelExecution(
  ctx: EngineContext,
  propagation: Propagation,
  executionId: string,
  reason = "cancelled by request",
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
  await propagation.cleanUp(executionId, "CANCELLED", reason);
  return { executionId, status: "CANCELLED", created: false };
}
