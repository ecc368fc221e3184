/** History entries and EventBridge lifecycle events, built in one place so their shapes stay uniform. */
import type { WorkflowGraph } from "../domain/graph.js";
import { eventsShown } from "../domain/map.js";
import type { ErrorInfo, ExecutionRecord, HistoryEvent } from "../domain/records.js";
import { attemptTrace, executionTrace, type TraceContext } from "../domain/trace.js";
import type { EventPublisher, LifecycleEvent } from "../ports.js";
import type { EngineContext } from "./context.js";

export { HISTORY } from "../domain/history.js";

/**
 * A node's history event, stamped now (history-stamps.ts). Make it in the call of the write that
 * carries it — after whatever that write followed from was read — so that it is ordered after
 * that; an event reused by a later write would be ordered by its first (sim/history-order.ts).
 */
export function nodeEvent(
  ctx: Pick<EngineContext, "stamps">,
  type: string,
  at: number,
  nodeId: string,
  attempt: number,
  detail?: Record<string, unknown>,
): HistoryEvent {
  const stamp = ctx.stamps.stamp(at);
  return detail === undefined
    ? { ...stamp, type, nodeId, attempt }
    : { ...stamp, type, nodeId, attempt, detail };
}

/** An execution's history event, stamped now (as nodeEvent). */
export function executionEvent(
  ctx: Pick<EngineContext, "stamps">,
  type: string,
  at: number,
  detail?: Record<string, unknown>,
): HistoryEvent {
  const stamp = ctx.stamps.stamp(at);
  return detail === undefined ? { ...stamp, type } : { ...stamp, type, detail };
}

/** A history event with the `traceparent` of the span it belongs to (domain/trace.ts). */
export function traced(event: HistoryEvent, trace: TraceContext): HistoryEvent {
  return { ...event, trace: trace.traceparent };
}

const DETAIL_TYPES: Record<string, string> = {
  RUNNING: "Execution Started",
  SUCCEEDED: "Execution Succeeded",
  FAILED: "Execution Failed",
  CANCELLED: "Execution Cancelled",
};

/** The EventBridge event for an execution status change. Carries ids and status, never payloads. */
export function executionLifecycleEvent(execution: ExecutionRecord, error?: ErrorInfo): LifecycleEvent {
  return {
    detailType: DETAIL_TYPES[execution.status] ?? `Execution ${execution.status}`,
    detail: {
      executionId: execution.executionId,
      workflow: execution.workflow,
      version: execution.version,
      status: execution.status,
      ...(error ? { error: { name: error.name, message: error.message } } : {}),
      trace: executionTrace(execution),
    },
  };
}

/** A node-level EventBridge event; published only for workflows with `events.nodes: true`. */
export function nodeLifecycleEvent(
  execution: ExecutionRecord,
  detailType:
    | "Node Started"
    | "Node Completed"
    | "Node Retry Scheduled"
    | "Node Failed"
    | "Node Skipped"
    | "Node Waiting For Callback",
  nodeId: string,
  attempt: number,
  error?: ErrorInfo,
): LifecycleEvent {
  return {
    detailType,
    detail: {
      executionId: execution.executionId,
      workflow: execution.workflow,
      version: execution.version,
      nodeId,
      attempt,
      ...(error ? { error: { name: error.name, message: error.message } } : {}),
      // The attempt's span; a node skipped before any attempt belongs to its execution's.
      trace: attempt > 0 ? attemptTrace(execution, nodeId, attempt) : executionTrace(execution),
    },
  };
}

/**
 * A callback node began to wait: published whatever the definition's `events` say, since it
 * carries the token that settles it (to the account's own event bus only).
 */
export function callbackWaitingEvent(
  execution: ExecutionRecord,
  nodeId: string,
  attempt: number,
  callbackToken: string,
  timeoutSeconds: number,
): LifecycleEvent {
  const event = nodeLifecycleEvent(execution, "Node Waiting For Callback", nodeId, attempt);
  return { ...event, detail: { ...event.detail, callbackToken, timeoutSeconds } };
}

/** Publishes a node lifecycle event when the workflow's definition asks for node events. */
export async function publishNodeEvent(
  ctx: { events: EventPublisher },
  execution: ExecutionRecord,
  graph: WorkflowGraph,
  ...event: Parameters<typeof nodeLifecycleEvent> extends [unknown, ...infer Rest] ? Rest : never
): Promise<void> {
  if (!graph.definition.events?.nodes) return;
  // A map's items publish only when the map asks for them (its `itemEvents`).
  if (!eventsShown(graph, event[1])) return;
  await ctx.events.publish([nodeLifecycleEvent(execution, ...event)]);
}
