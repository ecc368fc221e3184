/**
 * The engine's operational metrics: their names, and the helpers the engine calls where a state
 * change is written (after the conditional write succeeded, so each change is counted once).
 * Recording goes through the MetricsPort (shared/ports.ts): the Lambda functions write EMF through
 * Powertools, the local runtime serves Prometheus text. docs/observability.md lists them with the
 * alarms built on them.
 *
 * Dimensions stay bounded: every metric has the adapter's `service`; `workflow` only on the
 * execution counters (one series per workflow name: registered names are few and chosen by people,
 * while node-level series per workflow would multiply the custom metrics for little); `pool` only
 * on the external worker pools' metrics. Never an execution, node or worker id. Both are capped per
 * process (metric-dimensions.ts): later values are folded into `other`, and a pool's series go with
 * its last worker (workerLeft, and measurePools for registrations that vanished otherwise).
 */
import { type ReadyTask, type WorkerRecord, workerHealth } from "../domain/placement.js";
import type { NodeRecord } from "../domain/records.js";
import type { EventPublisher, LifecycleEvent, MetricDimensions, MetricsPort } from "../ports.js";

/** The CloudWatch namespace of the deployed functions' metrics (adapters/metrics-powertools.ts). */
export const METRICS_NAMESPACE = "Weft";
/** The `service` dimension (label) of every weft metric; infra/lib/alarms.ts reads the same. */
export const METRICS_SERVICE = "weft";

export const METRIC = {
  executionsStarted: "ExecutionsStarted",
  executionsSucceeded: "ExecutionsSucceeded",
  executionsFailed: "ExecutionsFailed",
  executionsCancelled: "ExecutionsCancelled",
  nodesCompleted: "NodesCompleted",
  nodesFailed: "NodesFailed",
  nodesRetried: "NodesRetried",
  nodesCancelled: "NodesCancelled",
  deadLetters: "DeadLetters",
  nodeDuration: "NodeDuration",
  nodeWaitTime: "NodeWaitTime",
  sweeps: "SweepsCompleted",
  poolReadyTasks: "WorkerPoolReadyTasks",
  poolOldestTaskAge: "WorkerPoolOldestTaskAge",
  poolHealthyWorkers: "WorkerPoolHealthyWorkers",
  poolsStarved: "WorkerPoolsStarved",
} as const;

export type MetricName = (typeof METRIC)[keyof typeof METRIC];

/** What each metric means (the Prometheus HELP lines; docs/observability.md says more). */
export const METRIC_HELP: Record<MetricName, string> = {
  ExecutionsStarted: "Executions started (created running, or triggered).",
  ExecutionsSucceeded: "Executions that succeeded.",
  ExecutionsFailed: "Executions that failed.",
  ExecutionsCancelled: "Executions cancelled (by request, or as the child of a parent that ended).",
  NodesCompleted: "Nodes (and map items) completed.",
  NodesFailed: "Nodes (and map items) failed for good: no attempt left, or a terminal error.",
  NodesRetried: "Attempts that failed and were scheduled to retry.",
  NodesCancelled: "Nodes cancelled (their execution ended, or they were told to stop).",
  DeadLetters: "Dead letters recorded: terminal failures, and task messages SQS dead-lettered.",
  NodeDuration: "Attempt run time, from its start to its end (completed, failed or retried).",
  NodeWaitTime:
    "Time a node waited to start: from when it was due (queued, or its retry's or wait's time) to its claim.",
  SweepsCompleted: "Sweeps that ran to the end (not skipped for another sweeper's lease).",
  WorkerPoolReadyTasks: "Tasks offered to an external worker pool and not taken yet (counted up to 1,000).",
  WorkerPoolOldestTaskAge: "Age of the oldest task offered to an external worker pool.",
  WorkerPoolHealthyWorkers: "Healthy (heartbeating) workers registered in an external worker pool.",
  WorkerPoolsStarved: "External worker pools with ready tasks and no healthy worker.",
};

/** Records nothing: the engine's default (tests, the simulation, the benchmark). */
export const NO_METRICS: MetricsPort = {
  count() {},
  observe() {},
  gauge() {},
};

/** Offers read per pool when measuring it: the ready-task count is capped there. */
export const POOL_READ_LIMIT = 1000;

interface Recorder {
  metrics: MetricsPort;
}

const EXECUTION_COUNTERS: Record<string, MetricName> = {
  "Execution Started": METRIC.executionsStarted,
  "Execution Succeeded": METRIC.executionsSucceeded,
  "Execution Failed": METRIC.executionsFailed,
  "Execution Cancelled": METRIC.executionsCancelled,
};

/**
 * The lifecycle publisher with the execution counters: every execution status change publishes
 * exactly one lifecycle event (lifecycle.ts, after its conditional write succeeded), which names
 * the status and the workflow, so the counters are kept where those events leave the engine,
 * wherever the change was made (API, worker, sweeper, a child's cancellation). Counted before the
 * publish: the change happened even when the bus refuses the event.
 */
export function countingExecutionEvents(events: EventPublisher, metrics: MetricsPort): EventPublisher {
  return {
    publish(batch: readonly LifecycleEvent[]): Promise<void> {
      for (const event of batch) {
        const name = EXECUTION_COUNTERS[event.detailType];
        const workflow = event.detail.workflow;
        if (name !== undefined)
          metrics.count(name, 1, typeof workflow === "string" ? { workflow } : undefined);
      }
      return events.publish(batch);
    },
  };
}

/** A node's attempt ran from its start to `endedAt`: one sample of its duration. */
function observeDuration(ctx: Recorder, record: Pick<NodeRecord, "startedAt">, endedAt: number): void {
  if (record.startedAt !== undefined)
    ctx.metrics.observe(METRIC.nodeDuration, Math.max(0, endedAt - record.startedAt));
}

/** A node completed (the write succeeded); `timed`: it ran as an attempt (an inline node does not). */
export function nodeCompleted(ctx: Recorder, record: NodeRecord, endedAt: number, timed = true): void {
  ctx.metrics.count(METRIC.nodesCompleted);
  if (timed) observeDuration(ctx, record, endedAt);
}

/** A node failed for good (the write succeeded). One never started (unclaimed) has no duration. */
export function nodeFailed(ctx: Recorder, record: NodeRecord): void {
  ctx.metrics.count(METRIC.nodesFailed);
  if (record.finishedAt !== undefined) observeDuration(ctx, record, record.finishedAt);
}

/** An attempt failed and its retry was scheduled; `attempt` is the record of the attempt that ended. */
export function nodeRetried(ctx: Recorder, attempt: Pick<NodeRecord, "startedAt">, endedAt: number): void {
  ctx.metrics.count(METRIC.nodesRetried);
  observeDuration(ctx, attempt, endedAt);
}

export function nodeCancelled(ctx: Recorder): void {
  ctx.metrics.count(METRIC.nodesCancelled);
}

export function deadLetterRecorded(ctx: Recorder): void {
  ctx.metrics.count(METRIC.deadLetters);
}

/**
 * A node was claimed (RUNNING, just written): how long it waited since it was due — queued, or its
 * retry's or wait's not-before time (a backoff is no wait). An external node's wait is its pool's,
 * kept apart from the task queue's (the pools have their own alarms).
 */
export function nodeStarted(ctx: Recorder, record: NodeRecord, pool?: string): void {
  if (record.startedAt === undefined || record.queuedAt === undefined) return;
  const due = Math.max(record.queuedAt, record.notBefore ?? record.queuedAt);
  const dimensions: MetricDimensions | undefined = pool === undefined ? undefined : { pool };
  ctx.metrics.observe(METRIC.nodeWaitTime, Math.max(0, record.startedAt - due), dimensions);
}

export function sweepCompleted(ctx: Recorder): void {
  ctx.metrics.count(METRIC.sweeps);
}

/**
 * A worker left `pool` (deregistered): when no registered worker of the pool is left, its series
 * are dropped and its slot under the cap freed. Never fails the work it follows.
 */
export async function workerLeft(
  ctx: Recorder & { store: { listWorkers(): Promise<WorkerRecord[]> } },
  pool: string,
): Promise<void> {
  if (ctx.metrics.poolGone === undefined) return;
  try {
    const workers = await ctx.store.listWorkers();
    if (!workers.some((worker) => worker.pool === pool)) ctx.metrics.poolGone(pool);
  } catch {
    // The series stay until the sweeper's next measurePools sees the pool gone.
  }
}

/** The pools measurePools last gauged, per metrics port: those no longer seen are dropped. */
const measuredPools = new WeakMap<MetricsPort, Set<string>>();

/**
 * The external worker pools as the sweeper sees them each minute: per pool of the registered
 * workers, its ready tasks, the age of the oldest, its healthy workers; and across pools the
 * starved ones (ready tasks, no healthy worker) and the oldest age, which the alarms watch (an alarm
 * cannot range over pools it does not know). One listing of the workers, one read of each pool's
 * offers (at most POOL_READ_LIMIT). A pool none of whose workers is registered is not seen.
 */
export async function measurePools(
  ctx: Recorder & {
    store: {
      listWorkers(): Promise<WorkerRecord[]>;
      listReadyTasks(pool: string, limit: number): Promise<ReadyTask[]>;
    };
  },
  now: number,
): Promise<void> {
  const workers = await ctx.store.listWorkers();
  const pools = new Map<string, number>();
  for (const worker of workers) {
    const healthy = workerHealth(worker, now) === "healthy" ? 1 : 0;
    pools.set(worker.pool, (pools.get(worker.pool) ?? 0) + healthy);
  }
  // Pools gauged last time and without a registered worker now (expired, or deregistered elsewhere).
  const before = measuredPools.get(ctx.metrics);
  if (before) for (const pool of before) if (!pools.has(pool)) ctx.metrics.poolGone?.(pool);
  measuredPools.set(ctx.metrics, new Set(pools.keys()));
  let starved = 0;
  let oldestMs = 0;
  for (const [pool, healthy] of pools) {
    const offers = await ctx.store.listReadyTasks(pool, POOL_READ_LIMIT);
    const ageMs = offers.reduce((age, offer) => Math.max(age, now - offer.offeredAt), 0);
    ctx.metrics.gauge(METRIC.poolReadyTasks, offers.length, { pool });
    ctx.metrics.gauge(METRIC.poolOldestTaskAge, ageMs, { pool }, "ms");
    ctx.metrics.gauge(METRIC.poolHealthyWorkers, healthy, { pool });
    if (offers.length > 0 && healthy === 0) starved++;
    oldestMs = Math.max(oldestMs, ageMs);
  }
  if (pools.size === 0) return;
  ctx.metrics.gauge(METRIC.poolsStarved, starved);
  ctx.metrics.gauge(METRIC.poolOldestTaskAge, oldestMs, undefined, "ms");
}
