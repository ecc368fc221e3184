/** The engine facade: what the functions (api, worker, sweeper, dlq) call. */
import { FAN_OUT_LIMITS, type FanOutLimits } from "../domain/fan-out.js";
import type { WorkerRegistration } from "../domain/placement.js";
import type { DeadLetterRecord, ExecutionStatus, WorkflowVersionRecord } from "../domain/records.js";
import type { EnginePorts, Page, TaskMessage } from "../ports.js";
import type { TaskRegistry } from "../tasks/task-type.js";
import { ArrivalBatcher } from "./arrival-batcher.js";
import { cancelExecution } from "./cancellation.js";
import {
  DEFAULT_CLAIM_AFTER_SECONDS,
  DEFAULT_MAX_CONTINUATIONS,
  DEFAULT_SWEEP,
  type EngineContext,
  type EngineLogger,
  GraphCache,
  type SweepSettings,
  silentLogger,
} from "./context.js";
import { DeadLetters, type RedriveResult } from "./dead-letters.js";
import { DEFAULT_FAN_IN, type FanInSettings } from "./dispatch-mode.js";
import { Executions } from "./executions.js";
import { IN_THREAD_EXPRESSIONS } from "./expressions.js";
import type {
  ExternalTask,
  RegisteredWorker,
  TaskCancellation,
  TaskErrorReport,
  WorkerView,
} from "./external.js";
import { historyStampsOf } from "./history-stamps.js";
import { countingExecutionEvents, NO_METRICS } from "./metrics.js";
import type { ViewOptions } from "./payload-views.js";
import { DEFAULT_PAYLOAD_SETTINGS, type PayloadSettings, Payloads } from "./payloads.js";
import { Propagation } from "./propagation.js";
import { type ExecutionListItem, type HistoryPage, listExecutions, listHistory } from "./queries.js";
import { SendBatcher } from "./send-batcher.js";
import { Sweeper, type SweepReport } from "./sweeper.js";
import type {
  CreateExecutionRequest,
  ExecutionSummary,
  ExecutionView,
  RegisterResult,
  UploadTicket,
} from "./views.js";
import { type Delivery, TaskRunner } from "./worker.js";
import {
  checkWorkerTimeout,
  DEFAULT_WORKER_TIMEOUT_SECONDS,
  defaultNodeTimeoutSeconds,
  RecentRunTimes,
} from "./worker-time.js";
import { WorkflowVersions } from "./workflow-cache.js";
import { getWorkflow, registerWorkflow } from "./workflows.js";

export interface EngineOptions {
  /** How long a claimed node's lease lasts before another worker may take over (default 60 s). */
  leaseSeconds?: number;
  /**
   * How long the first attempt of a node dispatched by its message (direct and join nodes) runs
   * before its claim is written (default 5 s; attempt-fence.ts): one that ends sooner writes its
   * claim with its ending, one write fewer. 0 claims every attempt before it runs.
   */
  claimAfterSeconds?: number;
  /** Sweeper timing (defaults suit production; tests shorten them). */
  sweep?: Partial<SweepSettings>;
  /**
   * How many ready children a worker runs in the same invocation, one after another, before it
   * sends the next (default 16; 0 sends every one). Only when the delivery gives a deadline.
   */
  maxContinuations?: number;
  /**
   * Fan-in widths (dispatch-mode.ts): up to `readMaxParents` parents (default 4) a fan-in is
   * decided by reading them; wider `all` fan-ins record arrivals in shards of `shardSize` parents
   * (default 100). Simulations vary these so that small DAGs exercise every way.
   */
  fanIn?: Partial<FanInSettings>;
  /** Payload limits and the size above which values go to the blob store (domain/payload.ts). */
  payloads?: Partial<PayloadSettings>;
  /**
   * Attempts of a node whose definition and `defaults.retry` name none (WEFT_DEFAULT_MAX_ATTEMPTS;
   * default 3, DEFAULT_RETRY in domain/graph.ts).
   */
  defaultMaxAttempts?: number;
  /**
   * The worker function's timeout in seconds (WEFT_WORKER_TIMEOUT_SECONDS; default 300, the deployed
   * worker's, DEFAULT_WORKER_TIMEOUT_SECONDS). The rule (worker-time.ts): the worker keeps 5 s of it
   * for its last writes, so registration refuses a `timeoutSeconds` above `workerTimeoutSeconds - 5`,
   * a node without one gets `min(300, workerTimeoutSeconds - 5)`, and an attempt cut short by its
   * invocation's end fails with a retryable `WorkerTimeout` naming this limit. Whole seconds, 6–900.
   */
  workerTimeoutSeconds?: number;
  /**
   * The fan-out budget of each root execution's tree (domain/fan-out.ts; default FAN_OUT_LIMITS:
   * 100,000 descendants, 10,000 map items in flight). Tests and simulations set small ones.
   */
  fanOut?: Partial<FanOutLimits>;
  /**
   * How long a workflow name's latest version is trusted by this process's starts
   * (WEFT_WORKFLOW_HEAD_CACHE_MS; default 1000; workflow-cache.ts). Versions themselves are kept.
   */
  workflowHeadCacheMs?: number;
  logger?: EngineLogger;
}

/** A worker invocation's scope (Engine.invocation). */
export interface Invocation {
  handleTask(message: TaskMessage, delivery?: Omit<Delivery, "arrivals">): Promise<void>;
}

export class Engine {
  private readonly ctx: EngineContext;
  private readonly propagation: Propagation;
  private readonly executions: Executions;
  private readonly runner: TaskRunner;
  private readonly deadLetters: DeadLetters;
  private readonly sweeper: Sweeper;

  constructor(
    readonly ports: EnginePorts,
    readonly tasks: TaskRegistry,
    readonly options: EngineOptions = {},
  ) {
    const workerTimeoutSeconds = checkWorkerTimeout(
      options.workerTimeoutSeconds ?? DEFAULT_WORKER_TIMEOUT_SECONDS,
    );
    const workflows = new WorkflowVersions(ports, {
      ...(options.workflowHeadCacheMs === undefined ? {} : { headTtlMs: options.workflowHeadCacheMs }),
    });
    this.ctx = {
      ...ports,
      // With a metrics port, the execution counters are kept where lifecycle events leave (metrics.ts).
      ...(ports.metrics ? { events: countingExecutionEvents(ports.events, ports.metrics) } : {}),
      metrics: ports.metrics ?? NO_METRICS,
      expressions: ports.expressions ?? IN_THREAD_EXPRESSIONS,
      tasks,
      workflows,
      graphs: new GraphCache(workflows, {
        ...(options.defaultMaxAttempts === undefined
          ? {}
          : { defaultMaxAttempts: options.defaultMaxAttempts }),
        defaultTimeoutSeconds: defaultNodeTimeoutSeconds(workerTimeoutSeconds),
      }),
      leaseMs: (options.leaseSeconds ?? 60) * 1000,
      claimAfterMs: (options.claimAfterSeconds ?? DEFAULT_CLAIM_AFTER_SECONDS) * 1000,
      sweep: { ...DEFAULT_SWEEP, ...options.sweep },
      maxContinuations: options.maxContinuations ?? DEFAULT_MAX_CONTINUATIONS,
      workerTimeoutSeconds,
      runTimes: new RecentRunTimes(),
      fanIn: { ...DEFAULT_FAN_IN, ...options.fanIn },
      payloads: new Payloads(ports.blobs, { ...DEFAULT_PAYLOAD_SETTINGS, ...options.payloads }),
      stamps: historyStampsOf(ports.clock),
      fanOut: { ...FAN_OUT_LIMITS, ...options.fanOut },
      logger: options.logger ?? silentLogger,
    };
    this.propagation = new Propagation(this.ctx);
    this.executions = new Executions(this.ctx, this.propagation);
    this.deadLetters = new DeadLetters(this.ctx, this.propagation);
    this.runner = new TaskRunner(this.ctx, this.propagation, this.deadLetters);
    this.sweeper = new Sweeper(this.ctx, this.propagation, this.runner, this.deadLetters);
    this.propagation.recoverHandler = (...args) => this.runner.recoverExpiredLease(...args);
  }

  // ── external workers and callbacks (engine/external.ts, engine/callbacks.ts) ──────────────────

  registerWorker(registration: WorkerRegistration): Promise<RegisteredWorker> {
    return this.runner.external.register(registration);
  }

  workerHeartbeat(workerId: string): Promise<{ cancellations: TaskCancellation[] }> {
    return this.runner.external.heartbeat(workerId);
  }

  deregisterWorker(workerId: string): Promise<{ released: number }> {
    return this.runner.external.deregister(workerId);
  }

  /** A page of GET /workers (`limit` within PLACEMENT_LIMITS.maxWorkersPerPage). */
  listWorkers(page: { limit: number; next?: string }): Promise<{ workers: WorkerView[]; next?: string }> {
    return this.runner.external.list(page);
  }

  pollTask(
    workerId: string,
    options?: { waitSeconds?: number; signal?: AbortSignal },
  ): Promise<ExternalTask | undefined> {
    return this.runner.external.poll(workerId, options);
  }

  heartbeatTask(taskToken: string): Promise<{ cancelRequested: boolean }> {
    return this.runner.external.heartbeatTask(taskToken);
  }

  completeTask(taskToken: string, output: unknown): Promise<void> {
    return this.runner.external.completeTask(taskToken, output);
  }

  failTask(taskToken: string, error: TaskErrorReport): Promise<void> {
    return this.runner.external.failTask(taskToken, error);
  }

  completeCallback(token: string, output: unknown): Promise<void> {
    return this.runner.callbacks.complete(token, output);
  }

  failCallback(token: string, error: TaskErrorReport): Promise<void> {
    return this.runner.callbacks.fail(token, error);
  }

  heartbeatCallback(token: string): Promise<void> {
    return this.runner.callbacks.heartbeat(token);
  }

  /** Validates and stores a definition. Same content → same version; new content → next version. */
  registerWorkflow(raw: unknown): Promise<RegisterResult> {
    return registerWorkflow(this.ctx, raw);
  }

  /** Throws WeftError 404 when unknown. */
  getWorkflow(name: string, version?: number): Promise<WorkflowVersionRecord> {
    // GET /workflows/{name} shows the latest as stored now, not as this process last saw it.
    return getWorkflow(this.ctx, name, version, { fresh: true });
  }

  /** Creates an execution, RUNNING with its entry nodes dispatched, or PENDING when `start` is false. */
  createExecution(request: CreateExecutionRequest): Promise<ExecutionSummary> {
    return this.executions.create(request);
  }

  /** PENDING → RUNNING and dispatch of the entry nodes; WeftError 409 when not PENDING. */
  triggerExecution(
    executionId: string,
    given: { input?: unknown; inputRef?: string } = {},
  ): Promise<ExecutionSummary> {
    return this.executions.trigger(executionId, given);
  }

  /**
   * The execution and its nodes. Values kept in the blob store are inlined only with `resolve`
   * (while under `maxBytes`), else given as references with a download URL. Default: all inlined.
   */
  describeExecution(
    executionId: string,
    view: ViewOptions = { resolve: true, maxBytes: Number.POSITIVE_INFINITY },
  ): Promise<ExecutionView> {
    return this.executions.describe(executionId, view);
  }

  /** A presigned upload for an input too large for a request; then `inputRef` on create or trigger. */
  createUpload(bytes: number): Promise<UploadTicket> {
    return this.executions.createUpload(bytes);
  }

  /** Ends a PENDING or RUNNING execution as CANCELLED; running nodes stop at their next heartbeat. */
  cancelExecution(executionId: string, reason?: string): Promise<ExecutionSummary> {
    return cancelExecution(this.ctx, this.propagation, executionId, reason);
  }

  /** The execution's history in causal order (domain/history.ts), `limit` events a page. */
  listEvents(executionId: string, page: { after?: string; limit: number }): Promise<HistoryPage> {
    return listHistory(this.ctx, executionId, page);
  }

  /** Executions newest first, optionally of one workflow and/or in one status. */
  listExecutions(query: {
    workflow?: string;
    status?: ExecutionStatus;
    limit: number;
    next?: string;
  }): Promise<{ executions: ExecutionListItem[]; next?: string }> {
    return listExecutions(this.ctx, query);
  }

  /**
   * Processes one task message (a worker invocation for one SQS record). Resolves when the message
   * may be deleted; rejects when it must come back (the worker reports it as a batch item failure).
   */
  /** One sweep (the sweeper function, every minute). */
  sweep(options?: { force?: boolean }): Promise<SweepReport> {
    return this.sweeper.sweep(options);
  }

  /** A task message SQS dead-lettered (the DLQ function): fails its node and keeps it for redrive. */
  recordDeadLetter(
    message: TaskMessage,
    delivery: { messageId: string; receiveCount: number },
  ): Promise<void> {
    return this.deadLetters.recordPoison(message, delivery);
  }

  /** Dead-lettered work, oldest first. */
  listDeadLetters(page: { limit: number; next?: string }): Promise<Page<DeadLetterRecord>> {
    return this.deadLetters.list(page);
  }

  /** Sends dead-lettered work back as new attempts (all of it, or the given ids) and revives executions. */
  redrive(ids?: readonly string[]): Promise<RedriveResult> {
    return this.deadLetters.redrive(ids);
  }

  async handleTask(message: TaskMessage, delivery: Delivery = {}): Promise<void> {
    await this.runner.handle(message, delivery);
  }

  /**
   * The scope of one worker invocation (one SQS batch): its messages, handled at once through it,
   * share their shard-arrival writes (arrival-batcher.ts) and their task sends (send-batcher.ts).
   * Never shared between invocations.
   */
  invocation(): Invocation {
    const ctx: EngineContext = { ...this.ctx, queue: new SendBatcher(this.ctx.queue) };
    const propagation = new Propagation(ctx);
    const runner = new TaskRunner(ctx, propagation, new DeadLetters(ctx, propagation));
    propagation.recoverHandler = (...args) => runner.recoverExpiredLease(...args);
    const arrivals = new ArrivalBatcher(ctx.store);
    return { handleTask: (message, delivery = {}) => runner.handle(message, { ...delivery, arrivals }) };
  }
}
