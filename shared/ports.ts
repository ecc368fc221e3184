/**
 * The engine's ports. The engine talks to storage, the task queue, the event bus, time and ids only
 * through these interfaces. Adapters (in-memory, DynamoDB/SQS/EventBridge) implement them with the
 * same semantics, which one contract test suite checks (test/contract).
 */

import type { EvaluationOptions, ExpressionScope } from "./domain/expressions.js";
import type { Payload } from "./domain/payload.js";
import type { Hold, ReadyTask, WorkerRecord, WorkerRegistrationRecord } from "./domain/placement.js";
import type {
  CompositeState,
  DeadLetterRecord,
  ErrorInfo,
  ExecutionRecord,
  ExecutionStatus,
  HistoryEvent,
  Lease,
  NodeRecord,
  NodeStatus,
  WaitingFor,
  WorkflowVersionRecord,
} from "./domain/records.js";
import type { TaskMessage } from "./domain/task-message.js";
import type { Timer, TimerCursor } from "./domain/timers.js";

/**
 * How fresh a read must be. "eventual" may return an earlier version of the item (or none, just
 * after it was created) at half the read units; callers use it only where an earlier version is
 * detected or harmless (engine/reads.ts). Every other read is strongly consistent.
 */
export type Consistency = "strong" | "eventual";

export type Outcome<T> = { ok: true; record: T } | { ok: false; current: T | undefined };

/**
 * Condition for a node write. A missing record counts as PENDING (attempt 0), so a transition
 * allowed from PENDING creates the record.
 */
export interface NodeCondition {
  status: readonly NodeStatus[];
  /** The write must come from the attempt holding this fencing token. */
  leaseToken?: string;
  attempt?: number;
  /** Refuse when the record has a notBefore later than this (a retry or wait not yet due). */
  dueBy?: number;
  /** Only when the lease expired before this instant (recovery of a dead worker). */
  leaseExpiredBy?: number;
  /** Refuse when cancellation was requested (a stopping node must not complete or retry). */
  notCancelRequested?: boolean;
  /**
   * Also require, checked with the node write in one transaction, that the execution is ending:
   * finished, or RUNNING with a node failed for good in its current life (the `failedNode` mark).
   * Every cancellation carries it. A redrive clears the mark of the execution it revives, so a
   * cancellation decided in the earlier life — by a process that stalled across the redrive — is
   * refused instead of cancelling the new life's nodes.
   */
  executionEnding?: boolean;
  /**
   * Also require, checked with the node write in one transaction, that the execution lives: RUNNING
   * with no node failed for good in its current life. A redrive's revivals carry it, so a revival
   * that stalled across that life's failure (and its cleanup) writes nothing back to PENDING.
   */
  executionLive?: boolean;
}

/** Fields a node write sets; `null` removes the field. */
export interface NodePatch {
  status?: NodeStatus;
  attempt?: number;
  lease?: Lease | null;
  notBefore?: number | null;
  /**
   * The dependencies a fan-in decided by reading its parents saw completed, written by the write
   * that queues it (a fan-in that records arrivals has them already).
   */
  okDeps?: readonly number[];
  /** Only `null` (forget failed arrivals): a redrive gives failed dependencies another chance. */
  badDeps?: null;
  output?: Payload;
  error?: ErrorInfo | null;
  queuedAt?: number;
  startedAt?: number | null;
  finishedAt?: number | null;
  cancelRequested?: boolean;
  composite?: CompositeState | null;
  waitingFor?: WaitingFor | null;
}

/** Fields an execution write sets; `null` removes the field. */
export interface ExecutionPatch {
  status?: ExecutionStatus;
  input?: Payload;
  error?: ErrorInfo | null;
  startedAt?: number;
  finishedAt?: number | null;
  cancelRequested?: { reason: string; at: number } | null;
  deadline?: number;
  sweepAt?: number | null;
  sweptAt?: number;
  /** Only `null`: a redrive forgets the failure that barred the execution from succeeding. */
  failedNode?: null;
  reviving?: number | null;
}

export interface ExecutionGuard {
  /**
   * Refuse when a node failed for good (the `failedNode` mark), or while a redrive revives the
   * execution's nodes (`reviving`): such an execution must not succeed.
   */
  noFailedNode?: boolean;
  /**
   * Refuse unless a node failed for good in this life (the mark): a failure applied by a process
   * that stalled across a redrive (which clears the mark) must not fail the new life.
   */
  failedNode?: boolean;
  /**
   * Refuse unless the `reviving` mark is this one: a revival clears only its own, never that of a
   * later redrive (after the execution failed again) that it stalled across.
   */
  reviving?: number;
  /**
   * Refuse when a sweep later than this time was recorded (`sweptAt`): a reconcile that stalled
   * past a later one must not act on what it read before.
   */
  notSweptAfter?: number;
}

export interface ArrivalRequest {
  executionId: string;
  childId: string;
  parentIndex: number;
  /** A "bad" arrival is a cancellation's cause: recorded only while the execution is ending (as NodeCondition.executionEnding). */
  outcome: "ok" | "bad";
  now: number;
}

export interface ArrivalResult {
  /** False when this parent had already arrived, or the child had left PENDING. */
  recorded: boolean;
  /** The child after the write (or as found, when not recorded). */
  node: NodeRecord;
}

/** Completed parents of an `all` fan-in, for one of its arrival shards (dispatch-mode.ts). */
export interface ShardArrivalRequest {
  executionId: string;
  childId: string;
  shard: number;
  /** Several parents at once: a worker invocation gathers concurrent arrivals (arrival-batcher.ts). */
  parentIndexes: readonly number[];
  /** With a retention configured, a shard expires that long after its last write. */
  now: number;
}

/** One arrival shard of an `all` fan-in: the completed parents (node indexes) recorded there. */
export interface ArrivalShard {
  shard: number;
  okDeps: number[];
}

export interface Page<T> {
  items: T[];
  next?: string;
}

/** A workflow as `listWorkflows` lists it. */
export interface WorkflowSummary {
  name: string;
  latestVersion: number;
  /** When its first version was registered (epoch ms). */
  createdAt: number;
  /** The latest version's `description`, when it has one. */
  description?: string;
}

export interface ExecutionQuery {
  workflow?: string;
  status?: ExecutionStatus;
  limit: number;
  next?: string;
}

/**
 * What a create with an idempotency key asked for, kept with the key: enough to tell a later request
 * with the same key whether it is the same request (engine/idempotency.ts).
 */
export interface KeyedRequest {
  /** sha256 (hex) of the input's exact JSON text, as the execution keeps it. */
  inputSha256: string;
  start: boolean;
}

export type CreateOutcome =
  | { created: true }
  /** The key was taken: the execution it names, and what the request that took it asked. */
  | { created: false; existing: ExecutionRecord; keyed: KeyedRequest }
  /** A child over its root's descendants budget (DescendantBudget): nothing written. */
  | { created: false; overBudget: true };

/**
 * The fan-out budget a child's create is counted against (domain/fan-out.ts): its root's count of
 * descendants (`record.rootExecutionId`) goes up by one in the same write that creates the child,
 * only when the count is under `limit` — otherwise nothing is written. A create whose key was taken
 * (a repeat of the same child) counts nothing.
 */
export interface DescendantBudget {
  limit: number;
  /** With a retention configured, the root's budget expires that long after its last write. */
  now: number;
}

/**
 * A map attempt's lanes reserved against its root's map items in flight (domain/fan-out.ts): a
 * marker per reservation, so a repeat counts once and a release gives back exactly what it took.
 */
export interface MapItemsReservation {
  rootExecutionId: string;
  /** The execution the map belongs to (markers live with it). */
  executionId: string;
  /** Unique within the execution: the map attempt (mapReservationKey). */
  key: string;
  units: number;
}

/** A root's fan-out counts, as stored. */
export interface FanOutCounts {
  descendants: number;
  mapItemsInFlight: number;
}

/**
 * One concurrency limit's state for one key value (domain/slots.ts): its holders and its fair
 * queue's clock, as JSON text the store never looks into, and the version every write moves on by one.
 */
export interface SlotsItem {
  version: number;
  state: string;
}

/** Work waiting for a slot (domain/slots.ts): its place in its limit's queue, and what runs it. */
export interface SlotWaiter {
  /** The limit and key value it waits on (engine/slots.ts `slotKey`). */
  slotKey: string;
  /** Its place in the queue: waiters are granted in the order of their places (domain/slots.ts). */
  place: string;
  /** The message that runs it once granted. */
  message: TaskMessage;
  /** When it began to wait (ms). */
  since: number;
  /**
   * Its own limit: it is handed a slot only while fewer hold the key (nodes naming one global key
   * may give it different limits).
   */
  limit: number;
}

/**
 * An execution's variables as stored (domain/vars.ts, engine/vars.ts): the document and the record
 * of the nodes that wrote it, each as JSON text the store never looks into, and the version every
 * write moves on by one.
 */
export interface VariablesItem {
  version: number;
  document: string;
  /** Which node applied which operation, with its result: `{"<nodeId>": {"a": attempt, "r": result}}`. */
  applied: string;
}

export interface Store {
  // ── workflows: versions are immutable ──────────────────────────────────────────────────────────
  getWorkflowVersion(name: string, version?: number): Promise<WorkflowVersionRecord | undefined>;
  /**
   * The number of a name's latest version, read cheaply: a small item, eventually consistent (it may
   * lag a registration by a moment; the version it names exists, written in the same transaction).
   */
  getLatestWorkflowVersion(name: string): Promise<number | undefined>;
  findWorkflowVersionByHash(name: string, definitionHash: string): Promise<number | undefined>;
  /** Creates `record.version`; fails if that version or that hash exists, or a later one does. */
  putWorkflowVersion(record: WorkflowVersionRecord): Promise<"created" | "conflict">;
  /**
   * Every registered workflow, by name in order (`limit` a page; `next` only when more follow): its
   * latest version, when its first version was created, and the latest version's description.
   */
  listWorkflows(page: { limit: number; next?: string }): Promise<Page<WorkflowSummary>>;

  // ── executions ────────────────────────────────────────────────────────────────────────────────
  /**
   * Creates the execution. With `record.idempotencyKey`, the key — unique within `record.workflow`,
   * so the same text under another workflow is another key — is claimed in the same conditional
   * write, keeping `keyed` (what the request asked) with it. Already taken: nothing is written, and
   * the execution it names comes back with the `keyed` kept by the request that took it. The store
   * only keeps and returns it: the engine tells whether the requests are the same (idempotency.ts).
   * A key whose execution is gone (deleted by a retention) is free again.
   */
  createExecution(
    record: ExecutionRecord,
    event: HistoryEvent,
    keyed?: KeyedRequest,
    /** A child's: counted against its root's descendants, refused (`overBudget`) past the limit. */
    budget?: DescendantBudget,
  ): Promise<CreateOutcome>;
  getExecution(executionId: string, consistency?: Consistency): Promise<ExecutionRecord | undefined>;
  transitionExecution(
    executionId: string,
    from: readonly ExecutionStatus[],
    patch: ExecutionPatch,
    event?: HistoryEvent,
    guard?: ExecutionGuard,
  ): Promise<Outcome<ExecutionRecord>>;
  /** Adds a completed sink once (while RUNNING); a repeat or a finished execution is not recorded. */
  recordSinkDone(executionId: string, sinkIndex: number): Promise<Outcome<ExecutionRecord>>;
  listExecutions(query: ExecutionQuery): Promise<Page<ExecutionRecord>>;

  // ── nodes ─────────────────────────────────────────────────────────────────────────────────────
  getNode(executionId: string, nodeId: string): Promise<NodeRecord | undefined>;
  /** Stored records among `nodeIds` (missing ones are PENDING and left out). */
  getNodes(executionId: string, nodeIds: readonly string[], consistency?: Consistency): Promise<NodeRecord[]>;
  /** The nodes of the DAG (and the onFailure handler): never a map's items. */
  listNodes(executionId: string): Promise<NodeRecord[]>;
  /**
   * The items of one attempt of a map node (domain/map.ts), in no particular order. With
   * `statusOnly`, each record holds only its id, status and attempt (a map's progress).
   */
  listMapItems(
    executionId: string,
    mapId: string,
    mapAttempt: number,
    options?: { statusOnly?: boolean },
  ): Promise<NodeRecord[]>;
  /** `events` (one or several) are appended to the node's history in the same write. */
  transitionNode(
    executionId: string,
    nodeId: string,
    condition: NodeCondition,
    patch: NodePatch,
    events?: HistoryEvent | readonly HistoryEvent[],
  ): Promise<Outcome<NodeRecord>>;
  /**
   * A node's failure for good: the node write, atomically with setting its execution's `failedNode`
   * mark (first failure wins) while the execution is RUNNING. When the execution is not RUNNING the
   * node write happens alone. Refused (with the node's current record) when `condition` fails.
   * `sweepAt`, set on the RUNNING execution in the same write: when the sweeper is to look, should
   * the process die before the failure's consequences (the execution's end) are written.
   */
  failNode(
    executionId: string,
    nodeId: string,
    condition: NodeCondition,
    patch: NodePatch,
    event?: HistoryEvent | readonly HistoryEvent[],
    options?: { sweepAt?: number },
  ): Promise<Outcome<NodeRecord>>;
  /** Records a dependency's final outcome at a PENDING child exactly once (see ArrivalRequest). */
  recordArrival(request: ArrivalRequest): Promise<ArrivalResult>;

  /**
   * Adds completed parents to one arrival shard of an `all` fan-in in one write. A set: a parent
   * already there stays once. Returns the parents this write added and the shard after it.
   */
  recordShardArrival(request: ShardArrivalRequest): Promise<{ recorded: number[]; shard: ArrivalShard }>;
  /** The stored shards among `shards` of a child, in shard order (strongly consistent; missing ones are left out). */
  getArrivalShards(executionId: string, childId: string, shards: readonly number[]): Promise<ArrivalShard[]>;

  // ── fan-out budget of a root execution (domain/fan-out.ts) ──────────────────────────────────
  /**
   * Reserves `units` map items in flight against the root while its count stays within `limit`, with
   * a marker under the execution: a reservation already made (its marker exists) is kept and counts
   * once. False (nothing written) when it would pass the limit; `inFlight` the count it saw.
   */
  reserveMapItems(
    reservation: MapItemsReservation,
    limit: number,
    now: number,
    /**
     * Checked in the same write: the map node is RUNNING under this lease token with no cancellation
     * requested, so a map stopped meanwhile (its execution's cleanup may have given everything back
     * already) reserves nothing (`fenced`).
     */
    fence?: { nodeId: string; leaseToken: string },
  ): Promise<{ ok: true } | { ok: false; inFlight: number; fenced?: true }>;
  /** Gives a reservation back once (its marker deleted with it); false when it was not held. */
  releaseMapItems(reservation: MapItemsReservation): Promise<boolean>;
  /** The reservations held under an execution (what its end gives back). */
  listMapItemReservations(executionId: string): Promise<MapItemsReservation[]>;
  /** A root's counts (zeros when it never counted anything). */
  getFanOut(rootExecutionId: string): Promise<FanOutCounts>;

  // ── concurrency slots (domain/slots.ts, engine/slots.ts) ─────────────────────────────────────
  /** A limit's state for one key value (strongly consistent); undefined before the first write. */
  getSlots(slotKey: string): Promise<SlotsItem | undefined>;
  /**
   * Writes the state only while the stored version is `expectedVersion` (0: none stored yet); false,
   * nothing written, when another write came first. `now`: for a retention's expiry.
   */
  putSlots(slotKey: string, item: SlotsItem, expectedVersion: number, now: number): Promise<boolean>;
  /** Queues a waiter; the same place again replaces it (a retried write). */
  putWaiter(waiter: SlotWaiter, now: number): Promise<void>;
  /** A waiter by its place, if it is still queued (strongly consistent). */
  getWaiter(slotKey: string, place: string): Promise<SlotWaiter | undefined>;
  /** The first `limit` waiters of a limit's key value, in the order of their places (strongly consistent). */
  listWaiters(slotKey: string, limit: number): Promise<SlotWaiter[]>;
  /** Takes a waiter out of its queue; true when this call removed it (gone already: false). */
  deleteWaiter(slotKey: string, place: string): Promise<boolean>;

  // ── execution variables (engine/vars.ts) ─────────────────────────────────────────────────────
  /** The execution's variables (strongly consistent); undefined before the first write. */
  getVariables(executionId: string): Promise<VariablesItem | undefined>;
  /**
   * Writes the variables only while the stored version is `expectedVersion` (0: none stored yet);
   * false, nothing written, when another write came first. `now`: for a retention's expiry.
   */
  putVariables(
    executionId: string,
    item: VariablesItem,
    expectedVersion: number,
    now: number,
  ): Promise<boolean>;

  // ── history ───────────────────────────────────────────────────────────────────────────────────
  /**
   * The execution's history, execution events and node events merged in time order; a map's items'
   * events only `withItems`.
   */
  listHistory(executionId: string, options?: { withItems?: boolean }): Promise<HistoryEvent[]>;

  // ── sweeping ──────────────────────────────────────────────────────────────────────────────────
  /**
   * Executions whose sweepAt ≤ now, earliest first, at most `limit`: RUNNING ones, and finished ones
   * whose cleanup (cancelling leftover nodes) is still to be confirmed. A write that finishes an
   * execution removes its sweepAt unless the same write sets one.
   */
  listDueExecutions(now: number, limit: number): Promise<ExecutionRecord[]>;
  /** Moves sweepAt earlier (never later) while the execution is RUNNING; false when nothing changed. */
  pullSweepAt(executionId: string, at: number): Promise<boolean>;
  /**
   * A named lease (e.g. "sweeper") for `owner` until `expiresAt`: granted when free, expired at
   * `now`, or already held by `owner` (then extended). Keeps normally one sweeper working.
   */
  acquireLease(name: string, owner: string, now: number, expiresAt: number): Promise<boolean>;

  // ── timers (domain/timers.ts) ─────────────────────────────────────────────────────────────────
  /** Arms timers in the due index; arming the same timer (same message, same time) again changes nothing. */
  putTimers(timers: readonly Timer[]): Promise<void>;
  /** Those of these timers (message and time) that are armed, as stored; strongly consistent. */
  getTimers(timers: ReadonlyArray<Pick<Timer, "message" | "dueAt">>): Promise<Timer[]>;
  /**
   * One shard's timers due in (from, through], earliest first, strongly consistent; `next` pages on
   * (its cursor as every listing's).
   */
  listTimers(
    shard: number,
    from: number,
    through: number,
    page: { limit: number; next?: string },
  ): Promise<Page<Timer>>;
  /** Where the sweep of timers stands; undefined before the first. */
  getTimerCursor(): Promise<TimerCursor | undefined>;
  /** Moves the cursor forward (never back): false when another sweep had got as far or further. */
  advanceTimerCursor(cursor: TimerCursor): Promise<boolean>;

  // ── dead letters ──────────────────────────────────────────────────────────────────────────────
  /** Records dead-lettered work; recording the same id again changes nothing. */
  putDeadLetter(record: DeadLetterRecord): Promise<void>;
  /** Oldest first. */
  listDeadLetters(page: { limit: number; next?: string }): Promise<Page<DeadLetterRecord>>;
  getDeadLetter(id: string): Promise<DeadLetterRecord | undefined>;
  /** False when it was already gone (another redrive took it). */
  deleteDeadLetter(id: string): Promise<boolean>;

  // ── external workers (domain/placement.ts, engine/external.ts) ────────────────────────────────
  /** Registers a worker, or registers it again under its id (its holds kept): what is stored. */
  /**
   * Registers a worker, or registers it again under its id (its holds kept), where the placement
   * rule allows (placement.ts mayRegister, given `deadBefore`): one conditional write. Refused, the
   * registration as found answers.
   */
  putWorker(worker: WorkerRegistrationRecord, deadBefore: number): Promise<Outcome<WorkerRecord>>;
  getWorker(workerId: string): Promise<WorkerRecord | undefined>;
  /** Every registered worker, by id (a Query per registry shard, no scan). */
  listWorkers(): Promise<WorkerRecord[]>;
  /**
   * A page of the registry by worker id, without the registrations expired at `now`
   * (placement.ts workerExpired): the listing GET /workers answers. Cursors as every listing's.
   */
  pageWorkers(page: { limit: number; next?: string }, now: number): Promise<Page<WorkerRecord>>;
  /** Records a heartbeat at `now`; undefined when no such worker is registered. */
  touchWorker(workerId: string, now: number): Promise<WorkerRecord | undefined>;
  /**
   * Deletes a worker's registration, only while it is at `version` (nothing taken or released since
   * it was read); false when it changed (or is gone already).
   */
  deleteWorker(workerId: string, version: number): Promise<boolean>;
  /** Offers a QUEUED external node to its pool: one offer per node attempt (again: no change). */
  offerTask(task: ReadyTask): Promise<void>;
  /**
   * A pool's offers, at most `limit`. Without `from`: the pool's oldest, oldest first. With `from`
   * (a poll's: any string, a random token spreads the polls): a store may keep a pool's offers in
   * shards and start at the shard `from` picks, going on to the others only while it found fewer
   * than `limit` — the offers of each shard oldest first (an offer is never passed over for a newer
   * one of its shard), every offer found when the pool holds fewer than `limit`.
   */
  listReadyTasks(pool: string, limit: number, from?: string): Promise<ReadyTask[]>;
  /** Takes an offer back (gone already: no change). */
  withdrawTask(task: ReadyTask): Promise<void>;
  /**
   * A worker takes an offered task in one atomic write: the offer is withdrawn (it must still be
   * there), the node claimed (`claim`, conditioned as transitionNode is), and `hold` added to the
   * worker (conditioned on `workerVersion`, the state its limits were checked against). Nothing is
   * written unless all three hold; the refusal names the first that did not.
   */
  takeTask(take: TakeTask): Promise<TakeOutcome>;
  /**
   * Removes a hold from its worker, only while it is the hold of the attempt whose lease token is
   * `leaseToken` (another attempt of the same node taken since keeps its own); gone already, or no
   * such worker: no change.
   */
  releaseHold(workerId: string, key: string, leaseToken: string): Promise<void>;
}

export interface TakeTask {
  task: ReadyTask;
  workerId: string;
  workerVersion: number;
  hold: Hold;
  claim: { condition: NodeCondition; patch: NodePatch; event: HistoryEvent };
}

export type TakeOutcome =
  | { ok: true; node: NodeRecord; worker: WorkerRecord }
  | { ok: false; refused: "offer" | "node" | "worker"; node?: NodeRecord };

/** A task message (its one shape: domain/task-message.ts). */
export type { TaskMessage };

export interface TaskQueue {
  /** Sends tasks (batched as the queue allows). `delaySeconds` is capped at the queue's maximum. */
  send(messages: readonly TaskMessage[], options?: { delaySeconds?: number }): Promise<void>;
}

export interface LifecycleEvent {
  detailType: string;
  detail: Record<string, unknown>;
}

export interface EventPublisher {
  publish(events: readonly LifecycleEvent[]): Promise<void>;
}

export interface Clock {
  now(): number;
  /** Resolves after `ms`, or rejects with an AbortError as soon as `signal` fires. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export interface IdGenerator {
  executionId(): string;
  /** A fresh unguessable token (lease fencing tokens). */
  token(): string;
  /** A uniform number in [0, 1): retry jitter. Seeded in simulations so runs replay. */
  random(): number;
}

/** A request a client may make without credentials of its own until it expires (a presigned URL). */
export interface PresignedRequest {
  url: string;
  method: "PUT" | "GET";
  /** Headers the request must carry as given (they are part of the signature). */
  headers: Record<string, string>;
}

/**
 * Large payloads (payload.ts): text under a key, written once and never changed (keys are content
 * addresses), so a repeated write of a key is harmless. Kept for the execution retention.
 */
export interface BlobStore {
  put(key: string, text: string): Promise<void>;
  /** The text under `key`, or undefined when there is none. */
  get(key: string): Promise<string | undefined>;
  /** The size in bytes of what is under `key`, or undefined when there is none. */
  size(key: string): Promise<number | undefined>;
  /**
   * A request that stores exactly `bytes` bytes under `key`, for a client to make directly;
   * undefined where the store serves no clients (an in-memory one without an HTTP server).
   */
  uploadRequest(key: string, bytes: number, expiresInSeconds: number): Promise<PresignedRequest | undefined>;
  /** A request that reads `key`, for a client to make directly (undefined as for uploads). */
  downloadRequest(key: string, expiresInSeconds: number): Promise<PresignedRequest | undefined>;
}

/**
 * What a metric is broken down by, beside the `service` every adapter adds. Bounded by design: no
 * execution, node or worker id ever goes here (each distinct value is a time series, and in
 * CloudWatch a custom metric that costs money).
 */
export interface MetricDimensions {
  /** A workflow's name: as many values as registered workflows (engine/metrics.ts says where it is used). */
  workflow?: string;
  /** An external worker pool: as many values as pools in use. A metric with a pool is that pool's alone. */
  pool?: string;
}

/**
 * Operational metrics (engine/metrics.ts names them). Recording is synchronous and never fails the
 * caller: an adapter buffers (Powertools' EMF, flushed at the end of each invocation) or keeps
 * counts in memory (the local runtime's Prometheus registry). Never gated or faulted in simulations:
 * it draws no ids, no randomness and reads no clock.
 */
export interface MetricsPort {
  /** Adds `value` (default 1) to a counter. */
  count(name: string, value?: number, dimensions?: MetricDimensions): void;
  /** One sample of a distribution of durations, in milliseconds (percentiles come from these). */
  observe(name: string, valueMs: number, dimensions?: MetricDimensions): void;
  /** The current level of something (ready tasks, healthy workers, an age in "ms"). */
  gauge(name: string, value: number, dimensions?: MetricDimensions, unit?: "count" | "ms"): void;
  /**
   * The pool's last worker went: its series are dropped and its slot under the cap on pools is
   * freed (shared/engine/metric-dimensions.ts). Absent: nothing to drop.
   */
  poolGone?(pool: string): void;
}

/** Everything the engine needs from the outside world. */
/**
 * Evaluates a definition's expressions (domain/expressions.ts) where their bounds hold for the whole
 * process: an expression that runs too long or allocates too much fails its node (ExpressionError)
 * and nothing else. Adapters: adapters/expressions/isolated.ts (a thread that can be stopped: the
 * default wherever weft is wired) and engine/expressions.ts (in the caller's thread: an engine built
 * from bare ports, e.g. the simulation, which must stay deterministic).
 */
export interface ExpressionEvaluator {
  /** resolveExpressions: `value` with each expression replaced by its value. */
  resolve(
    value: unknown,
    scope: ExpressionScope,
    options: EvaluationOptions,
    path?: string,
  ): Promise<unknown>;
  /** evaluateCondition: a node's `when`. */
  condition(expression: string, scope: ExpressionScope, options: EvaluationOptions): Promise<boolean>;
}

export interface EnginePorts {
  store: Store;
  blobs: BlobStore;
  queue: TaskQueue;
  events: EventPublisher;
  clock: Clock;
  ids: IdGenerator;
  /** Operational metrics; none recorded when absent (tests, the simulation, the benchmark). */
  metrics?: MetricsPort;
  /** Where expressions are evaluated; the process's isolated evaluator when absent. */
  expressions?: ExpressionEvaluator;
}

/** A message as a queue consumer receives it (the local runtime's poller uses this, like Lambda's event source). */
export interface ReceivedMessage {
  messageId: string;
  receiptHandle: string;
  body: string;
  /** How many times it has been received, this time included (SQS ApproximateReceiveCount). */
  receiveCount: number;
  sentAt: number;
}

export interface QueueConsumer {
  receive(options: {
    maxMessages: number;
    waitSeconds: number;
    visibilityTimeoutSeconds: number;
  }): Promise<ReceivedMessage[]>;
  delete(receiptHandles: readonly string[]): Promise<void>;
  changeVisibility(receiptHandle: string, seconds: number): Promise<void>;
}
