/**
 * A Store decorator that records every accepted write in true write order, with the record as it
 * was just before and just after. It sits below the scheduler's gates, so the read-before and the
 * write are one step (atomic to the world). The invariant checker reads this log beside the final
 * store state and history: it sees what the store *accepted*, whatever the store underneath does.
 *
 * External workers (sim/externals.ts): each node write also names its actor when an external
 * worker's or a callback settler's call made it (the call, and the token it carried); worker
 * registrations (put, delete) are logged in the same order, and the world reads, synchronously,
 * which pools hold offers and which callback attempts wait.
 */
import type { AttemptToken } from "../shared/domain/attempt-token.js";
import { offerKey, type ReadyTask, type WorkerRecord } from "../shared/domain/placement.js";
import type {
  ExecutionRecord,
  ExecutionStatus,
  HistoryEvent,
  NodeRecord,
  ParentLink,
} from "../shared/domain/records.js";
import type { Timer } from "../shared/domain/timers.js";
import type {
  ArrivalRequest,
  ArrivalResult,
  ArrivalShard,
  CreateOutcome,
  DescendantBudget,
  ExecutionGuard,
  ExecutionPatch,
  FanOutCounts,
  KeyedRequest,
  MapItemsReservation,
  NodeCondition,
  NodePatch,
  Outcome,
  ShardArrivalRequest,
  SlotsItem,
  SlotWaiter,
  Store,
  TakeOutcome,
  TakeTask,
  VariablesItem,
} from "../shared/ports.js";

/**
 * A fan-out budget call (domain/fan-out.ts), accepted or refused, with the root's counts just after
 * it: what the checker holds the engine's refusals and the counters to.
 */
export interface FanOutWrite {
  /** The seq of the latest accepted write when it was made. */
  seq: number;
  op: "descendant" | "reserve" | "release";
  root: string;
  /** The child created (descendant), or the reservation's execution. */
  executionId: string;
  /** A descendant's parent node attempt (the one refused, when it was). */
  parent?: ParentLink;
  key?: string;
  units: number;
  limit?: number;
  accepted: boolean;
  after: FanOutCounts;
}

export interface NodeWrite {
  seq: number;
  at: number;
  executionId: string;
  nodeId: string;
  op: "transition" | "arrival";
  before: NodeRecord | undefined;
  after: NodeRecord;
  condition?: NodeCondition;
  patch?: NodePatch;
  /** The history events the write appended (a direct node's claim appends NodeQueued and NodeStarted). */
  events: HistoryEvent[];
  arrival?: { parentIndex: number; outcome: "ok" | "bad" };
  /** The execution's status when this write was accepted. */
  executionStatus: ExecutionStatus | undefined;
  /**
   * The seq of the latest write accepted when this write's call was made (issuedBefore): its
   * events, made as the call is, were made after every write up to it.
   */
  issued: number;
  process: string;
  /** The external worker's (or callback settler's) call that made it, if one did. */
  actor?: Actor;
}

/** Who made a write outside the engine's own functions: an external worker, or a callback's settler. */
export interface Actor {
  /** The worker's id, or "settler". */
  who: string;
  call:
    | "register"
    | "poll"
    | "worker-heartbeat"
    | "deregister"
    | "heartbeat"
    | "complete"
    | "fail"
    | "describe"
    | "callback-complete"
    | "callback-fail"
    | "callback-heartbeat";
  /** The attempt token the call carried (a task's, or a callback's). */
  token?: AttemptToken;
  /** Unique per call: ties the writes to the call's answer (sim/externals.ts records it). */
  callId: number;
}

/** A worker registration as the store accepted it (`record` undefined: deleted). */
export interface WorkerWrite {
  seq: number;
  at: number;
  workerId: string;
  op: "put" | "delete";
  record: WorkerRecord | undefined;
  process: string;
}

export interface ExecutionWrite {
  seq: number;
  at: number;
  executionId: string;
  op: "create" | "transition" | "sink";
  before: ExecutionRecord | undefined;
  after: ExecutionRecord;
  event?: HistoryEvent;
  /** As NodeWrite's. */
  issued: number;
  process: string;
}

export interface ShardWrite {
  seq: number;
  executionId: string;
  childId: string;
  shard: number;
  parentIndex: number;
}

type Delegated = Omit<
  Store,
  | "createExecution"
  | "transitionExecution"
  | "recordSinkDone"
  | "transitionNode"
  | "failNode"
  | "recordArrival"
  | "recordShardArrival"
  | "takeTask"
  | "putWorker"
  | "deleteWorker"
  | "offerTask"
  | "withdrawTask"
>;

export class AuditStore implements Store {
  readonly nodeWrites: NodeWrite[] = [];
  readonly executionWrites: ExecutionWrite[] = [];
  /** Arrivals recorded in the shards of wide `all` fan-ins. */
  readonly shardWrites: ShardWrite[] = [];
  /** Current execution statuses, kept in step with the writes (read synchronously by the world). */
  readonly executionStatus = new Map<string, ExecutionStatus>();
  /** Each child execution's parent execution, as created. */
  readonly parentOf = new Map<string, string>();
  /** Executions still in the sweeper's index (a sweepAt set), kept in step with the writes. */
  readonly sweepPending = new Set<string>();
  /** Worker registrations and deletions, in write order (sharing the node writes' seq). */
  readonly workerWrites: WorkerWrite[] = [];
  /** Fan-out budget calls, in call order (their seq that of the latest write before them). */
  readonly fanOutWrites: FanOutWrite[] = [];
  /** Offers by pool (offerKey), kept in step with the calls: which pools have work to poll. */
  private readonly offered = new Map<string, Set<string>>();
  /** Each execution's workflow, as created. */
  readonly workflowOf = new Map<string, string>();
  /** Callback attempts waiting now, by `<execution>/<node>`: the attempt. */
  readonly waitingCallbacks = new Map<string, number>();
  private seq = 0;
  /** The lastSeq when the call being served was made (issuedBefore). */
  private issuedAt = 0;

  /** The seq of the latest accepted write (0 before any). */
  get lastSeq(): number {
    return this.seq;
  }

  /**
   * Wraps the store calls made above the scheduler's gates (gatePort's `onCall`): notes the lastSeq
   * when a call is made, and hands it to the write it leads to once its gate opens. Nothing else
   * runs between a gate's opening and the write it lets through, so the two cannot be mixed up.
   */
  readonly issuedBefore = (): (() => void) => {
    const issued = this.seq;
    return () => {
      this.issuedAt = issued;
    };
  };
  /** Each item's version before its latest accepted write (undefined: the write created it). */
  private readonly earlier = new Map<string, { record: ExecutionRecord | NodeRecord | undefined }>();

  getWorkflowVersion: Delegated["getWorkflowVersion"];
  getLatestWorkflowVersion: Delegated["getLatestWorkflowVersion"];
  findWorkflowVersionByHash: Delegated["findWorkflowVersionByHash"];
  putWorkflowVersion: Delegated["putWorkflowVersion"];
  listWorkflows: Delegated["listWorkflows"];
  getExecution: Delegated["getExecution"];
  listExecutions: Delegated["listExecutions"];
  getNode: Delegated["getNode"];
  getNodes: Delegated["getNodes"];
  listNodes: Delegated["listNodes"];
  listMapItems: Delegated["listMapItems"];
  listHistory: Delegated["listHistory"];
  listDueExecutions: Delegated["listDueExecutions"];
  getArrivalShards: Delegated["getArrivalShards"];
  pullSweepAt: Delegated["pullSweepAt"];
  acquireLease: Delegated["acquireLease"];
  putTimers: Delegated["putTimers"];
  /** Every timer armed (an accepted put; a repeat of one is idempotent), with when. */
  readonly timersArmed: Array<{ timer: Timer; at: number }> = [];
  listTimers: Delegated["listTimers"];
  getTimers: Delegated["getTimers"];
  getTimerCursor: Delegated["getTimerCursor"];
  advanceTimerCursor: Delegated["advanceTimerCursor"];
  putDeadLetter: Delegated["putDeadLetter"];
  listDeadLetters: Delegated["listDeadLetters"];
  getDeadLetter: Delegated["getDeadLetter"];
  deleteDeadLetter: Delegated["deleteDeadLetter"];
  getWorker: Delegated["getWorker"];
  listWorkers: Delegated["listWorkers"];
  pageWorkers: Delegated["pageWorkers"];
  touchWorker: Delegated["touchWorker"];
  listReadyTasks: Delegated["listReadyTasks"];
  releaseHold: Delegated["releaseHold"];

  constructor(
    private readonly inner: Store,
    private readonly now: () => number,
    private readonly process: () => string,
    private readonly actor: () => Actor | undefined = () => undefined,
  ) {
    this.getWorkflowVersion = inner.getWorkflowVersion.bind(inner);
    this.getLatestWorkflowVersion = inner.getLatestWorkflowVersion.bind(inner);
    this.findWorkflowVersionByHash = inner.findWorkflowVersionByHash.bind(inner);
    this.putWorkflowVersion = inner.putWorkflowVersion.bind(inner);
    this.listWorkflows = inner.listWorkflows.bind(inner);
    this.getExecution = inner.getExecution.bind(inner);
    this.listExecutions = inner.listExecutions.bind(inner);
    this.getNode = inner.getNode.bind(inner);
    this.getNodes = inner.getNodes.bind(inner);
    this.listNodes = inner.listNodes.bind(inner);
    this.listMapItems = inner.listMapItems.bind(inner);
    this.listHistory = inner.listHistory.bind(inner);
    this.listDueExecutions = inner.listDueExecutions.bind(inner);
    this.getArrivalShards = inner.getArrivalShards.bind(inner);
    this.pullSweepAt = inner.pullSweepAt.bind(inner);
    this.acquireLease = inner.acquireLease.bind(inner);
    this.putTimers = async (timers) => {
      await inner.putTimers(timers);
      const at = this.now();
      for (const timer of timers) this.timersArmed.push({ timer: structuredClone(timer), at });
    };
    this.listTimers = inner.listTimers.bind(inner);
    this.getTimers = inner.getTimers.bind(inner);
    this.getTimerCursor = inner.getTimerCursor.bind(inner);
    this.advanceTimerCursor = inner.advanceTimerCursor.bind(inner);
    this.putDeadLetter = inner.putDeadLetter.bind(inner);
    this.listDeadLetters = inner.listDeadLetters.bind(inner);
    this.getDeadLetter = inner.getDeadLetter.bind(inner);
    this.deleteDeadLetter = inner.deleteDeadLetter.bind(inner);
    this.getWorker = inner.getWorker.bind(inner);
    this.listWorkers = inner.listWorkers.bind(inner);
    this.pageWorkers = inner.pageWorkers.bind(inner);
    this.touchWorker = inner.touchWorker.bind(inner);
    this.listReadyTasks = inner.listReadyTasks.bind(inner);
    this.releaseHold = inner.releaseHold.bind(inner);
  }

  async putWorker(
    worker: Parameters<Store["putWorker"]>[0],
    deadBefore: number,
  ): Promise<Outcome<WorkerRecord>> {
    const outcome = await this.inner.putWorker(worker, deadBefore);
    if (outcome.ok) this.logWorker("put", worker.workerId, outcome.record);
    return outcome;
  }

  async deleteWorker(workerId: string, version: number): Promise<boolean> {
    const deleted = await this.inner.deleteWorker(workerId, version);
    if (deleted) this.logWorker("delete", workerId, undefined);
    return deleted;
  }

  async offerTask(task: ReadyTask): Promise<void> {
    await this.inner.offerTask(task);
    const pool = this.offered.get(task.pool) ?? new Set<string>();
    this.offered.set(task.pool, pool);
    pool.add(offerKey(task));
  }

  async withdrawTask(task: ReadyTask): Promise<void> {
    await this.inner.withdrawTask(task);
    this.offered.get(task.pool)?.delete(offerKey(task));
  }

  /** How many offers `pool` holds (as far as the calls through this store tell). */
  offersIn(pool: string): number {
    return this.offered.get(pool)?.size ?? 0;
  }

  async createExecution(
    record: ExecutionRecord,
    event: HistoryEvent,
    keyed?: KeyedRequest,
    budget?: DescendantBudget,
  ): Promise<CreateOutcome> {
    const result = await this.inner.createExecution(record, event, keyed, budget);
    if (result.created) {
      const after = await this.inner.getExecution(record.executionId);
      if (after) this.logExecution("create", record.executionId, undefined, after, event);
    }
    if (budget && record.rootExecutionId && (result.created || "overBudget" in result))
      await this.logFanOut({
        op: "descendant",
        root: record.rootExecutionId,
        executionId: record.executionId,
        ...(record.parent ? { parent: record.parent } : {}),
        units: 1,
        limit: budget.limit,
        accepted: result.created,
      });
    return result;
  }

  private async logFanOut(write: Omit<FanOutWrite, "seq" | "after">): Promise<void> {
    const after = await this.inner.getFanOut(write.root);
    this.fanOutWrites.push({ ...write, seq: this.seq, after });
  }

  async reserveMapItems(
    reservation: MapItemsReservation,
    limit: number,
    now: number,
    fence?: { nodeId: string; leaseToken: string },
  ): Promise<{ ok: true } | { ok: false; inFlight: number; fenced?: true }> {
    const held = (await this.inner.listMapItemReservations(reservation.executionId)).some(
      (r) => r.key === reservation.key,
    );
    const result = await this.inner.reserveMapItems(reservation, limit, now, fence);
    // A repeat (its marker held) changes nothing, nor does a fenced one: not reservations of their own.
    if (!held && (result.ok || !result.fenced))
      await this.logFanOut({
        op: "reserve",
        root: reservation.rootExecutionId,
        executionId: reservation.executionId,
        key: reservation.key,
        units: reservation.units,
        limit,
        accepted: result.ok,
      });
    return result;
  }

  async releaseMapItems(reservation: MapItemsReservation): Promise<boolean> {
    const released = await this.inner.releaseMapItems(reservation);
    if (released)
      await this.logFanOut({
        op: "release",
        root: reservation.rootExecutionId,
        executionId: reservation.executionId,
        key: reservation.key,
        units: reservation.units,
        accepted: true,
      });
    return released;
  }

  listMapItemReservations(executionId: string): Promise<MapItemsReservation[]> {
    return this.inner.listMapItemReservations(executionId);
  }

  getFanOut(rootExecutionId: string): Promise<FanOutCounts> {
    return this.inner.getFanOut(rootExecutionId);
  }

  getSlots(slotKey: string): Promise<SlotsItem | undefined> {
    return this.inner.getSlots(slotKey);
  }

  putSlots(slotKey: string, item: SlotsItem, expectedVersion: number, now: number): Promise<boolean> {
    return this.inner.putSlots(slotKey, item, expectedVersion, now);
  }

  putWaiter(waiter: SlotWaiter, now: number): Promise<void> {
    return this.inner.putWaiter(waiter, now);
  }

  getWaiter(slotKey: string, place: string): Promise<SlotWaiter | undefined> {
    return this.inner.getWaiter(slotKey, place);
  }

  listWaiters(slotKey: string, limit: number): Promise<SlotWaiter[]> {
    return this.inner.listWaiters(slotKey, limit);
  }

  deleteWaiter(slotKey: string, place: string): Promise<boolean> {
    return this.inner.deleteWaiter(slotKey, place);
  }

  getVariables(executionId: string): Promise<VariablesItem | undefined> {
    return this.inner.getVariables(executionId);
  }

  putVariables(
    executionId: string,
    item: VariablesItem,
    expectedVersion: number,
    now: number,
  ): Promise<boolean> {
    return this.inner.putVariables(executionId, item, expectedVersion, now);
  }

  async transitionExecution(
    executionId: string,
    from: readonly ExecutionStatus[],
    patch: ExecutionPatch,
    event?: HistoryEvent,
    guard?: ExecutionGuard,
  ): Promise<Outcome<ExecutionRecord>> {
    const before = await this.inner.getExecution(executionId);
    const result = await this.inner.transitionExecution(executionId, from, patch, event, guard);
    if (result.ok) this.logExecution("transition", executionId, before, result.record, event);
    return result;
  }

  async recordSinkDone(executionId: string, sinkIndex: number): Promise<Outcome<ExecutionRecord>> {
    const before = await this.inner.getExecution(executionId);
    const result = await this.inner.recordSinkDone(executionId, sinkIndex);
    if (result.ok) this.logExecution("sink", executionId, before, result.record);
    return result;
  }

  async transitionNode(
    executionId: string,
    nodeId: string,
    condition: NodeCondition,
    patch: NodePatch,
    event?: HistoryEvent | readonly HistoryEvent[],
  ): Promise<Outcome<NodeRecord>> {
    return this.auditNodeWrite(executionId, nodeId, condition, patch, event, () =>
      this.inner.transitionNode(executionId, nodeId, condition, patch, event),
    );
  }

  async failNode(
    executionId: string,
    nodeId: string,
    condition: NodeCondition,
    patch: NodePatch,
    event?: HistoryEvent | readonly HistoryEvent[],
    options?: { sweepAt?: number },
  ): Promise<Outcome<NodeRecord>> {
    const executionBefore = await this.inner.getExecution(executionId);
    const result = await this.auditNodeWrite(executionId, nodeId, condition, patch, event, () =>
      this.inner.failNode(executionId, nodeId, condition, patch, event, options),
    );
    if (result.ok) {
      // The same write may have set the execution's failedNode mark.
      const executionAfter = await this.inner.getExecution(executionId);
      if (executionAfter && executionAfter.failedNode !== executionBefore?.failedNode) {
        this.logExecution("transition", executionId, executionBefore, executionAfter);
      }
    }
    return result;
  }

  /** A worker's take claims the node: audited as the node write it is. */
  async takeTask(take: TakeTask): Promise<TakeOutcome> {
    let outcome: TakeOutcome | undefined;
    const { executionId, nodeId } = take.task;
    const { condition, patch, event } = take.claim;
    await this.auditNodeWrite(executionId, nodeId, condition, patch, event, async () => {
      outcome = await this.inner.takeTask(take);
      if (outcome.ok) this.offered.get(take.task.pool)?.delete(offerKey(take.task));
      return outcome.ok ? { ok: true, record: outcome.node } : { ok: false, current: outcome.node };
    });
    return outcome!;
  }

  /** Performs a node write and logs it, with the record before and after, when accepted. */
  private async auditNodeWrite(
    executionId: string,
    nodeId: string,
    condition: NodeCondition,
    patch: NodePatch,
    event: HistoryEvent | readonly HistoryEvent[] | undefined,
    write: () => Promise<Outcome<NodeRecord>>,
  ): Promise<Outcome<NodeRecord>> {
    const before = await this.inner.getNode(executionId, nodeId);
    const result = await write();
    if (result.ok) {
      this.logNode({
        executionId,
        nodeId,
        op: "transition",
        before,
        after: result.record,
        condition,
        patch,
        events: eventList(event),
      });
    }
    return result;
  }

  async recordShardArrival(
    request: ShardArrivalRequest,
  ): Promise<{ recorded: number[]; shard: ArrivalShard }> {
    const result = await this.inner.recordShardArrival(request);
    for (const parentIndex of result.recorded) {
      this.shardWrites.push({
        seq: ++this.seq,
        executionId: request.executionId,
        childId: request.childId,
        shard: request.shard,
        parentIndex,
      });
    }
    return result;
  }

  async recordArrival(request: ArrivalRequest): Promise<ArrivalResult> {
    const before = await this.inner.getNode(request.executionId, request.childId);
    const result = await this.inner.recordArrival(request);
    if (result.recorded) {
      this.logNode({
        executionId: request.executionId,
        nodeId: request.childId,
        op: "arrival",
        before,
        after: result.node,
        arrival: { parentIndex: request.parentIndex, outcome: request.outcome },
        events: [],
      });
    }
    return result;
  }

  /** The execution as it was before its latest write (`record` undefined: before it existed), if written. */
  earlierExecution(executionId: string): { record: ExecutionRecord | undefined } | undefined {
    return this.earlier.get(`e/${executionId}`) as { record: ExecutionRecord | undefined } | undefined;
  }

  /** The node record as it was before its latest write (`record` undefined: it had none), if written. */
  earlierNode(executionId: string, nodeId: string): { record: NodeRecord | undefined } | undefined {
    return this.earlier.get(`n/${executionId}/${nodeId}`) as { record: NodeRecord | undefined } | undefined;
  }

  private logNode(write: Omit<NodeWrite, "seq" | "at" | "executionStatus" | "issued" | "process">): void {
    this.earlier.set(`n/${write.executionId}/${write.nodeId}`, { record: structuredClone(write.before) });
    const actor = this.actor();
    this.nodeWrites.push({
      ...structuredClone(write),
      seq: ++this.seq,
      at: this.now(),
      executionStatus: this.executionStatus.get(write.executionId),
      issued: this.issuedAt,
      process: this.process(),
      ...(actor ? { actor: structuredClone(actor) } : {}),
    });
    const key = `${write.executionId}/${write.nodeId}`;
    if (write.after.status === "RUNNING" && write.after.composite?.kind === "callback")
      this.waitingCallbacks.set(key, write.after.attempt);
    else this.waitingCallbacks.delete(key);
  }

  private logWorker(op: WorkerWrite["op"], workerId: string, record: WorkerRecord | undefined): void {
    this.workerWrites.push({
      seq: ++this.seq,
      at: this.now(),
      workerId,
      op,
      record: structuredClone(record),
      process: this.process(),
    });
  }

  private logExecution(
    op: ExecutionWrite["op"],
    executionId: string,
    before: ExecutionRecord | undefined,
    after: ExecutionRecord,
    event?: HistoryEvent,
  ): void {
    this.earlier.set(`e/${executionId}`, { record: structuredClone(before) });
    this.executionStatus.set(executionId, after.status);
    this.workflowOf.set(executionId, after.workflow);
    if (after.parent) this.parentOf.set(executionId, after.parent.executionId);
    if (after.sweepAt === undefined) this.sweepPending.delete(executionId);
    else this.sweepPending.add(executionId);
    this.executionWrites.push({
      seq: ++this.seq,
      at: this.now(),
      executionId,
      op,
      before,
      after: structuredClone(after),
      ...(event ? { event: structuredClone(event) } : {}),
      issued: this.issuedAt,
      process: this.process(),
    });
  }
}

function eventList(event: HistoryEvent | readonly HistoryEvent[] | undefined): HistoryEvent[] {
  return event === undefined ? [] : Array.isArray(event) ? [...event] : [event as HistoryEvent];
}
