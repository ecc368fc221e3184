/**
 * In-memory Store with the same conditional semantics as the DynamoDB adapter: every write is one
 * atomic check-and-set, nothing awaits between the check and the set, and records are copied in and
 * out so callers can never mutate stored state. Used by the embedded local runtime and simulations.
 */

import {
  type DeadLetterCursor,
  deadLetterCursorSchema,
  decodeCursor,
  encodeCursor,
  type TimerPageCursor,
  timerPageCursorSchema,
  workerCursorSchema,
} from "../../domain/cursor.js";
import { invalidCursor } from "../../domain/errors.js";
import { cloneExact } from "../../domain/exact-numbers.js";
import { orderHistory } from "../../domain/history.js";
import { parseMapItemId } from "../../domain/map.js";
import {
  holdKey,
  mayRegister,
  offerKey,
  type ReadyTask,
  type WorkerRecord,
  type WorkerRegistrationRecord,
  workerExpired,
} from "../../domain/placement.js";
import {
  type DeadLetterRecord,
  type ExecutionRecord,
  type HistoryEvent,
  type NodeRecord,
  pendingNode,
  type WorkflowVersionRecord,
} from "../../domain/records.js";
import {
  type Timer,
  type TimerCursor,
  timerKeyAfter,
  timerShard,
  timerSortKey,
} from "../../domain/timers.js";
import * as z from "../../domain/zod.js";
import type {
  ArrivalRequest,
  ArrivalResult,
  ArrivalShard,
  CreateOutcome,
  DescendantBudget,
  ExecutionGuard,
  ExecutionPatch,
  ExecutionQuery,
  FanOutCounts,
  KeyedRequest,
  MapItemsReservation,
  NodeCondition,
  NodePatch,
  Outcome,
  Page,
  ShardArrivalRequest,
  SlotsItem,
  SlotWaiter,
  Store,
  TakeOutcome,
  TakeTask,
  VariablesItem,
  WorkflowSummary,
} from "../../ports.js";
import { applyNodePatch, nodeConditionHolds } from "./node-conditions.js";

interface StoredExecution {
  record: ExecutionRecord;
  history: HistoryEvent[];
}

interface StoredNode {
  record: NodeRecord;
  history: HistoryEvent[];
}

// cloneExact: a definition's params may hold exact numbers, which structuredClone would flatten.
const copy = <T>(value: T): T => cloneExact(value);

/** An idempotency key is unique within its workflow. */
const scopedKey = (workflow: string, key: string) => JSON.stringify([workflow, key]);

/** A listing position: the index (1-based) of the next execution in listing order. */
const positionCursorSchema = z.object({ i: z.number().check(z.int(), z.gte(1)) });

/** A workflow listing's position: the name of the last one answered (as DynamoStore's). */
const workflowCursorSchema = z.object({ w: z.string().check(z.minLength(1), z.maxLength(256)) });
const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export class MemoryStore implements Store {
  private readonly workflows = new Map<string, WorkflowVersionRecord[]>();
  private readonly executions = new Map<string, StoredExecution>();
  private readonly executionOrder: string[] = [];
  /** Idempotency keys by scopedKey(workflow, key): the execution and what its request asked. */
  private readonly idempotency = new Map<string, { executionId: string; keyed: KeyedRequest }>();
  private readonly nodes = new Map<string, Map<string, StoredNode>>();
  private readonly leases = new Map<string, { owner: string; expiresAt: number }>();
  /** Timers by shard, by sort key (domain/timers.ts); the sweep's cursor. */
  private readonly timers: Array<Map<string, Timer> | undefined> = [];
  private timerCursor: TimerCursor | undefined;
  /** Arrival shards of wide fan-ins by "execution/child/shard": the recorded parents, sorted. */
  private readonly shards = new Map<string, number[]>();
  private readonly deadLetters = new Map<string, DeadLetterRecord>();
  private readonly workers = new Map<string, WorkerRecord>();
  /** Offers by pool, by offerKey. */
  private readonly offers = new Map<string, Map<string, ReadyTask>>();
  /** Fan-out counts by root execution (domain/fan-out.ts). */
  private readonly fanOut = new Map<string, FanOutCounts>();
  /** Map-item reservations by execution, by key. */
  private readonly reservations = new Map<string, Map<string, MapItemsReservation>>();
  /** Execution variables by execution (engine/vars.ts). */
  private readonly variables = new Map<string, VariablesItem>();
  private readonly slots = new Map<string, SlotsItem>();
  /** By slot key: its waiters by place. */
  private readonly waiters = new Map<string, Map<string, SlotWaiter>>();

  async getWorkflowVersion(name: string, version?: number): Promise<WorkflowVersionRecord | undefined> {
    const versions = this.workflows.get(name) ?? [];
    const found = version === undefined ? versions.at(-1) : versions.find((v) => v.version === version);
    return found && copy(found);
  }

  async getLatestWorkflowVersion(name: string): Promise<number | undefined> {
    return this.workflows.get(name)?.at(-1)?.version;
  }

  async findWorkflowVersionByHash(name: string, definitionHash: string): Promise<number | undefined> {
    return this.workflows.get(name)?.find((v) => v.definitionHash === definitionHash)?.version;
  }

  async putWorkflowVersion(record: WorkflowVersionRecord): Promise<"created" | "conflict"> {
    const versions = this.workflows.get(record.name) ?? [];
    const latest = versions.at(-1)?.version ?? 0;
    if (record.version !== latest + 1) return "conflict";
    if (versions.some((v) => v.definitionHash === record.definitionHash)) return "conflict";
    versions.push(copy(record));
    this.workflows.set(record.name, versions);
    return "created";
  }

  async listWorkflows(page: { limit: number; next?: string }): Promise<Page<WorkflowSummary>> {
    const after = page.next === undefined ? undefined : decodeCursor(page.next, workflowCursorSchema).w;
    // Names are ASCII (definition.ts): code-unit order is DynamoDB's byte order.
    const names = [...this.workflows.keys()].filter((name) => after === undefined || name > after).sort();
    const slice = names.slice(0, Math.max(0, Math.floor(page.limit)));
    const items = slice.map((name): WorkflowSummary => {
      const versions = this.workflows.get(name)!;
      const description = versions.at(-1)!.definition.description;
      return {
        name,
        latestVersion: versions.at(-1)!.version,
        createdAt: versions[0]!.createdAt,
        ...(description === undefined ? {} : { description }),
      };
    });
    const last = slice.at(-1);
    return last !== undefined && names.length > slice.length
      ? { items, next: encodeCursor({ w: last }) }
      : { items };
  }

  async createExecution(
    record: ExecutionRecord,
    event: HistoryEvent,
    keyed?: KeyedRequest,
    budget?: DescendantBudget,
  ): Promise<CreateOutcome> {
    const key =
      record.idempotencyKey === undefined ? undefined : scopedKey(record.workflow, record.idempotencyKey);
    if (key !== undefined) {
      if (keyed === undefined)
        throw new Error("a create with an idempotency key needs what its request asked");
      const held = this.idempotency.get(key);
      const existing = held === undefined ? undefined : this.executions.get(held.executionId);
      if (held && existing)
        return { created: false, existing: copy(existing.record), keyed: copy(held.keyed) };
    }
    if (this.executions.has(record.executionId)) {
      throw new Error(`execution ${record.executionId} already exists`);
    }
    if (budget !== undefined) {
      if (record.rootExecutionId === undefined) throw new Error("a create with a budget needs its root");
      const counts = this.fanOutOf(record.rootExecutionId);
      if (counts.descendants >= budget.limit) return { created: false, overBudget: true };
      counts.descendants += 1;
    }
    if (key !== undefined && keyed !== undefined)
      this.idempotency.set(key, { executionId: record.executionId, keyed: copy(keyed) });
    this.executions.set(record.executionId, { record: copy(record), history: [copy(event)] });
    this.executionOrder.push(record.executionId);
    return { created: true };
  }

  private fanOutOf(root: string): FanOutCounts {
    let counts = this.fanOut.get(root);
    if (!counts) {
      counts = { descendants: 0, mapItemsInFlight: 0 };
      this.fanOut.set(root, counts);
    }
    return counts;
  }

  async reserveMapItems(
    reservation: MapItemsReservation,
    limit: number,
    _now?: number,
    fence?: { nodeId: string; leaseToken: string },
  ): Promise<{ ok: true } | { ok: false; inFlight: number; fenced?: true }> {
    const held = this.reservations.get(reservation.executionId) ?? new Map<string, MapItemsReservation>();
    const counts = this.fanOutOf(reservation.rootExecutionId);
    if (fence) {
      const node = this.nodes.get(reservation.executionId)?.get(fence.nodeId)?.record;
      if (node?.status !== "RUNNING" || node.lease?.token !== fence.leaseToken || node.cancelRequested)
        return { ok: false, inFlight: counts.mapItemsInFlight, fenced: true };
    }
    if (held.has(reservation.key)) return { ok: true };
    if (counts.mapItemsInFlight + reservation.units > limit)
      return { ok: false, inFlight: counts.mapItemsInFlight };
    counts.mapItemsInFlight += reservation.units;
    held.set(reservation.key, copy(reservation));
    this.reservations.set(reservation.executionId, held);
    return { ok: true };
  }

  async releaseMapItems(reservation: MapItemsReservation): Promise<boolean> {
    const held = this.reservations.get(reservation.executionId);
    const mine = held?.get(reservation.key);
    if (!held || !mine || mine.units !== reservation.units) return false;
    held.delete(reservation.key);
    if (held.size === 0) this.reservations.delete(reservation.executionId);
    this.fanOutOf(mine.rootExecutionId).mapItemsInFlight -= mine.units;
    return true;
  }

  async listMapItemReservations(executionId: string): Promise<MapItemsReservation[]> {
    return [...(this.reservations.get(executionId)?.values() ?? [])].map((r) => copy(r));
  }

  async getFanOut(rootExecutionId: string): Promise<FanOutCounts> {
    return { ...(this.fanOut.get(rootExecutionId) ?? { descendants: 0, mapItemsInFlight: 0 }) };
  }

  /** Always the latest version, whatever the consistency asked: a valid eventually consistent read too. */
  async getExecution(executionId: string): Promise<ExecutionRecord | undefined> {
    const stored = this.executions.get(executionId);
    return stored && copy(stored.record);
  }

  async transitionExecution(
    executionId: string,
    from: readonly ExecutionRecord["status"][],
    patch: ExecutionPatch,
    event?: HistoryEvent,
    guard: ExecutionGuard = {},
  ): Promise<Outcome<ExecutionRecord>> {
    const stored = this.executions.get(executionId);
    const marked = stored?.record.failedNode !== undefined;
    const reviving = stored?.record.reviving !== undefined;
    const barred =
      (guard.noFailedNode === true && (marked || reviving)) ||
      (guard.failedNode === true && !marked) ||
      (guard.reviving !== undefined && stored?.record.reviving !== guard.reviving) ||
      (guard.notSweptAfter !== undefined && (stored?.record.sweptAt ?? 0) > guard.notSweptAfter);
    if (!stored || !from.includes(stored.record.status) || barred) {
      return { ok: false, current: stored && copy(stored.record) };
    }
    const next: Record<string, unknown> = { ...stored.record };
    for (const [key, value] of Object.entries(patch)) {
      if (value === null) delete next[key];
      else if (value !== undefined) next[key] = copy(value);
    }
    // A finished execution leaves the sweeper's due index, as in DynamoDB, unless the write keeps a
    // sweepAt (cleanup still to be confirmed).
    if (next.status !== "PENDING" && next.status !== "RUNNING" && patch.sweepAt === undefined)
      delete next.sweepAt;
    stored.record = next as unknown as ExecutionRecord;
    if (event) stored.history.push(copy(event));
    return { ok: true, record: copy(stored.record) };
  }

  async recordSinkDone(executionId: string, sinkIndex: number): Promise<Outcome<ExecutionRecord>> {
    const stored = this.executions.get(executionId);
    if (stored?.record.status !== "RUNNING" || stored.record.sinksDone.includes(sinkIndex)) {
      return { ok: false, current: stored && copy(stored.record) };
    }
    stored.record = {
      ...stored.record,
      sinksDone: [...stored.record.sinksDone, sinkIndex].sort((a, b) => a - b),
    };
    return { ok: true, record: copy(stored.record) };
  }

  async listExecutions(query: ExecutionQuery): Promise<Page<ExecutionRecord>> {
    const start = query.next === undefined ? this.executionOrder.length - 1 : this.decodeCursor(query.next);
    const items: ExecutionRecord[] = [];
    let index = start;
    for (; index >= 0 && items.length < query.limit; index--) {
      const record = this.executions.get(this.executionOrder[index]!)!.record;
      if (query.workflow !== undefined && record.workflow !== query.workflow) continue;
      if (query.status !== undefined && record.status !== query.status) continue;
      items.push(copy(record));
    }
    return index >= 0 ? { items, next: encodeCursor({ i: index + 1 }) } : { items };
  }

  async getNode(executionId: string, nodeId: string): Promise<NodeRecord | undefined> {
    const stored = this.nodes.get(executionId)?.get(nodeId);
    return stored && copy(stored.record);
  }

  async getNodes(executionId: string, nodeIds: readonly string[]): Promise<NodeRecord[]> {
    const nodes = this.nodes.get(executionId);
    if (!nodes) return [];
    return [...new Set(nodeIds)].flatMap((id) => {
      const stored = nodes.get(id);
      return stored ? [copy(stored.record)] : [];
    });
  }

  async listNodes(executionId: string): Promise<NodeRecord[]> {
    return [...(this.nodes.get(executionId)?.values() ?? [])]
      .filter((n) => parseMapItemId(n.record.nodeId) === undefined)
      .map((n) => copy(n.record));
  }

  async listMapItems(
    executionId: string,
    mapId: string,
    mapAttempt: number,
    options: { statusOnly?: boolean } = {},
  ): Promise<NodeRecord[]> {
    return [...(this.nodes.get(executionId)?.values() ?? [])]
      .filter((n) => {
        const ref = parseMapItemId(n.record.nodeId);
        return ref?.mapId === mapId && ref.mapAttempt === mapAttempt;
      })
      .map(({ record }) =>
        options.statusOnly
          ? { ...pendingNode(executionId, record.nodeId), status: record.status, attempt: record.attempt }
          : copy(record),
      );
  }

  async transitionNode(
    executionId: string,
    nodeId: string,
    condition: NodeCondition,
    patch: NodePatch,
    event?: HistoryEvent | readonly HistoryEvent[],
  ): Promise<Outcome<NodeRecord>> {
    return this.transitionNodeNow(executionId, nodeId, condition, patch, event);
  }

  /** The check and the write in one synchronous step, so nothing can interleave. */
  private transitionNodeNow(
    executionId: string,
    nodeId: string,
    condition: NodeCondition,
    patch: NodePatch,
    event?: HistoryEvent | readonly HistoryEvent[],
  ): Outcome<NodeRecord> {
    const stored = this.nodes.get(executionId)?.get(nodeId);
    const current = stored?.record ?? pendingNode(executionId, nodeId);
    const fenced =
      (condition.executionEnding === true && !this.executionEnding(executionId)) ||
      (condition.executionLive === true && !this.executionLive(executionId));
    if (fenced || !nodeConditionHolds(current, condition)) {
      return { ok: false, current: stored && copy(stored.record) };
    }
    const next = applyNodePatch(current, copy(patch));
    this.saveNode(next, stored, event);
    return { ok: true, record: copy(next) };
  }

  /** RUNNING with no node failed for good in this life (NodeCondition.executionLive). */
  private executionLive(executionId: string): boolean {
    const execution = this.executions.get(executionId)?.record;
    return execution?.status === "RUNNING" && execution.failedNode === undefined;
  }

  /** Finished, or RUNNING with a node failed for good in this life (NodeCondition.executionEnding). */
  private executionEnding(executionId: string): boolean {
    const execution = this.executions.get(executionId)?.record;
    if (!execution) return false;
    if (execution.status === "RUNNING") return execution.failedNode !== undefined;
    return execution.status !== "PENDING";
  }

  async failNode(
    executionId: string,
    nodeId: string,
    condition: NodeCondition,
    patch: NodePatch,
    event?: HistoryEvent | readonly HistoryEvent[],
    options: { sweepAt?: number } = {},
  ): Promise<Outcome<NodeRecord>> {
    const result = this.transitionNodeNow(executionId, nodeId, condition, patch, event);
    const execution = this.executions.get(executionId);
    // Same synchronous step as the node write: nothing can interleave in between.
    if (result.ok && execution?.record.status === "RUNNING") {
      execution.record = {
        ...execution.record,
        failedNode: execution.record.failedNode ?? nodeId,
        ...(options.sweepAt !== undefined ? { sweepAt: options.sweepAt } : {}),
      };
    }
    return result;
  }

  async recordArrival(request: ArrivalRequest): Promise<ArrivalResult> {
    const { executionId, childId, parentIndex } = request;
    const stored = this.nodes.get(executionId)?.get(childId);
    const current = stored?.record ?? pendingNode(executionId, childId);
    const seen = current.okDeps.includes(parentIndex) || current.badDeps.includes(parentIndex);
    const fenced = request.outcome === "bad" && !this.executionEnding(executionId);
    if (current.status !== "PENDING" || seen || fenced) return { recorded: false, node: copy(current) };
    const next: NodeRecord =
      request.outcome === "ok"
        ? { ...current, okDeps: [...current.okDeps, parentIndex].sort((a, b) => a - b) }
        : { ...current, badDeps: [...current.badDeps, parentIndex].sort((a, b) => a - b) };
    this.saveNode(next, stored, undefined);
    return { recorded: true, node: copy(next) };
  }

  async recordShardArrival(
    request: ShardArrivalRequest,
  ): Promise<{ recorded: number[]; shard: ArrivalShard }> {
    const key = `${request.executionId}/${request.childId}/${request.shard}`;
    const okDeps = this.shards.get(key) ?? [];
    const recorded = [...new Set(request.parentIndexes)]
      .filter((p) => !okDeps.includes(p))
      .sort((a, b) => a - b);
    const next = [...okDeps, ...recorded].sort((a, b) => a - b);
    this.shards.set(key, next);
    return { recorded, shard: { shard: request.shard, okDeps: [...next] } };
  }

  async getArrivalShards(
    executionId: string,
    childId: string,
    shards: readonly number[],
  ): Promise<ArrivalShard[]> {
    return [...new Set(shards)]
      .sort((a, b) => a - b)
      .flatMap((shard) => {
        const okDeps = this.shards.get(`${executionId}/${childId}/${shard}`);
        return okDeps ? [{ shard, okDeps: [...okDeps] }] : [];
      });
  }

  async getSlots(slotKey: string): Promise<SlotsItem | undefined> {
    const item = this.slots.get(slotKey);
    return item && copy(item);
  }

  async putSlots(slotKey: string, item: SlotsItem, expectedVersion: number): Promise<boolean> {
    // Check and set with no await between them, as DynamoDB's condition.
    if ((this.slots.get(slotKey)?.version ?? 0) !== expectedVersion) return false;
    this.slots.set(slotKey, copy(item));
    return true;
  }

  async putWaiter(waiter: SlotWaiter): Promise<void> {
    let queue = this.waiters.get(waiter.slotKey);
    if (!queue) {
      queue = new Map();
      this.waiters.set(waiter.slotKey, queue);
    }
    queue.set(waiter.place, copy(waiter));
  }

  async getWaiter(slotKey: string, place: string): Promise<SlotWaiter | undefined> {
    const waiter = this.waiters.get(slotKey)?.get(place);
    return waiter && copy(waiter);
  }

  async listWaiters(slotKey: string, limit: number): Promise<SlotWaiter[]> {
    const queue = this.waiters.get(slotKey);
    if (!queue) return [];
    return [...queue.keys()]
      .sort()
      .slice(0, limit)
      .map((place) => copy(queue.get(place)!));
  }

  async deleteWaiter(slotKey: string, place: string): Promise<boolean> {
    const queue = this.waiters.get(slotKey);
    const deleted = queue?.delete(place) ?? false;
    if (queue?.size === 0) this.waiters.delete(slotKey);
    return deleted;
  }

  async getVariables(executionId: string): Promise<VariablesItem | undefined> {
    const item = this.variables.get(executionId);
    return item && copy(item);
  }

  async putVariables(executionId: string, item: VariablesItem, expectedVersion: number): Promise<boolean> {
    // Check and set with no await between them: one write per version, as DynamoDB's condition.
    if ((this.variables.get(executionId)?.version ?? 0) !== expectedVersion) return false;
    this.variables.set(executionId, copy(item));
    return true;
  }

  async listHistory(executionId: string, options: { withItems?: boolean } = {}): Promise<HistoryEvent[]> {
    const executionEvents = this.executions.get(executionId)?.history ?? [];
    const nodeEvents = [...(this.nodes.get(executionId)?.values() ?? [])]
      .filter((n) => options.withItems || parseMapItemId(n.record.nodeId) === undefined)
      .flatMap((n) => n.history);
    // Each item's list is in its written order (domain/history.ts merges them).
    return orderHistory([...executionEvents, ...nodeEvents]).map(copy);
  }

  async listDueExecutions(now: number, limit: number): Promise<ExecutionRecord[]> {
    return [...this.executions.values()]
      .map((e) => e.record)
      .filter((r) => r.status !== "PENDING" && r.sweepAt !== undefined && r.sweepAt <= now)
      .sort((a, b) => a.sweepAt! - b.sweepAt!)
      .slice(0, limit)
      .map(copy);
  }

  async pullSweepAt(executionId: string, at: number): Promise<boolean> {
    const stored = this.executions.get(executionId);
    if (stored?.record.status !== "RUNNING") return false;
    if (stored.record.sweepAt !== undefined && stored.record.sweepAt <= at) return false;
    stored.record = { ...stored.record, sweepAt: at };
    return true;
  }

  async acquireLease(name: string, owner: string, now: number, expiresAt: number): Promise<boolean> {
    const held = this.leases.get(name);
    if (held && held.owner !== owner && held.expiresAt > now) return false;
    this.leases.set(name, { owner, expiresAt });
    return true;
  }

  async putTimers(timers: readonly Timer[]): Promise<void> {
    for (const timer of timers) {
      const shard = timerShard(timer.message.executionId);
      const stored = this.timers[shard] ?? new Map<string, Timer>();
      this.timers[shard] = stored;
      const key = timerSortKey(timer);
      if (!stored.has(key)) stored.set(key, copy(timer));
    }
  }

  async getTimers(timers: ReadonlyArray<Pick<Timer, "message" | "dueAt">>): Promise<Timer[]> {
    return timers.flatMap((timer) => {
      const stored = this.timers[timerShard(timer.message.executionId)]?.get(timerSortKey(timer));
      return stored ? [copy(stored)] : [];
    });
  }

  async listTimers(
    shard: number,
    from: number,
    through: number,
    page: { limit: number; next?: string },
  ): Promise<Page<Timer>> {
    const after =
      page.next === undefined ? timerKeyAfter(from) : decodeCursor(page.next, timerPageCursorSchema).t;
    const last = timerKeyAfter(through);
    const keys = [...(this.timers[shard]?.keys() ?? [])].filter((k) => k > after && k <= last).sort();
    const slice = keys.slice(0, page.limit);
    const items = slice.map((k) => copy(this.timers[shard]!.get(k)!));
    const end = slice.at(-1);
    return end !== undefined && keys.length > slice.length
      ? { items, next: encodeCursor({ t: end } satisfies TimerPageCursor) }
      : { items };
  }

  async getTimerCursor(): Promise<TimerCursor | undefined> {
    return this.timerCursor && { ...this.timerCursor };
  }

  async advanceTimerCursor(cursor: TimerCursor): Promise<boolean> {
    if (this.timerCursor && this.timerCursor.through >= cursor.through) return false;
    this.timerCursor = { ...cursor };
    return true;
  }

  /** The position a listing cursor names; InvalidCursor for one this store never returned (as DynamoStore). */
  private decodeCursor(next: string): number {
    const { i } = decodeCursor(next, positionCursorSchema);
    if (i > this.executionOrder.length) throw invalidCursor();
    return i - 1;
  }

  async putDeadLetter(record: DeadLetterRecord): Promise<void> {
    if (!this.deadLetters.has(record.id)) this.deadLetters.set(record.id, copy(record));
  }

  async listDeadLetters(page: { limit: number; next?: string }): Promise<Page<DeadLetterRecord>> {
    const ids = [...this.deadLetters.keys()].sort();
    const after = page.next === undefined ? undefined : decodeCursor(page.next, deadLetterCursorSchema).d;
    const start = after === undefined ? 0 : ids.findIndex((id) => id > after);
    const slice = start < 0 ? [] : ids.slice(start, start + page.limit);
    const items = slice.map((id) => copy(this.deadLetters.get(id)!));
    const last = slice.at(-1);
    return last !== undefined && ids.at(-1) !== last
      ? { items, next: encodeCursor({ d: last } satisfies DeadLetterCursor) }
      : { items };
  }

  async getDeadLetter(id: string): Promise<DeadLetterRecord | undefined> {
    const record = this.deadLetters.get(id);
    return record && copy(record);
  }

  async deleteDeadLetter(id: string): Promise<boolean> {
    return this.deadLetters.delete(id);
  }

  // ── external workers ──────────────────────────────────────────────────────────────────────────

  async putWorker(worker: WorkerRegistrationRecord, deadBefore: number): Promise<Outcome<WorkerRecord>> {
    const existing = this.workers.get(worker.workerId);
    if (!mayRegister(existing, worker.placement ?? "", deadBefore))
      return { ok: false, current: existing && copy(existing) };
    const next: WorkerRecord = {
      ...copy(worker),
      // Registered again: what it held is still counted until released.
      holds: existing?.holds ?? {},
      version: (existing?.version ?? 0) + 1,
    };
    this.workers.set(worker.workerId, next);
    return { ok: true, record: copy(next) };
  }

  async getWorker(workerId: string): Promise<WorkerRecord | undefined> {
    const worker = this.workers.get(workerId);
    return worker && copy(worker);
  }

  async listWorkers(): Promise<WorkerRecord[]> {
    return [...this.workers.values()].sort((a, b) => a.workerId.localeCompare(b.workerId)).map(copy);
  }

  async pageWorkers(page: { limit: number; next?: string }, now: number): Promise<Page<WorkerRecord>> {
    const after = page.next === undefined ? undefined : decodeCursor(page.next, workerCursorSchema).k;
    // Expired registrations are gone (DynamoDB's TTL deletes them there): here, when listed.
    for (const [id, worker] of this.workers) if (workerExpired(worker, now)) this.workers.delete(id);
    // Ids are ASCII (placement.ts): code-unit order is DynamoDB's byte order.
    const ids = [...this.workers.keys()].filter((id) => after === undefined || id > after).sort(byCodeUnits);
    const slice = ids.slice(0, Math.max(0, Math.floor(page.limit)));
    const items = slice.map((id) => copy(this.workers.get(id)!));
    const last = slice.at(-1);
    return last !== undefined && ids.length > slice.length
      ? { items, next: encodeCursor({ k: last }) }
      : { items };
  }

  async touchWorker(workerId: string, now: number): Promise<WorkerRecord | undefined> {
    const worker = this.workers.get(workerId);
    if (!worker) return undefined;
    worker.heartbeatAt = Math.max(worker.heartbeatAt, now);
    return copy(worker);
  }

  async deleteWorker(workerId: string, version: number): Promise<boolean> {
    if (this.workers.get(workerId)?.version !== version) return false;
    return this.workers.delete(workerId);
  }

  async offerTask(task: ReadyTask): Promise<void> {
    const pool = this.offers.get(task.pool) ?? new Map<string, ReadyTask>();
    this.offers.set(task.pool, pool);
    const key = offerKey(task);
    if (!pool.has(key)) pool.set(key, copy(task));
  }

  /**
   * One list per pool, as one shard: the pool's oldest whatever `from` (a poll's start), which is
   * what the port asks of a sharded store with a single shard.
   */
  async listReadyTasks(pool: string, limit: number, _from?: string): Promise<ReadyTask[]> {
    return [...(this.offers.get(pool)?.values() ?? [])]
      .sort((a, b) => a.offeredAt - b.offeredAt || offerKey(a).localeCompare(offerKey(b)))
      .slice(0, limit)
      .map(copy);
  }

  async withdrawTask(task: ReadyTask): Promise<void> {
    this.offers.get(task.pool)?.delete(offerKey(task));
  }

  async takeTask(take: TakeTask): Promise<TakeOutcome> {
    // Every check before any write, in one synchronous step: nothing can interleave.
    const pool = this.offers.get(take.task.pool);
    const key = offerKey(take.task);
    if (!pool?.has(key)) return { ok: false, refused: "offer" };
    const worker = this.workers.get(take.workerId);
    if (!worker || worker.version !== take.workerVersion) return { ok: false, refused: "worker" };
    const { condition, patch, event } = take.claim;
    const { executionId, nodeId } = take.task;
    const current = this.nodes.get(executionId)?.get(nodeId)?.record ?? pendingNode(executionId, nodeId);
    if (!nodeConditionHolds(current, condition)) return { ok: false, refused: "node", node: copy(current) };
    const claimed = this.transitionNodeNow(executionId, nodeId, condition, patch, event);
    if (!claimed.ok)
      return { ok: false, refused: "node", ...(claimed.current ? { node: claimed.current } : {}) };
    pool.delete(key);
    worker.holds[holdKey(executionId, nodeId)] = copy(take.hold);
    worker.version++;
    return { ok: true, node: claimed.record, worker: copy(worker) };
  }

  async releaseHold(workerId: string, key: string, leaseToken: string): Promise<void> {
    const worker = this.workers.get(workerId);
    if (worker?.holds[key]?.leaseToken !== leaseToken) return;
    delete worker.holds[key];
    worker.version++;
  }

  private saveNode(
    next: NodeRecord,
    stored: StoredNode | undefined,
    event: HistoryEvent | readonly HistoryEvent[] | undefined,
  ): void {
    const events = event === undefined ? [] : Array.isArray(event) ? [...event] : [event];
    if (stored) {
      stored.record = next;
      stored.history.push(...copy(events));
      return;
    }
    let nodes = this.nodes.get(next.executionId);
    if (!nodes) {
      nodes = new Map();
      this.nodes.set(next.executionId, nodes);
    }
    nodes.set(next.nodeId, { record: next, history: copy(events) });
  }
}
