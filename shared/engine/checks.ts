/**
 * Checks: a node's own task message, flagged as a check (TaskMessage.check), delayed by the grace
 * period and sent *before* a write made outside any queue message (an api call settling a callback
 * or an external task). The worker handles it as a redelivery, so whatever that write's propagation
 * left undone when its process died is driven again; done already, it changes nothing. A write made
 * while handling a message needs none: the message itself comes back.
 */
import type { ExecutionRecord } from "../domain/records.js";
import type { EngineContext } from "./context.js";
import { sendTasks, taskMessage } from "./send.js";

export function armCheck(
  ctx: EngineContext,
  execution: ExecutionRecord,
  nodeId: string,
  attempt: number,
): Promise<void> {
  const message = { ...taskMessage(execution, nodeId, attempt), check: true as const };
  return sendTasks(ctx, [{ message, notBefore: ctx.clock.now() + ctx.sweep.graceMs }]);
}
