/**
 * Concurrency limits at run time (issue 29; the state is domain/slots.ts): before an attempt of a
 * node with `concurrency` runs, it takes a slot of each of its limits; one that finds a limit full
 * waits QUEUED, holding no worker, in that limit's fair queue; an attempt that ends gives its slots
 * back, each straight to the next waiter (a hand-off: the waiter is made a holder in the same
 * write, then its message is sent).
 *
 * What keeps it from stalling or leaking:
 * - Lost wake-ups: a waiter looks at the limit again after it queued itself, and a release looks at
 *   the queue after it freed its slot; one of the two sees the other (strongly consistent reads).
 * - Leaked slots: a holder whose attempt ended or moved on (a dead worker's, once the sweeper took
 *   its attempt back after its lease) is *stale* and is dropped when the limit is found full
 *   (engine reads of the holders' nodes, at most once per `STALE_LOOK_MS` a key, forced by the
 *   backstop); a handed slot never claimed within the horizon too.
 * - Crashes between a hand-off's write and its message: while work waits on a key, one backstop
 *   timer per key (not per waiter) is armed at `checkAt`; its message — a waiter's, as a check —
 *   makes the handling look at the key (stale holders, hand-offs) and arm the next.
 * Never `limit + 1`: every change of holders is one write conditioned on the version read.
 */

import { hasExpressions } from "../domain/expressions.js";
import type { GraphNode, WorkflowGraph } from "../domain/graph.js";
import type { ExecutionRecord, NodeRecord } from "../domain/records.js";
import {
  acquireSlot,
  decodeSlots,
  encodeSlots,
  grantWaiter,
  type HolderId,
  holderId,
  keyValueOf,
  parseHolderId,
  placeWaiter,
  releaseSlot,
  SLOT_LIMITS,
  type SlotsState,
  slotKeyOf,
} from "../domain/slots.js";
import { isTerminalNode } from "../domain/states.js";
import type { SlotWaiter, TaskMessage } from "../ports.js";
import type { EngineContext } from "./context.js";
import { loadDeps } from "./dep-outputs.js";
import { depIndexesOf, dispatchMode } from "./dispatch-mode.js";
import { expressionScope } from "./prepare.js";
import { sendTasks } from "./send.js";
import { loadValues } from "./values.js";
import { type RetryPolicy, updateVersioned } from "./versioned-items.js";

/** One of an attempt's limits, its key evaluated. */
export interface AttemptLimit {
  slotKey: string;
  limit: number;
  /** The key's value (what views show); "" for a limit without a key. */
  key: string;
  /** Its fairness group in the queue: its other limits' keys, else its execution. */
  group: string;
}

/** Conflicting writes of one key's state tried again, with jittered backoff, up to this many times. */
const SLOT_RETRY: RetryPolicy = {
  maxRounds: 200,
  baseMs: 4,
  capMs: 500,
  exhausted: () => new Error("the concurrency slots of a key changed under 200 writes in a row"),
};

/** Waiters listed beyond the free slots a hand-off counts (a global key's waiters may allow more). */
const HAND_OFF_LOOKAHEAD = 4;

/** How often (at most) a full limit's holders are read to find stale ones. */
const STALE_LOOK_MS = 15_000;

export class Slots {
  constructor(private readonly ctx: EngineContext) {}

  /** The backstop's period, and the age past which an unclaimed or silent holder is stale. */
  private get horizonMs(): number {
    return Math.max(this.ctx.leaseMs, 60_000);
  }

  /** `node`'s limits for this execution, their keys evaluated over its input and dependencies. */
  async limitsOf(execution: ExecutionRecord, graph: WorkflowGraph, node: GraphNode, record?: NodeRecord) {
    const limits = node.concurrency ?? [];
    if (limits.length === 0) return [];
    const keyed = limits.some((limit) => limit.key !== undefined && hasExpressions(limit.key));
    let values: unknown[] = limits.map((limit) => limit.key ?? "");
    if (keyed) {
      const deps = await loadDeps(
        this.ctx,
        execution.executionId,
        graph,
        depIndexesOf(dispatchMode(this.ctx, node), node, record?.okDeps ?? []),
        node,
      );
      const [input, depValues] = await Promise.all([
        this.ctx.payloads.load(execution.input),
        loadValues(this.ctx, deps),
      ]);
      const scope = expressionScope(execution, input, depValues);
      values = await Promise.all(
        limits.map((limit, i) =>
          limit.key === undefined
            ? ""
            : this.ctx.expressions.resolve(
                limit.key,
                scope,
                { now: () => this.ctx.clock.now() },
                `concurrency[${i}].key`,
              ),
        ),
      );
    }
    const keys = values.map((value) => (value === "" ? "" : keyValueOf(value)));
    const all = limits.map((limit, i): AttemptLimit => {
      const others = keys.filter((_key, j) => j !== i && limits[j]?.key !== undefined);
      return {
        slotKey: slotKeyOf(limit, execution.workflow, node.id, i, keys[i]!),
        limit: limit.limit,
        key: keys[i]!,
        group: others.length > 0 ? others.join("\u0000") : execution.executionId,
      };
    });
    // Two limits that name one global key are one limit: the smaller.
    const bySlot = new Map<string, AttemptLimit>();
    for (const limit of all) {
      const seen = bySlot.get(limit.slotKey);
      if (!seen || limit.limit < seen.limit) bySlot.set(limit.slotKey, limit);
    }
    return [...bySlot.values()];
  }

  /**
   * Before an attempt runs: a slot of each limit taken for it (or found held — handed to it, or
   * taken by a copy of its message). Else it gives back what it took, waits in the first full
   * limit's queue (its node QUEUED with `waitingFor`), and the answer is false: nothing runs now.
   */
  async enter(
    execution: ExecutionRecord,
    node: GraphNode,
    message: TaskMessage,
    limits: readonly AttemptLimit[],
  ): Promise<boolean> {
    const holder = holderId(execution.executionId, node.id, message.attempt);
    for (const limit of limits) {
      if (await this.take(limit, holder, message.check === true)) continue;
      // Held idle while it waits, the others' slots would keep work out: given back.
      for (const other of limits) if (other !== limit) await this.release(other, holder);
      await this.wait(execution, node, message, limit);
      return false;
    }
    return true;
  }

  /** The attempt's slots given back (held or not), each handed to its limit's next waiter. */
  async leave(executionId: string, nodeId: string, attempt: number, limits: readonly AttemptLimit[]) {
    const holder = holderId(executionId, nodeId, attempt);
    for (const limit of limits) await this.release(limit, holder);
  }

  /**
   * A look at each limit (the backstop's): stale holders dropped, free slots handed to waiters, the
   * next backstop armed while work waits.
   */
  async settle(limits: readonly AttemptLimit[]): Promise<void> {
    for (const limit of limits) await this.handOff(limit, true);
  }

  // ── one key ─────────────────────────────────────────────────────────────────────────────────

  /** Takes a slot for `holder` unless the limit is full or a waiter is ahead of it. */
  private async take(limit: AttemptLimit, holder: HolderId, forceStaleLook: boolean): Promise<boolean> {
    return this.update(limit.slotKey, async (state) => {
      if (state.holders[holder] !== undefined) return { result: true };
      const now = this.ctx.clock.now();
      let outcome = acquireSlot(state, holder, limit.limit, now);
      let looked = false;
      if (!outcome.acquired) {
        const stale = await this.staleHolders(state, now, forceStaleLook);
        looked = stale.looked;
        if (stale.ids.size > 0) outcome = acquireSlot(state, holder, limit.limit, now, stale.ids);
      }
      if (!outcome.acquired)
        return looked ? { result: false, state: { ...state, staleLookAt: now } } : { result: false };
      // Room, but waiters ahead: theirs first, unless this is the first of them (its own look).
      const head = (await this.ctx.store.listWaiters(limit.slotKey, 1))[0];
      if (head === undefined) return { result: true, state: outcome.state };
      if (holderOf(head.message) !== holder) return { result: false };
      return { result: true, state: grantWaiter(outcome.state, head.place), deleteWaiter: head.place };
    });
  }

  /** `holder`'s slot freed (if held), then the free slots handed on. */
  private async release(limit: AttemptLimit, holder: HolderId): Promise<void> {
    await this.update(limit.slotKey, async (state) => {
      const released = releaseSlot(state, holder);
      return released.changed ? { result: undefined, state: released.state } : { result: undefined };
    });
    await this.handOff(limit, false);
  }

  /**
   * Queues the node at `limit` (once: a copy of its message, or the backstop's, finds it queued),
   * records why it waits, and looks at the limit again (a release may have come in between).
   */
  private async wait(
    execution: ExecutionRecord,
    node: GraphNode,
    message: TaskMessage,
    limit: AttemptLimit,
  ): Promise<void> {
    const now = this.ctx.clock.now();
    const current = await this.ctx.store.getNode(execution.executionId, node.id);
    // A copy of an attempt that moved on (a redelivery of an older attempt's message): nothing to
    // queue — a waiter for it would be handed a slot no attempt claims.
    if (current?.status !== "QUEUED" || current.attempt !== message.attempt) return;
    // Queued already (a copy of its message, the backstop's look) while its waiter item is still
    // there; once handed a slot its item is gone, and it queues again.
    const recorded = current.waitingFor;
    const queued =
      recorded?.slotKey === limit.slotKey &&
      recorded.place !== undefined &&
      (await this.ctx.store.getWaiter(limit.slotKey, recorded.place)) !== undefined;
    if (!queued) {
      const placed = await this.update(limit.slotKey, async (state) => {
        const next = placeWaiter(state, limit.group, SLOT_LIMITS.defaultPriority);
        return { result: next.place, state: next.state };
      });
      const { check: _check, hops: _hops, ...plain } = message;
      await this.ctx.store.putWaiter(
        { slotKey: limit.slotKey, place: placed, message: plain, since: now, limit: limit.limit },
        now,
      );
      await this.ctx.store.transitionNode(
        execution.executionId,
        node.id,
        { status: ["QUEUED"], attempt: message.attempt },
        { waitingFor: { reason: "concurrency", key: limit.key, slotKey: limit.slotKey, place: placed } },
      );
    }
    await this.handOff(limit, false);
  }

  /**
   * Hands free slots to the first waiters (made holders in one write, then sent), dropping stale
   * holders when the limit is full (or the look is forced); arms the key's backstop while work
   * still waits on it.
   */
  private async handOff(limit: AttemptLimit, forceStaleLook: boolean): Promise<void> {
    const handed = await this.update(limit.slotKey, async (state) => {
      const now = this.ctx.clock.now();
      let next = state;
      let free = limit.limit - Object.keys(next.holders).length;
      if (free <= 0 || forceStaleLook) {
        const stale = await this.staleHolders(next, now, forceStaleLook);
        if (stale.looked) {
          const holders = Object.fromEntries(
            Object.entries(next.holders).filter(([id]) => !stale.ids.has(id)),
          );
          next = { ...next, holders, staleLookAt: now };
          free = limit.limit - Object.keys(holders).length;
        }
      }
      // The first waiters, in order, while each finds fewer holders than its own limit (a global
      // key's nodes may name different limits); then whether work still waits here.
      const listed = await this.ctx.store.listWaiters(limit.slotKey, Math.max(free, 0) + HAND_OFF_LOOKAHEAD);
      const heads: SlotWaiter[] = [];
      for (const head of listed) {
        if (Object.keys(next.holders).length >= head.limit) break;
        heads.push(head);
        next = {
          ...grantWaiter(next, head.place),
          holders: { ...next.holders, [holderOf(head.message)]: now },
        };
      }
      const waiting = listed[heads.length];
      let arm: TaskMessage | undefined;
      if (waiting !== undefined && !((next.checkAt ?? 0) > now)) {
        arm = waiting.message;
        next = { ...next, checkAt: now + this.horizonMs };
      }
      return next === state ? { result: { heads, arm } } : { result: { heads, arm }, state: next };
    });
    if (handed.arm)
      await sendTasks(this.ctx, [
        { message: { ...handed.arm, check: true }, notBefore: this.ctx.clock.now() + this.horizonMs },
      ]);
    if (handed.heads.length === 0) return;
    await sendTasks(
      this.ctx,
      handed.heads.map((head) => ({ message: head.message })),
    );
    for (const head of handed.heads) await this.ctx.store.deleteWaiter(limit.slotKey, head.place);
  }

  /**
   * The holders that no longer run (their attempt ended or moved on, or handed a slot and never
   * claimed it within the horizon), read from their nodes — at most once per STALE_LOOK_MS a key
   * unless forced.
   */
  private async staleHolders(
    state: SlotsState,
    now: number,
    force: boolean,
  ): Promise<{ looked: boolean; ids: Set<HolderId> }> {
    const ids = new Set<HolderId>();
    if (!force && (state.staleLookAt ?? 0) + STALE_LOOK_MS > now) return { looked: false, ids };
    const entries = Object.entries(state.holders);
    for (const [id, since] of entries) {
      const { executionId, nodeId, attempt } = parseHolderId(id);
      const record = await this.ctx.store.getNode(executionId, nodeId);
      const old = since + this.horizonMs < now;
      if (!record) {
        if (old) ids.add(id);
        continue;
      }
      if (record.attempt > attempt) ids.add(id);
      else if (record.attempt === attempt && isTerminalNode(record.status)) ids.add(id);
      // Running: it holds its slot, its lease passed or not — a stalled worker may come back and
      // renew it; once the sweeper takes the attempt back (a retry, a failure) it moves on above.
      else if (record.attempt === attempt && record.status === "RUNNING") continue;
      else if (old) ids.add(id);
    }
    return { looked: true, ids };
  }

  /**
   * A read-change-write of one key's state at the version read, tried again on a conflict. `change`
   * answers its result and the new state (none: nothing to write), and a waiter to delete once the
   * write is in.
   */
  private async update<T>(
    slotKey: string,
    change: (state: SlotsState) => Promise<{ result: T; state?: SlotsState; deleteWaiter?: string }>,
  ): Promise<T> {
    const outcome = await updateVersioned(this.ctx, slotKey, SLOT_RETRY, async (text) => {
      const changed = await change(decodeSlots(text));
      return {
        result: changed,
        ...(changed.state === undefined ? {} : { state: encodeSlots(changed.state) }),
      };
    });
    if (outcome.state !== undefined && outcome.deleteWaiter !== undefined)
      await this.ctx.store.deleteWaiter(slotKey, outcome.deleteWaiter);
    return outcome.result;
  }
}

/** The holder a waiter's message becomes once granted. */
function holderOf(message: TaskMessage): HolderId {
  return holderId(message.executionId, message.nodeId, message.attempt);
}
