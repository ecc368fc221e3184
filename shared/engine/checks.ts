/**
 * Checks: a node's own task message, flagged as a check (TaskMessage.check), delayed by the grace
 * period and sent *before* a write made outside any queue message (an api call settling a callback
 * or an external task). The worker handles it as a redelivery, so whatever that write's propagation
 * left undone when its process died is driven again; done already, it changes nothing. A write made
 * while handling a message needs none: the message itself comes back.
 */
import type { ExecutionRecord, Lease } from "../domain/records.js";
import type { TaskMessage } from "../domain/task-message.js";
import type { EngineContext } from "./context.js";
import { type OutgoingTask, sendTasks, taskMessage } from "./send.js";

export function armCheck(
  ctx: EngineContext,
  execution: ExecutionRecord,
  nodeId: string,
  attempt: number,
): Promise<void> {
  const message = { ...taskMessage(execution, nodeId, attempt), check: true as const };
  return sendTasks(ctx, [{ message, notBefore: ctx.clock.now() + ctx.sweep.graceMs }]);
}

/**
 * A watch: a check on a running attempt at its lease's end, fenced on that lease (a later lease's
 * node ignores it). Then the attempt is recovered if its worker died, or, if it ended, its end's
 * propagation is driven again: its worker may have died after the end, holding no message of its
 * own that would come back (a continued child's, or one whose message a redelivery consumed).
 * `hops` counts re-drives from the event that started the watching; none is armed past the
 * continuation budget.
 */
export function leaseWatch(
  ctx: EngineContext,
  execution: Pick<ExecutionRecord, "executionId" | "trace">,
  nodeId: string,
  attempt: number,
  lease: Lease,
  hops: number,
): OutgoingTask | undefined {
  if (hops > ctx.maxContinuations) return undefined;
  const message: TaskMessage = {
    ...taskMessage(execution, nodeId, attempt),
    check: true,
    lease: lease.token,
    hops,
  };
  return { message, notBefore: lease.expiresAt + 1 };
}
