/**
 * The completion of an attempt, shared by every way a node completes (a handler's output, a settled
 * callback, a waiting node's child or items): a module of its own below AttemptEndings and the
 * waiting kinds, which all call it.
 */
import type { GraphNode, WorkflowGraph } from "../domain/graph.js";
import type { Payload } from "../domain/payload.js";
import type { ExecutionRecord, Lease, NodeRecord } from "../domain/records.js";
import type { ArrivalBatcher } from "./arrival-batcher.js";
import { type AttemptFence, fenceOf } from "./attempt-fence.js";
import type { EngineContext } from "./context.js";
import type { ByMessage, CompletionPropagation } from "./contracts.js";
import { HISTORY, nodeEvent, publishNodeEvent } from "./lifecycle.js";
import { nodeCompleted } from "./metrics.js";

/**
 * The completion write of an attempt — fenced on its lease (or, not claimed yet, carrying its
 * claim: attempt-fence.ts), and refused once it was told to stop, even when it finished before its
 * next heartbeat — then its lifecycle event and its dependants.
 * `detail` goes on its NodeCompleted event (a map's counts, a child's id).
 */
export async function completeAttempt(
  ctx: EngineContext,
  propagation: CompletionPropagation,
  execution: ExecutionRecord,
  graph: WorkflowGraph,
  node: GraphNode,
  record: NodeRecord,
  fenced: AttemptFence | Lease,
  output: Payload,
  options: { keepOne?: boolean; arrivals?: ArrivalBatcher; detail?: Record<string, unknown> } = {},
): Promise<{ ok: true; next: ByMessage | undefined } | { ok: false; current: NodeRecord | undefined }> {
  const now = ctx.clock.now();
  const { detail, ...propagationOptions } = options;
  const fence = fenceOf(fenced);
  const done = await fence.write(
    (condition, patch, events) =>
      ctx.store.transitionNode(execution.executionId, node.id, condition, patch, events),
    { notCancelRequested: true },
    { status: "COMPLETED", output, finishedAt: now, lease: null, error: null },
    () => [nodeEvent(ctx, HISTORY.nodeCompleted, now, node.id, record.attempt, detail)],
  );
  if (!done.ok) {
    // The refused claim of an attempt not claimed yet: its worker handles it (worker.ts).
    if (fence.refusal) return { ok: false, current: done.current };
    // Completed already, this same attempt (two handlings of one waiting node's check): the other
    // may have died before its propagation, and its message be gone with this one's; driven here.
    const current = done.current;
    if (current?.status === "COMPLETED" && current.attempt === record.attempt)
      await propagation.afterCompletion(execution, graph, node, { recovery: true });
    return { ok: false, current };
  }
  nodeCompleted(ctx, done.record, now);
  await publishNodeEvent(ctx, execution, graph, "Node Completed", node.id, record.attempt);
  return {
    ok: true,
    next: await propagation.afterCompletion(execution, graph, node, {
      recovery: false,
      ...propagationOptions,
    }),
  };
}
