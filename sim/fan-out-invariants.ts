/**
 * The fan-out budget's invariants (shared/domain/fan-out.ts), checked from the store's final state,
 * the audit's node writes and its log of budget calls (audit-store.ts FanOutWrite), with the
 * checker's own statement of the limits (the world's, as it gave them to the engine):
 *
 *  - no root ever has more descendants than `maxDescendants`, and the store's count of them is
 *    exact: every execution naming the root counted once, nothing else [fan-out-descendants];
 *  - no more map items run at once under a root than `maxMapItemsInFlight`, replaying the items'
 *    writes in order: an item runs from its claim (RUNNING) to its end, counted from a claim made
 *    while its map attempt and its execution ran (a stale claim, by a process that read them before
 *    they ended, is told to stop by the cleanup or the sweeper) [fan-out-in-flight];
 *  - what is reserved is what the tree's maps hold: the root's count is the sum of the reservations
 *    held, and an execution whose end is settled (out of the sweeper's index) holds none — a
 *    release forgotten or counted twice shows [fan-out-released];
 *  - a refusal happened only at the limit — a descendant refused with the count at the limit, a
 *    reservation refused when its lanes did not fit —, and a node (or item) fails with
 *    FanOutLimitExceeded only when a call for its attempt was refused [fan-out-refusal];
 *  - a cancelled root leaves no descendant running once the world settled [fan-out-cancel].
 */
import type { FanOutLimits } from "../shared/domain/fan-out.js";
import { parseMapItemId } from "../shared/domain/map.js";
import type { ExecutionRecord } from "../shared/domain/records.js";
import { isTerminalExecution, isTerminalNode } from "../shared/domain/states.js";
import type { Store } from "../shared/ports.js";
import type { AuditStore } from "./audit-store.js";
import type { Violation } from "./invariants.js";

export const FAN_OUT_LIMIT_EXCEEDED = "FanOutLimitExceeded";

export interface FanOutCheck {
  store: Store;
  audit: AuditStore;
  executions: readonly ExecutionRecord[];
  limits: FanOutLimits;
  /** Whether the world settled (ran out of work): only then must a cancelled tree have ended. */
  settled: boolean;
}

export interface FanOutCounts {
  descendantsRefused: number;
  reservationsRefused: number;
  reservationsReleased: number;
  /** The most map items that ran at once under one root. */
  mostItemsInFlight: number;
  cancelledTrees: number;
}

const rootOf = (e: ExecutionRecord) => e.rootExecutionId ?? e.executionId;

export async function checkFanOut(
  input: FanOutCheck,
): Promise<{ violations: Violation[]; counts: FanOutCounts }> {
  const violations: Violation[] = [];
  const v = (rule: string, message: string, executionId?: string, nodeId?: string) =>
    violations.push({
      rule,
      message,
      ...(executionId ? { executionId } : {}),
      ...(nodeId ? { nodeId } : {}),
    });
  const counts: FanOutCounts = {
    descendantsRefused: 0,
    reservationsRefused: 0,
    reservationsReleased: 0,
    mostItemsInFlight: 0,
    cancelledTrees: 0,
  };
  const { limits } = input;
  const byId = new Map(input.executions.map((e) => [e.executionId, e]));
  const trees = new Map<string, ExecutionRecord[]>();
  for (const e of input.executions) trees.set(rootOf(e), [...(trees.get(rootOf(e)) ?? []), e]);

  for (const [root, tree] of trees) {
    const stored = await input.store.getFanOut(root);
    const descendants = tree.filter((e) => e.executionId !== root);
    if (descendants.length > limits.maxDescendants)
      v(
        "fan-out-descendants",
        `${descendants.length} descendants, over the limit ${limits.maxDescendants}`,
        root,
      );
    if (stored.descendants !== descendants.length)
      v(
        "fan-out-descendants",
        `the store counts ${stored.descendants} descendants, but ${descendants.length} exist`,
        root,
      );
    // Reservations held across the tree are what the root counts as in flight.
    let held = 0;
    for (const e of tree) {
      const reservations = await input.store.listMapItemReservations(e.executionId);
      held += reservations.reduce((sum, r) => sum + r.units, 0);
      for (const r of reservations)
        if (r.rootExecutionId !== root)
          v(
            "fan-out-released",
            `a reservation ${r.key} names root ${r.rootExecutionId}, not ${root}`,
            e.executionId,
          );
      if (isTerminalExecution(e.status) && e.sweepAt === undefined && reservations.length > 0)
        v(
          "fan-out-released",
          `its end is settled, yet it still holds ${reservations.map((r) => `${r.key} (${r.units})`).join(", ")}`,
          e.executionId,
        );
    }
    if (stored.mapItemsInFlight !== held)
      v(
        "fan-out-released",
        `the root counts ${stored.mapItemsInFlight} map items in flight, but its tree holds ${held}`,
        root,
      );
    if (stored.mapItemsInFlight > limits.maxMapItemsInFlight)
      v(
        "fan-out-in-flight",
        `${stored.mapItemsInFlight} map items reserved, over the limit ${limits.maxMapItemsInFlight}`,
        root,
      );
    // A cancelled root: once the world settled, nothing of its tree runs.
    const rootRecord = byId.get(root);
    if (rootRecord?.status === "CANCELLED" && descendants.length > 0) {
      counts.cancelledTrees++;
      if (input.settled)
        for (const e of descendants)
          if (!isTerminalExecution(e.status))
            v("fan-out-cancel", `its root ${root} was cancelled, yet it is ${e.status}`, e.executionId);
    }
  }

  // Items running at once per root, in write order. An item claimed after its map attempt stopped
  // running is not counted: it never runs (the `map-item` invariants check so), and its map's
  // reservation may have gone back already.
  const running = new Map<string, Set<string>>();
  const maps = new Map<string, { status: string; attempt: number }>();
  for (const write of input.audit.nodeWrites) {
    const item = parseMapItemId(write.nodeId);
    if (!item) {
      maps.set(`${write.executionId}/${write.nodeId}`, {
        status: write.after.status,
        attempt: write.after.attempt,
      });
      continue;
    }
    const map = maps.get(`${write.executionId}/${item.mapId}`);
    const mapRuns = map?.status === "RUNNING" && map.attempt === item.mapAttempt;
    const execution = byId.get(write.executionId);
    if (!execution) continue;
    const root = rootOf(execution);
    const set = running.get(root) ?? new Set<string>();
    running.set(root, set);
    const key = `${write.executionId}/${write.nodeId}`;
    // Claimed by a process that read its execution before it ended, after the end's cleanup listed
    // the items (and maybe gave the reservations back): not the engine's to count (its claim is
    // stale, and it is told to stop by the next cleanup or the sweeper).
    const claimedLive = mapRuns && write.executionStatus === "RUNNING";
    if (write.after.status === "RUNNING" && (claimedLive || set.has(key))) set.add(key);
    else if (isTerminalNode(write.after.status) || write.after.status === "QUEUED") set.delete(key);
    counts.mostItemsInFlight = Math.max(counts.mostItemsInFlight, set.size);
    if (set.size > limits.maxMapItemsInFlight)
      v(
        "fan-out-in-flight",
        `${set.size} map items ran at once under this root (write ${write.seq}), over the limit ${limits.maxMapItemsInFlight}`,
        root,
      );
  }

  // Refusals: only at the limit, and every FanOutLimitExceeded node backed by one.
  const refusedFor = new Set<string>();
  for (const call of input.audit.fanOutWrites) {
    if (call.op === "release") {
      counts.reservationsReleased++;
      continue;
    }
    if (call.accepted) continue;
    if (call.op === "descendant") {
      counts.descendantsRefused++;
      if (call.after.descendants < (call.limit ?? limits.maxDescendants))
        v(
          "fan-out-refusal",
          `a child was refused with ${call.after.descendants} descendants, under the limit`,
          call.root,
        );
      if (call.parent)
        refusedFor.add(`${call.parent.executionId}/${call.parent.nodeId}#${call.parent.attempt}`);
    } else {
      counts.reservationsRefused++;
      if (call.after.mapItemsInFlight + call.units <= (call.limit ?? limits.maxMapItemsInFlight))
        v(
          "fan-out-refusal",
          `map ${call.key} was refused ${call.units} items with ${call.after.mapItemsInFlight} in flight: it fit`,
          call.executionId,
        );
      const match = call.key && /^(.*)\[(\d+)\]$/.exec(call.key);
      if (match) refusedFor.add(`${call.executionId}/${match[1]}#${match[2]}`);
    }
  }
  for (const write of input.audit.nodeWrites) {
    if (write.after.status !== "FAILED" || write.after.error?.name !== FAN_OUT_LIMIT_EXCEEDED) continue;
    if (write.before?.status === "FAILED") continue;
    if (!refusedFor.has(`${write.executionId}/${write.nodeId}#${write.after.attempt}`))
      v(
        "fan-out-refusal",
        `failed with ${FAN_OUT_LIMIT_EXCEEDED} on attempt ${write.after.attempt}, but no call of that attempt was refused`,
        write.executionId,
        write.nodeId,
      );
  }
  return { violations, counts };
}

/** Whether a node's (or item's) record says its attempt was refused by the budget (the reference's fact). */
export function refusedByBudget(error: { name: string } | undefined): boolean {
  return error?.name === FAN_OUT_LIMIT_EXCEEDED;
}
