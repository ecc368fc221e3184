/**
 * A child execution's end, told to its parent's `workflow` node (engine/children.ts). Sent by
 * whatever ends the child — its finish (propagation.ts) or its cancel (cancellation.ts) — so it
 * lives below both, apart from the node kind that waits for it.
 */
import type { ExecutionRecord } from "../domain/records.js";
import { executionTrace } from "../domain/trace.js";
import type { EngineContext } from "./context.js";
import { sendTasks } from "./send.js";

/**
 * Tells the parent's `workflow` node that its child ended (a message to that node's attempt, handled
 * as its check). A lost message only delays the parent until the sweeper's check.
 */
export async function notifyParent(ctx: EngineContext, child: ExecutionRecord): Promise<void> {
  if (!child.parent) return;
  const { executionId, nodeId, attempt } = child.parent;
  // Sent in the child's trace context, which continues the parent's (the same trace id).
  const trace = executionTrace(child).traceparent;
  await sendTasks(ctx, [{ message: { executionId, nodeId, attempt, trace } }]);
}
