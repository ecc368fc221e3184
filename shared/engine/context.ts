/** What every engine module shares: the ports, the task types, settings, and the graph cache. */

import { notFound } from "../domain/errors.js";
import type { FanOutLimits } from "../domain/fan-out.js";
import { type CompileOptions, compileGraph, type WorkflowGraph } from "../domain/graph.js";
import type { EnginePorts, ExpressionEvaluator, MetricsPort } from "../ports.js";
import type { TaskRegistry } from "../tasks/task-type.js";
import type { FanInSettings } from "./dispatch-mode.js";
import type { HistoryStamps } from "./history-stamps.js";
import type { Payloads } from "./payloads.js";
import type { RecentRunTimes } from "./worker-time.js";
import type { WorkflowVersions } from "./workflow-cache.js";

export interface EngineLogger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export const silentLogger: EngineLogger = { info() {}, warn() {}, error() {} };

/** When the sweeper looks at a RUNNING execution, and how long it lets in-flight work settle. */
export interface SweepSettings {
  /** First look after the start, if the execution has not finished by then. */
  firstCheckMs: number;
  /** Next look when nothing in the execution is due sooner. */
  idleMs: number;
  /** Work left QUEUED (or a completion not yet propagated) this long is presumed lost and re-driven. */
  graceMs: number;
}

/** EngineOptions.maxContinuations when unset (worker.ts). */
export const DEFAULT_MAX_CONTINUATIONS = 16;

/** EngineOptions.claimAfterSeconds when unset (attempt-fence.ts). */
export const DEFAULT_CLAIM_AFTER_SECONDS = 5;

export const DEFAULT_SWEEP: SweepSettings = { firstCheckMs: 120_000, idleMs: 300_000, graceMs: 120_000 };

export interface EngineContext extends EnginePorts {
  /** The port's, or NO_METRICS (engine/metrics.ts) when the ports have none. */
  metrics: MetricsPort;
  /** The port's, or IN_THREAD_EXPRESSIONS (engine/expressions.ts) when the ports have none. */
  expressions: ExpressionEvaluator;
  tasks: TaskRegistry;
  /** Workflow versions kept in the process, and each name's latest for a short time (workflow-cache.ts). */
  workflows: WorkflowVersions;
  graphs: GraphCache;
  leaseMs: number;
  /**
   * How long a node's first attempt runs before its claim is written (attempt-fence.ts); one that
   * ends sooner writes its claim with its ending. 0: every attempt is claimed before it runs.
   */
  claimAfterMs: number;
  sweep: SweepSettings;
  /** Ready children a worker may run in the same invocation before it sends the next one. */
  maxContinuations: number;
  /** The worker function's timeout (EngineOptions.workerTimeoutSeconds; worker-time.ts). */
  workerTimeoutSeconds: number;
  /** This container's recent run times per node: what continuation expects a node to take. */
  runTimes: RecentRunTimes;
  /** Which fan-ins are decided by reading parents, by arrivals, or by sharded arrivals. */
  fanIn: FanInSettings;
  /** Values in and out of the store: limits, the blob store, the cache of blobs. */
  payloads: Payloads;
  /** The fan-out budget of each root execution's tree (domain/fan-out.ts). */
  fanOut: FanOutLimits;
  /** The stamps of history events: the clock's sequence (history-stamps.ts). */
  stamps: HistoryStamps;
  logger: EngineLogger;
}

/**
 * Compiled graphs by workflow name and version. Versions are immutable, so an entry never goes
 * stale; a worker container compiles each version once, and the graph is kept (and evicted) with
 * its version in the process's workflow cache.
 */
export class GraphCache {
  constructor(
    private readonly workflows: WorkflowVersions,
    private readonly compile: CompileOptions = {},
  ) {}

  async get(name: string, version: number): Promise<WorkflowGraph> {
    const graph = await this.workflows.derived(name, version, "graph", (record) =>
      compileGraph(record.definition, this.compile),
    );
    if (!graph) throw notFound(`workflow "${name}" version ${version} does not exist`);
    return graph;
  }
}
