/**
 * A Store decorator that records every accepted write in true write order, with the record as it
 * was just before and just after. It sits below the scheduler's gates, so the read-before and the
 * write are one step (atomic to the world). The invariant checker reads this log beside the final
 * store state and history: it sees what the store *accepted*, whatever the store underneath does.
 */
import type { ExecutionRecord, ExecutionStatus, HistoryEvent, NodeRecord } from "../shared/domain/records.js";
import type {
  ArrivalRequest,
  ArrivalResult,
  ArrivalShard,
  CreateOutcome,
  ExecutionGuard,
  ExecutionPatch,
  KeyedRequest,
  NodeCondition,
  NodePatch,
  Outcome,
  ShardArrivalRequest,
  Store,
  TakeOutcome,
  TakeTask,
} from "../shared/ports.js";

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
  private seq = 0;

  /** The seq of the latest accepted write (0 before any). */
  get lastSeq(): number {
    return this.seq;
  }
  /** Each item's version before its latest accepted write (undefined: the write created it). */
  private readonly earlier = new Map<string, { record: ExecutionRecord | NodeRecord | undefined }>();

  getWorkflowVersion: Delegated["getWorkflowVersion"];
  findWorkflowVersionByHash: Delegated["findWorkflowVersionByHash"];
  putWorkflowVersion: Delegated["putWorkflowVersion"];
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
  putDeadLetter: Delegated["putDeadLetter"];
  listDeadLetters: Delegated["listDeadLetters"];
  getDeadLetter: Delegated["getDeadLetter"];
  deleteDeadLetter: Delegated["deleteDeadLetter"];
  putWorker: Delegated["putWorker"];
  getWorker: Delegated["getWorker"];
  listWorkers: Delegated["listWorkers"];
  touchWorker: Delegated["touchWorker"];
  deleteWorker: Delegated["deleteWorker"];
  offerTask: Delegated["offerTask"];
  listReadyTasks: Delegated["listReadyTasks"];
  withdrawTask: Delegated["withdrawTask"];
  releaseHold: Delegated["releaseHold"];

  constructor(
    private readonly inner: Store,
    private readonly now: () => number,
    private readonly process: () => string,
  ) {
    this.getWorkflowVersion = inner.getWorkflowVersion.bind(inner);
    this.findWorkflowVersionByHash = inner.findWorkflowVersionByHash.bind(inner);
    this.putWorkflowVersion = inner.putWorkflowVersion.bind(inner);
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
    this.putDeadLetter = inner.putDeadLetter.bind(inner);
    this.listDeadLetters = inner.listDeadLetters.bind(inner);
    this.getDeadLetter = inner.getDeadLetter.bind(inner);
    this.deleteDeadLetter = inner.deleteDeadLetter.bind(inner);
    this.putWorker = inner.putWorker.bind(inner);
    this.getWorker = inner.getWorker.bind(inner);
    this.listWorkers = inner.listWorkers.bind(inner);
    this.touchWorker = inner.touchWorker.bind(inner);
    this.deleteWorker = inner.deleteWorker.bind(inner);
    this.offerTask = inner.offerTask.bind(inner);
    this.listReadyTasks = inner.listReadyTasks.bind(inner);
    this.withdrawTask = inner.withdrawTask.bind(inner);
    this.releaseHold = inner.releaseHold.bind(inner);
  }

  async createExecution(
    record: ExecutionRecord,
    event: HistoryEvent,
    keyed?: KeyedRequest,
  ): Promise<CreateOutcome> {
    const result = await this.inner.createExecution(record, event, keyed);
    if (result.created) {
      const after = await this.inner.getExecution(record.executionId);
      if (after) this.logExecution("create", record.executionId, undefined, after, event);
    }
    return result;
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
    event?: HistoryEvent,
  ): Promise<Outcome<NodeRecord>> {
    const executionBefore = await this.inner.getExecution(executionId);
    const result = await this.auditNodeWrite(executionId, nodeId, condition, patch, event, () =>
      this.inner.failNode(executionId, nodeId, condition, patch, event),
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
      return outcome.ok
        ? { ok: true, record: outcome.node }
        : { ok: false, current: outcome.node };
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

  private logNode(write: Omit<NodeWrite, "seq" | "at" | "executionStatus" | "process">): void {
    this.earlier.set(`n/${write.executionId}/${write.nodeId}`, { record: structuredClone(write.before) });
    this.nodeWrites.push({
      ...structuredClone(write),
      seq: ++this.seq,
      at: this.now(),
      executionStatus: this.executionStatus.get(write.executionId),
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
      process: this.process(),
    });
  }
}

function eventList(event: HistoryEvent | readonly HistoryEvent[] | undefined): HistoryEvent[] {
  return event === undefined ? [] : Array.isArray(event) ? [...event] : [event as HistoryEvent];
}
