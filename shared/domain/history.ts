/**
 * An execution's history: the event types, and the order both stores list them in.
 *
 * History is kept on the items it describes (each node's events on its record, the execution's on
 * its own), appended in the same conditional write as the transition, so an item's list is in the
 * order its transitions were accepted. Across items the engine stamps each event (`at`, `seq`)
 * from one sequence per clock (engine/history-stamps.ts): an event made after another was written
 * — its effect — has a greater stamp. The listing merges the items by stamp without reordering any
 * item's own list, so the history is in causal order: a node's events in the order of its
 * transitions, an execution's end after the node events that led to it, and what its end caused
 * (the cancellation of work still outstanding, its onFailure handler) after the end.
 */
import type { HistoryEvent } from "./records.js";

export const HISTORY = {
  executionCreated: "ExecutionCreated",
  executionStarted: "ExecutionStarted",
  executionSucceeded: "ExecutionSucceeded",
  executionFailed: "ExecutionFailed",
  executionCancelled: "ExecutionCancelled",
  executionRedriven: "ExecutionRedriven",
  nodeQueued: "NodeQueued",
  nodeStarted: "NodeStarted",
  nodeCompleted: "NodeCompleted",
  nodeRetryScheduled: "NodeRetryScheduled",
  nodeFailed: "NodeFailed",
  nodeCancelled: "NodeCancelled",
  nodeSkipped: "NodeSkipped",
  mapStarted: "MapStarted",
  childStarted: "ChildStarted",
  callbackWaiting: "CallbackWaiting",
  nodeRedriven: "NodeRedriven",
} as const;

const EXECUTION_ENDS = new Set<string>([
  HISTORY.executionSucceeded,
  HISTORY.executionFailed,
  HISTORY.executionCancelled,
]);

/**
 * [at, seq, rank]. The rank decides only between items' events with one stamp, which only events
 * stamped by different sequences can share (two machines in one millisecond, or events written
 * before stamps had a `seq`): an execution's start first, its end last, its nodes' in between.
 */
type Key = readonly [number, number, number];

function keyOf(event: HistoryEvent): Key {
  const rank = event.nodeId !== undefined ? 1 : EXECUTION_ENDS.has(event.type) ? 2 : 0;
  return [event.at, event.seq ?? 0, rank];
}

function compareKeys(a: Key, b: Key): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

/**
 * The events of one execution, given item by item each in its written order (as the stores keep
 * them), in history order. An event keyed lower than one written before it on the same item (its
 * stamp taken before that write, its own write accepted after) is keyed as that one: an item's
 * list is never reordered, so neither are a node's transitions.
 */
export function orderHistory(events: readonly HistoryEvent[]): HistoryEvent[] {
  const latest = new Map<string, Key>();
  const keyed = events.map((event, position) => {
    const item = event.nodeId ?? "";
    const own = keyOf(event);
    const before = latest.get(item);
    const key = before !== undefined && compareKeys(before, own) > 0 ? before : own;
    latest.set(item, key);
    return { event, key, item, position };
  });
  keyed.sort(
    (a, b) =>
      compareKeys(a.key, b.key) ||
      (a.item < b.item ? -1 : a.item > b.item ? 1 : 0) ||
      a.position - b.position,
  );
  return keyed.map(({ event }) => event);
}
