/**
 * The load runs behind the capacity table (capacity-table.ts): each runs the real handlers through
 * the local runtime on the emulator (moto), as bench/run.ts does, with every DynamoDB call recorded
 * by partition (calls.ts + capacity-partitions.ts). Four loads, one per goal of issue 27:
 * - starts: N executions of a 3-node workflow, started together (unit: a start);
 * - fan-out: one execution 1 → W → 1 (unit: a node);
 * - map: one execution of a map of M items (unit: a map item);
 * - external: executions whose nodes run on in-process external workers of two pools (unit: an
 *   external task), as `weft worker` runs them (cli/worker.ts) against the runtime's API.
 */
import { z } from "zod";
import { WeftClient } from "../cli/client.js";
import { clientWorkerApi, ExternalWorker } from "../cli/worker.js";
import { startLocalRuntime } from "../local/runtime.js";
import { LIMITS } from "../shared/domain/definition.js";
import { MAP_LIMITS } from "../shared/domain/map.js";
import { silentLogger } from "../shared/engine/context.js";
import { createTaskRegistry } from "../shared/tasks/builtins.js";
import { defineTask, type TaskType } from "../shared/tasks/task-type.js";
import { CallLog } from "./calls.js";
import { PartitionTally, type PartitionUse } from "./capacity-partitions.js";
import { motoPorts, poster } from "./run.js";
import type { EnginePorts } from "./types.js";
import { BENCH_TASKS, manySmall, mapOf } from "./workloads.js";

/** A definition as POST /workflows takes it (external nodes have types the bench's NodeSpec does not). */
export interface LoadDefinition {
  name: string;
  description?: string;
  nodes: readonly unknown[];
}

export type LoadName = "starts" | "fan-out" | "map" | "external";

export interface Load {
  name: LoadName;
  description: string;
  /** What one unit of work is, and how many the load does. */
  unit: "start" | "node" | "map item" | "external task";
  units: number;
  /** The goal of issue 27 for this unit, per second, and what it is per. */
  goal: number;
  goalScope: string;
  /**
   * What the goal is per: one workflow's starts, one execution's units, or the whole fleet's. A
   * per-execution key counts toward the goal only when the goal is per execution.
   */
  goalPer: "workflow" | "execution" | "fleet";
  definitions: LoadDefinition[];
  /** Executions to start: the workflow's name and the input of each. */
  starts: Array<{ workflow: string; input?: Record<string, unknown> }>;
  /** External workers to run: per pool, how many, each taking up to maxParallel tasks at once. */
  workers?: Array<{ pool: string; count: number; maxParallel: number }>;
}

export interface LoadRun {
  load: Omit<Load, "definitions" | "starts" | "workers">;
  executions: number;
  failedExecutions: number;
  /** First start request → last execution finished. */
  seconds: number;
  partitions: PartitionUse[];
}

const EXTERNAL_TYPE = "bench-external";
const POOLS = ["capacity-a", "capacity-b"] as const;

const externalTask = defineTask({
  type: EXTERNAL_TYPE,
  params: z.object({}).strict(),
  run: ({ context }) => ({ node: context.nodeId }),
}) as TaskType<unknown>;

export interface CapacitySizes {
  starts: number;
  width: number;
  items: number;
  /** Executions of the external load, each with `perPool` nodes in each of the two pools. */
  externalExecutions: number;
  perPool: number;
}

/** The sizes: ≈500 starts, ≈2,000 wide, ≈2,000 items, ≈500 external tasks. */
export const FULL_SIZES: CapacitySizes = {
  starts: 500,
  // A workflow has at most LIMITS.maxNodes nodes: the source, two joins and the end leave the rest.
  width: LIMITS.maxNodes - 4,
  items: 2000,
  // 200 external tasks: moto answers one request at a time, and 500 (25 executions) did not finish
  // within MAX_WAIT_MS there; the per-task figures are the same at either size.
  externalExecutions: 10,
  perPool: 10,
};

export const QUICK_SIZES: CapacitySizes = {
  starts: 100,
  width: 200,
  items: 200,
  externalExecutions: 5,
  perPool: 10,
};

export function capacityLoads(sizes: CapacitySizes): Load[] {
  const { starts, width, items, externalExecutions, perPool } = sizes;

  const small = manySmall(starts).definition;
  const wide = wideFanOut(width);
  const map = mapOf(items, MAP_LIMITS.maxConcurrency);
  const external: LoadDefinition = {
    name: "bench-capacity-external",
    description: "benchmark external workers in two pools",
    nodes: POOLS.flatMap((pool) =>
      Array.from({ length: perPool }, (_, i) => ({
        id: `${pool}-${i}`,
        type: EXTERNAL_TYPE,
        params: {},
        runsOn: { pool },
      })),
    ),
  };
  return [
    {
      name: "starts",
      description: `${starts} starts of a 3-node workflow, together`,
      unit: "start",
      units: starts,
      goal: 10_000,
      goalScope: "starts/s per workflow",
      goalPer: "workflow",
      definitions: [small],
      starts: Array.from({ length: starts }, (_, i) => ({ workflow: small.name, input: { i } })),
    },
    {
      name: "fan-out",
      description: `one execution 1 → ${width} → ${wide.joins} join${wide.joins === 1 ? "" : "s"} → 1 (${wide.definition.nodes.length} nodes)`,
      unit: "node",
      units: wide.definition.nodes.length,
      goal: 5_000,
      goalScope: "nodes/s per execution",
      goalPer: "execution",
      definitions: [wide.definition],
      starts: [{ workflow: wide.definition.name }],
    },
    {
      name: "map",
      description: `one execution with a map of ${items} items (maxConcurrency ${MAP_LIMITS.maxConcurrency})`,
      unit: "map item",
      units: items,
      goal: 5_000,
      goalScope: "map items/s per execution",
      goalPer: "execution",
      definitions: [map.definition],
      starts: [{ workflow: map.definition.name, ...(map.input ? { input: map.input } : {}) }],
    },
    {
      name: "external",
      description: `${externalExecutions} executions of ${POOLS.length * perPool} external nodes, on 2 workers in each of 2 pools`,
      unit: "external task",
      units: externalExecutions * POOLS.length * perPool,
      goal: 5_000,
      goalScope: "external tasks/s fleet-wide",
      goalPer: "fleet",
      definitions: [external],
      starts: Array.from({ length: externalExecutions }, (_, i) => ({
        workflow: external.name,
        input: { i },
      })),
      workers: POOLS.map((pool) => ({ pool, count: 2, maxParallel: 8 })),
    },
  ];
}

/**
 * 1 → `width` → joins → 1: a node may depend on at most LIMITS.maxDependsOn others, so a fan-out
 * wider than that is joined in parts (each a wide `all` fan-in recording arrivals in shards).
 */
function wideFanOut(width: number): { definition: LoadDefinition; joins: number } {
  const workers = Array.from({ length: width }, (_, i) => `w${i}`);
  const joins = Math.ceil(width / LIMITS.maxDependsOn);
  const per = Math.ceil(width / joins);
  const joinIds = Array.from({ length: joins }, (_, j) => `join${j}`);
  return {
    joins,
    definition: {
      name: `bench-capacity-fanout-${width}`,
      description: "benchmark wide fan-out",
      nodes: [
        { id: "src", type: "pass" },
        ...workers.map((id) => ({ id, type: "noop", dependsOn: ["src"] })),
        ...joinIds.map((id, j) => ({ id, type: "merge", dependsOn: workers.slice(j * per, (j + 1) * per) })),
        { id: "end", type: "noop", dependsOn: joinIds },
      ],
    },
  };
}

/** How often the run's sweeper looks (the deployed schedule's is a minute; the run is shorter). */
const SWEEP_INTERVAL_MS = 10_000;
/** How long a load's executions may take before the run stops waiting for them. */
const MAX_WAIT_MS = 15 * 60_000;

const CREDENTIALS = { accessKeyId: "test", secretAccessKey: "test" };
const REGION = "us-east-1";
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs one load on the emulator at `endpoint`; its DynamoDB use by partition, registration left out. */
export async function runLoad(load: Load, endpoint: string): Promise<LoadRun> {
  const log = new CallLog();
  const tally = new PartitionTally();
  log.partitions = tally;
  const stamp = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
  const names = {
    table: `capacity-${stamp}`,
    queue: `capacity-${stamp}-tasks`,
    deadLetter: `capacity-${stamp}-dlq`,
    eventBus: `capacity-${stamp}-events`,
    payloadBucket: `capacity-${stamp}-payloads`,
  };
  const moto = await motoPorts(endpoint, names, log);
  let raw: EnginePorts | undefined;
  const runtime = await startLocalRuntime({
    backend: "aws",
    port: 0,
    concurrency: 8,
    batchSize: 10,
    // The sweeper on, as deployed: the backstop that finishes an execution whose last step was lost
    // (its few calls are in the figures; it is not per-unit work).
    sweep: true,
    sweepIntervalMs: SWEEP_INTERVAL_MS,
    tasks: createTaskRegistry(BENCH_TASKS),
    engineOptions: { logger: silentLogger, sweep: { firstCheckMs: 30_000, graceMs: 15_000, idleMs: 30_000 } },
    wrapPorts: (ports) => {
      raw = ports;
      return moto.ports;
    },
    endpoint,
    region: REGION,
    credentials: CREDENTIALS,
    names,
    env: {},
    onError: (error, where) => console.error(`[bench] ${where}:`, error),
  });
  const stops: AbortController[] = [];
  const runs: Promise<unknown>[] = [];
  try {
    const post = poster(runtime.url);
    for (const definition of load.definitions) await post("/workflows", definition);

    const workerTasks = createTaskRegistry([externalTask]);
    for (const { pool, count, maxParallel } of load.workers ?? []) {
      for (let i = 0; i < count; i++) {
        const shutdown = new AbortController();
        const worker = new ExternalWorker(
          {
            registration: { pool, executors: [], capabilities: {}, labels: [], maxParallel },
            graceMs: 5000,
            pollWaitSeconds: 1,
            idleBackoff: { initialMs: 50, maxMs: 200 },
          },
          {
            api: clientWorkerApi(new WeftClient({ baseUrl: runtime.url })),
            tasks: workerTasks,
            log: () => {},
          },
        );
        stops.push(shutdown);
        runs.push(worker.run(shutdown.signal));
      }
    }
    // Registration (and the workers' own registration) is not the load: counted from here.
    await sleep(500);
    log.reset();

    const t0 = Date.now();
    const started: string[] = [];
    // 50 requests at a time: the runtime's HTTP server and moto answer one process each.
    for (let i = 0; i < load.starts.length; i += 50) {
      const batch = load.starts.slice(i, i + 50);
      const ids = await Promise.all(
        batch.map(async (start) => String((await post("/executions", start)).executionId)),
      );
      started.push(...ids);
    }
    const store = raw!.store;
    let failed = 0;
    let lastFinish = t0;
    const giveUpAt = Date.now() + MAX_WAIT_MS;
    for (const executionId of started) {
      for (;;) {
        const record = await store.getExecution(executionId);
        if (record && record.status !== "RUNNING" && record.status !== "PENDING") {
          if (record.status !== "SUCCEEDED") failed += 1;
          lastFinish = Math.max(lastFinish, record.finishedAt ?? Date.now());
          break;
        }
        if (Date.now() > giveUpAt) {
          // Counted as not SUCCEEDED in the report, rather than waiting for ever.
          failed += 1;
          break;
        }
        await sleep(100);
      }
    }
    const partitions = tally.list();
    const { definitions: _d, starts: _s, workers: _w, ...described } = load;
    return {
      load: described,
      executions: started.length,
      failedExecutions: failed,
      seconds: (lastFinish - t0) / 1000,
      partitions,
    };
  } finally {
    for (const stop of stops) stop.abort();
    await Promise.allSettled(runs);
    await runtime.stop();
    moto.clients.destroy();
  }
}
