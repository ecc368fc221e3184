/**
 * The history invariants (docs/guarantees.md, History), from one execution's listed history and
 * the audit's accepted writes in true write order:
 *
 *  - every status change of a node (map items included) and of the execution is written with its
 *    event, and no event of a status is written without that change [transition-event];
 *  - every node of an ended execution has a record, so none is shown CANCELLED (the view's reading
 *    of a node never written) without its NodeCancelled, and each record's status is the one its
 *    last status event says [node-event];
 *  - each item's events are listed in the order its writes were accepted: a node's events in the
 *    order of its transitions, a retry's in attempt order [history-order];
 *  - causal order: no event is listed before one whose write was accepted before the event was
 *    made (an event is made as its write's call is: engine/history-stamps.ts; a claim's events as
 *    the attempt starts, written later by a lazy claim) — so an execution's
 *    end comes after the node events that led to it, and the cancellations its end caused after
 *    it [history-causal].
 *
 * The checker's own tables of which event records which status, not the engine's.
 */
import { HISTORY } from "../shared/domain/history.js";
import type { ExecutionStatus, HistoryEvent, NodeRecord, NodeStatus } from "../shared/domain/records.js";
import type { ExecutionWrite, NodeWrite } from "./audit-store.js";

/** The events that record a node's move into each status. */
const NODE_STATUS_EVENTS: Record<NodeStatus, readonly string[]> = {
  // Back to waiting: a redrive.
  PENDING: [HISTORY.nodeRedriven],
  // Queued by a decision, a retry, or a redrive.
  QUEUED: [HISTORY.nodeQueued, HISTORY.nodeRetryScheduled, HISTORY.nodeRedriven],
  RUNNING: [HISTORY.nodeStarted],
  COMPLETED: [HISTORY.nodeCompleted],
  FAILED: [HISTORY.nodeFailed],
  CANCELLED: [HISTORY.nodeCancelled],
  SKIPPED: [HISTORY.nodeSkipped],
};
const NODE_STATUS_EVENT_TYPES = new Set(Object.values(NODE_STATUS_EVENTS).flat());

/** The event that records an execution's move into each status. */
const EXECUTION_STATUS_EVENTS: Record<ExecutionStatus, readonly string[]> = {
  PENDING: [HISTORY.executionCreated],
  RUNNING: [HISTORY.executionStarted, HISTORY.executionRedriven],
  SUCCEEDED: [HISTORY.executionSucceeded],
  FAILED: [HISTORY.executionFailed],
  CANCELLED: [HISTORY.executionCancelled],
};
const EXECUTION_STATUS_EVENT_TYPES = new Set(Object.values(EXECUTION_STATUS_EVENTS).flat());

export interface HistoryCheck {
  /** The execution's history as the store lists it, map items' events included. */
  history: readonly HistoryEvent[];
  /** Its accepted writes, in true write order. */
  executionWrites: readonly ExecutionWrite[];
  nodeWrites: readonly NodeWrite[];
  /** Its graph's node ids (not the onFailure handler's, nor map items'). */
  nodeIds: readonly string[];
  /** Its final records: nodes and map items. */
  records: ReadonlyMap<string, NodeRecord>;
  /** Ended, its cleanup confirmed (out of the sweeper's index): every node must have ended. */
  settled: boolean;
  v: (rule: string, message: string, nodeId?: string) => void;
}

export function checkHistory(c: HistoryCheck): void {
  checkTransitionEvents(c);
  checkFinalEvents(c);
  checkItemOrder(c);
  checkCausalOrder(c);
}

function checkTransitionEvents(c: HistoryCheck): void {
  for (const w of c.nodeWrites) {
    const from: NodeStatus = w.before?.status ?? "PENDING";
    const to = w.after.status;
    const last = w.events.findLast((e) => NODE_STATUS_EVENT_TYPES.has(e.type));
    if (from !== to && (!last || !NODE_STATUS_EVENTS[to].includes(last.type)))
      c.v(
        "transition-event",
        `${from} → ${to} written with ${last ? `${last.type} as its last status event` : "no status event"} [${w.process}]`,
        w.nodeId,
      );
    // A write that went through another status on its way (a lazy claim carried by a retry:
    // QUEUED → RUNNING → QUEUED, its NodeStarted then its NodeRetryScheduled) changed it twice.
    const through = w.events.some(
      (e) => NODE_STATUS_EVENT_TYPES.has(e.type) && !NODE_STATUS_EVENTS[to].includes(e.type),
    );
    if (from === to && last && !through)
      c.v("transition-event", `${last.type} written with no status change (${to}) [${w.process}]`, w.nodeId);
  }
  for (const w of c.executionWrites) {
    const to = w.after.status;
    const changed = w.before === undefined || w.before.status !== to;
    const type = w.event?.type;
    const statusEvent = type !== undefined && EXECUTION_STATUS_EVENT_TYPES.has(type);
    if (changed && (!statusEvent || !EXECUTION_STATUS_EVENTS[to].includes(type)))
      c.v(
        "transition-event",
        `execution ${w.before?.status ?? "(created)"} → ${to} written with ${type ?? "no event"} [${w.process}]`,
      );
    if (!changed && statusEvent)
      c.v("transition-event", `execution event ${type} written with no status change (${to}) [${w.process}]`);
  }
}

function checkFinalEvents(c: HistoryCheck): void {
  if (c.settled)
    for (const nodeId of c.nodeIds) {
      const status = c.records.get(nodeId)?.status;
      if (status === undefined)
        c.v(
          "node-event",
          "never written in an ended execution: shown CANCELLED with no NodeCancelled",
          nodeId,
        );
      else if (status === "PENDING")
        c.v(
          "node-event",
          "left PENDING in an ended execution: shown CANCELLED with no NodeCancelled",
          nodeId,
        );
    }
  const lastStatusEvent = new Map<string, HistoryEvent>();
  for (const e of c.history)
    if (e.nodeId !== undefined && NODE_STATUS_EVENT_TYPES.has(e.type)) lastStatusEvent.set(e.nodeId, e);
  for (const record of c.records.values()) {
    const last = lastStatusEvent.get(record.nodeId);
    // A node never moved (its record holds arrivals only) has no status event yet.
    if (!last && record.status === "PENDING") continue;
    if (!last || !NODE_STATUS_EVENTS[record.status].includes(last.type))
      c.v(
        "node-event",
        `${record.status}, but its last status event is ${last?.type ?? "none"}`,
        record.nodeId,
      );
  }
}

const identity = (e: HistoryEvent) =>
  JSON.stringify([e.type, e.nodeId ?? "", e.attempt ?? -1, e.at, e.seq ?? 0]);

function checkItemOrder(c: HistoryCheck): void {
  const written = new Map<string, string[]>();
  const add = (item: string, e: HistoryEvent) =>
    written.set(item, [...(written.get(item) ?? []), identity(e)]);
  const writes = [...c.executionWrites, ...c.nodeWrites].sort((a, b) => a.seq - b.seq);
  for (const w of writes)
    for (const e of "events" in w ? w.events : w.event ? [w.event] : []) add(e.nodeId ?? "", e);
  const listed = new Map<string, string[]>();
  for (const e of c.history) listed.set(e.nodeId ?? "", [...(listed.get(e.nodeId ?? "") ?? []), identity(e)]);
  for (const [item, events] of written) {
    const shown = listed.get(item) ?? [];
    if (shown.join("\n") === events.join("\n")) continue;
    const at = events.findIndex((e, i) => shown[i] !== e);
    c.v(
      "history-order",
      `its events are listed out of their write order from the ${at + 1}th: ${shown[at] ?? "nothing"} where ${events[at] ?? "nothing"} was written`,
      item || undefined,
    );
  }
}

function checkCausalOrder(c: HistoryCheck): void {
  // Each event's write: when it was accepted (seq), and the latest write accepted before its call
  // was made (issued) — the event was made with the call, so after all of those.
  //
  // A claim's events (NodeQueued, NodeStarted) are made as the attempt starts, and written with its
  // claim — which a lazy claim (shared/engine/attempt-fence.ts) writes later: with the attempt's
  // first heartbeat, or with its ending. So they were made only after the writes accepted before
  // their stamp's millisecond (writes in that same millisecond are not told apart: a weaker check
  // for those two events, never a false one).
  const writeOf = new Map<string, Array<{ seq: number; issued: number }>>();
  const writes = [...c.executionWrites, ...c.nodeWrites].sort((a, b) => a.seq - b.seq);
  const acceptedBefore = (at: number): number => {
    let low = 0;
    let high = writes.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (writes[mid]!.at < at) low = mid + 1;
      else high = mid;
    }
    return low === 0 ? 0 : writes[low - 1]!.seq;
  };
  for (const w of writes)
    for (const e of "events" in w ? w.events : w.event ? [w.event] : []) {
      const claim = e.type === HISTORY.nodeQueued || e.type === HISTORY.nodeStarted;
      const issued = claim ? Math.min(w.issued, acceptedBefore(e.at)) : w.issued;
      writeOf.set(identity(e), [...(writeOf.get(identity(e)) ?? []), { seq: w.seq, issued }]);
    }
  const seen = new Map<string, number>();
  const listed = c.history.map((e) => {
    const key = identity(e);
    const n = seen.get(key) ?? 0;
    seen.set(key, n + 1);
    return { e, write: writeOf.get(key)?.[n] };
  });
  // From the end: the earliest accepted write among the events listed after each one.
  let earliest: { seq: number; e: HistoryEvent } | undefined;
  let reported = 0;
  for (let i = listed.length - 1; i >= 0 && reported < 3; i--) {
    const { e, write } = listed[i]!;
    if (!write) continue;
    if (earliest && write.issued >= earliest.seq) {
      reported++;
      c.v(
        "history-causal",
        `${describe(e)} is listed before ${describe(earliest.e)}, though it was made after that one was written`,
        e.nodeId,
      );
    }
    if (!earliest || write.seq < earliest.seq) earliest = { seq: write.seq, e };
  }
}

function describe(e: HistoryEvent): string {
  const who = e.nodeId === undefined ? "the execution's" : `${e.nodeId}'s`;
  return `${who} ${e.type}${e.attempt ? ` (attempt ${e.attempt})` : ""} @${e.at}${e.seq ? `.${e.seq}` : ""}`;
}
