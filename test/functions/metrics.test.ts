/**
 * The worker handler's metrics as deployed: the real worker handler (functions/worker) on SQS records
 * of task messages, the real engine on in-memory ports, and Powertools Metrics writing EMF to
 * stdout, flushed at the end of the invocation. The stdout of the invocation is parsed as
 * CloudWatch would: every metric a completion (and a retry, a failure) emits is there, in the Weft
 * namespace under the `service` dimension, and the execution counters also per workflow.
 */
import { Logger } from "@aws-lambda-powertools/logger";
import type { SQSEvent } from "aws-lambda";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createSweeperHandler } from "../../functions/sweeper/app.js";
import { createWorkerHandler } from "../../functions/worker/app.js";
import { MemoryBlobStore } from "../../shared/adapters/memory/blobs.js";
import { MemoryEventPublisher } from "../../shared/adapters/memory/events.js";
import { MemoryQueue } from "../../shared/adapters/memory/queue.js";
import { MemoryStore } from "../../shared/adapters/memory/store.js";
import {
  createPowertoolsMetrics,
  METRICS_NAMESPACE,
  METRICS_SERVICE,
  PowertoolsMetricsPort,
  publishMetrics,
} from "../../shared/adapters/metrics-powertools.js";
import { randomIds, systemClock } from "../../shared/adapters/system.js";
import { Engine } from "../../shared/engine/engine.js";
import { DEFAULT_METRIC_LIMITS, type MetricLimits } from "../../shared/engine/metric-dimensions.js";
import { METRIC } from "../../shared/engine/metrics.js";
import type { Clock, EnginePorts, ReceivedMessage } from "../../shared/ports.js";
import { createTaskRegistry } from "../../shared/tasks/builtins.js";

interface EmfRecord {
  _aws: {
    Timestamp: number;
    CloudWatchMetrics: Array<{
      Namespace: string;
      Dimensions: string[][];
      Metrics: Array<{ Name: string; Unit: string }>;
    }>;
  };
  [key: string]: unknown;
}

/** One metric as CloudWatch reads it out of an EMF record. */
interface Datum {
  name: string;
  unit: string;
  values: number[];
  dimensions: Array<Record<string, string>>;
}

function datumsOf(record: EmfRecord): Datum[] {
  const [directive] = record._aws.CloudWatchMetrics;
  if (!directive) return [];
  expect(directive.Namespace).toBe(METRICS_NAMESPACE);
  return directive.Metrics.map(({ Name, Unit }) => {
    const value = record[Name];
    return {
      name: Name,
      unit: Unit,
      values: Array.isArray(value) ? (value as number[]) : [value as number],
      dimensions: directive.Dimensions.map((set) =>
        Object.fromEntries(set.map((key) => [key, String(record[key])])),
      ),
    };
  });
}

let restore: (() => void) | undefined;
afterEach(() => {
  restore?.();
  restore = undefined;
});

/** Everything written to stdout while `run` runs, as EMF records (other lines are left out). */
async function emfOf(run: () => Promise<unknown>): Promise<Datum[]> {
  const lines: string[] = [];
  const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
    lines.push(...String(chunk).split("\n"));
    return true;
  });
  restore = () => spy.mockRestore();
  try {
    await run();
  } finally {
    spy.mockRestore();
    restore = undefined;
  }
  return lines
    .filter((line) => line.startsWith("{") && line.includes('"_aws"'))
    .flatMap((line) => datumsOf(JSON.parse(line) as EmfRecord));
}

function world(limits?: MetricLimits) {
  const queue = new MemoryQueue({ clock: systemClock });
  const metrics = createPowertoolsMetrics();
  const engine = new Engine(
    {
      store: new MemoryStore(),
      blobs: new MemoryBlobStore(),
      queue,
      events: new MemoryEventPublisher(),
      clock: systemClock,
      ids: randomIds,
      metrics: new PowertoolsMetricsPort(metrics, limits),
    },
    createTaskRegistry(),
  );
  const handler = createWorkerHandler(engine, {
    logger: new Logger({ serviceName: "weft-worker", logLevel: "SILENT" }),
    metrics,
  });
  const receive = () => queue.receive({ maxMessages: 10, waitSeconds: 0, visibilityTimeoutSeconds: 3600 });
  /** Starts an execution of a one-node workflow; what the api invocation recorded is flushed apart. */
  const start = async (name: string, node: Record<string, unknown>) => {
    await engine.registerWorkflow({ name, nodes: [{ id: "a", ...node }] });
    await emfOf(async () => {
      await engine.createExecution({ workflow: name, input: {} });
      publishMetrics(metrics);
    });
  };
  return { engine, handler, receive, start, metrics };
}

const sqsEvent = (messages: readonly ReceivedMessage[]): SQSEvent => ({
  Records: messages.map((m) => ({
    messageId: m.messageId,
    receiptHandle: m.receiptHandle,
    body: m.body,
    attributes: {
      ApproximateReceiveCount: String(m.receiveCount),
      SentTimestamp: String(m.sentAt),
      SenderId: "000000000000",
      ApproximateFirstReceiveTimestamp: String(m.sentAt),
    },
    messageAttributes: {},
    md5OfBody: "",
    eventSource: "aws:sqs",
    eventSourceARN: "arn:aws:sqs:local:000000000000:tasks",
    awsRegion: "local",
  })),
});

const service = { service: METRICS_SERVICE };

/** The data of `name` under exactly the dimension set `dimensions`. */
function find(data: Datum[], name: string, dimensions: Record<string, string> = service): Datum[] {
  return data.filter(
    (d) => d.name === name && d.dimensions.some((set) => JSON.stringify(set) === JSON.stringify(dimensions)),
  );
}

function total(data: Datum[], name: string, dimensions?: Record<string, string>): number {
  return find(data, name, dimensions)
    .flatMap((d) => d.values)
    .reduce((a, b) => a + b, 0);
}

describe("worker handler metrics (EMF on stdout)", () => {
  it("a completion emits the node's count, run time and wait, and its execution's success", async () => {
    const w = world();
    await w.start("metrics-ok", { type: "pass", params: { value: 1 } });
    const messages = await w.receive();
    expect(messages).toHaveLength(1);
    const data = await emfOf(() => w.handler(sqsEvent(messages)));

    expect(total(data, METRIC.nodesCompleted)).toBe(1);
    expect(find(data, METRIC.nodesCompleted)[0]?.unit).toBe("Count");
    const duration = find(data, METRIC.nodeDuration);
    expect(duration.flatMap((d) => d.values)).toHaveLength(1);
    expect(duration[0]?.unit).toBe("Milliseconds");
    expect(duration[0]?.values[0]).toBeGreaterThanOrEqual(0);
    const wait = find(data, METRIC.nodeWaitTime);
    expect(wait.flatMap((d) => d.values)).toHaveLength(1);
    expect(wait[0]?.unit).toBe("Milliseconds");
    // The execution's end: the total the alarms read, and the same per workflow.
    expect(total(data, METRIC.executionsSucceeded)).toBe(1);
    expect(total(data, METRIC.executionsSucceeded, { ...service, workflow: "metrics-ok" })).toBe(1);
    // Nothing else happened to it.
    for (const name of [METRIC.nodesFailed, METRIC.nodesRetried, METRIC.deadLetters, METRIC.executionsFailed])
      expect(find(data, name), name).toEqual([]);
    // Every record has the service dimension, and no id of any kind.
    for (const datum of data)
      for (const set of datum.dimensions) {
        expect(set.service).toBe(METRICS_SERVICE);
        expect(Object.keys(set).every((key) => ["service", "workflow", "pool"].includes(key))).toBe(true);
      }
  });

  it("a failed attempt with attempts left emits a retry and its run time", async () => {
    const w = world();
    await w.start("metrics-retry", {
      type: "fail",
      params: { times: 1 },
      retry: { maxAttempts: 2, backoff: { initialSeconds: 1, maxSeconds: 1, multiplier: 1, jitter: "none" } },
    });
    const data = await emfOf(async () => w.handler(sqsEvent(await w.receive())));
    expect(total(data, METRIC.nodesRetried)).toBe(1);
    expect(find(data, METRIC.nodeDuration).flatMap((d) => d.values)).toHaveLength(1);
    expect(find(data, METRIC.nodeWaitTime).flatMap((d) => d.values)).toHaveLength(1);
    for (const name of [METRIC.nodesCompleted, METRIC.nodesFailed, METRIC.executionsFailed])
      expect(find(data, name), name).toEqual([]);
  });

  it("a terminal failure emits the failure, its dead letter and the execution's failure", async () => {
    const w = world();
    await w.start("metrics-fail", { type: "fail", params: { retryable: false, message: "declined" } });
    const data = await emfOf(async () => w.handler(sqsEvent(await w.receive())));
    expect(total(data, METRIC.nodesFailed)).toBe(1);
    expect(total(data, METRIC.deadLetters)).toBe(1);
    expect(find(data, METRIC.nodeDuration).flatMap((d) => d.values)).toHaveLength(1);
    expect(total(data, METRIC.executionsFailed)).toBe(1);
    expect(total(data, METRIC.executionsFailed, { ...service, workflow: "metrics-fail" })).toBe(1);
    expect(find(data, METRIC.nodesRetried)).toEqual([]);
    expect(find(data, METRIC.nodesCompleted)).toEqual([]);
  });

  it("gives at most the cap of workflows a dimension of their own, the rest under workflow=other", async () => {
    const w = world();
    const data = await emfOf(async () => {
      for (let i = 0; i < 150; i++) {
        await w.engine.registerWorkflow({ name: `capped-${i}`, nodes: [{ id: "a", type: "noop" }] });
        await w.engine.createExecution({ workflow: `capped-${i}`, input: {} });
      }
      publishMetrics(w.metrics);
    });
    const workflows = new Set(
      data
        .filter((d) => d.name === METRIC.executionsStarted)
        .flatMap((d) => d.dimensions.map((set) => set.workflow))
        .filter((value) => value !== undefined),
    );
    expect(workflows.size).toBe(DEFAULT_METRIC_LIMITS.workflows + 1);
    expect(workflows.has("capped-0")).toBe(true);
    expect(workflows.has("capped-99")).toBe(true);
    expect(workflows.has("capped-100")).toBe(false);
    expect(total(data, METRIC.executionsStarted, { ...service, workflow: "other" })).toBe(50);
    // The total the alarms read still counts every execution.
    expect(total(data, METRIC.executionsStarted)).toBe(150);
  });

  it("an invocation that recorded nothing writes nothing", async () => {
    const w = world();
    const data = await emfOf(() => w.handler({ Records: [] }));
    expect(data).toEqual([]);
  });
});

describe("sweeper handler metrics (EMF on stdout)", () => {
  /** A clock moved by hand: a worker goes silent, an offer grows old. */
  const manualClock = (start: number) => {
    let t = start;
    const clock: Clock = { now: () => t, sleep: () => new Promise((resolve) => setTimeout(resolve, 0)) };
    return { clock, advance: (ms: number) => (t += ms) };
  };

  function externalWorld(limits?: MetricLimits) {
    const time = manualClock(Date.UTC(2026, 0, 1));
    const queue = new MemoryQueue({ clock: time.clock });
    const store = new MemoryStore();
    const listWorkers = vi.spyOn(store, "listWorkers");
    const ports: EnginePorts = {
      store,
      blobs: new MemoryBlobStore(),
      queue,
      events: new MemoryEventPublisher(),
      clock: time.clock,
      ids: randomIds,
    };
    const metrics = createPowertoolsMetrics();
    const engine = new Engine(
      { ...ports, metrics: new PowertoolsMetricsPort(metrics, limits) },
      createTaskRegistry(),
    );
    const silent = new Logger({ serviceName: "weft-sweeper", logLevel: "SILENT" });
    return {
      ...time,
      engine,
      plain: new Engine(ports, createTaskRegistry()),
      listWorkers,
      sweeper: createSweeperHandler(engine, { logger: silent, metrics }),
      worker: createWorkerHandler(engine, { logger: silent, metrics }),
      receive: () => queue.receive({ maxMessages: 10, waitSeconds: 0, visibilityTimeoutSeconds: 3600 }),
      flush: () => publishMetrics(metrics),
    };
  }

  it("measures each pool of the registered workers, and the starved pools and oldest task across them", async () => {
    const w = externalWorld();
    await w.engine.registerWorker({
      workerId: "gpu-1",
      pool: "gpu",
      executors: [],
      capabilities: {},
      labels: [],
      maxParallel: 1,
    });
    await w.engine.registerWorker({
      workerId: "cpu-1",
      pool: "cpu",
      executors: [],
      capabilities: {},
      labels: [],
      maxParallel: 1,
    });
    await w.engine.registerWorkflow({
      name: "render",
      nodes: [{ id: "r", type: "noop", runsOn: { pool: "gpu" } }],
    });
    await emfOf(async () => {
      await w.engine.createExecution({ workflow: "render", input: {} });
      // Its task message, on the Lambda worker, offers it to the pool.
      await w.worker(sqsEvent(await w.receive()));
      w.flush();
    });
    // Ten minutes on, nobody took it and the gpu worker went silent; the cpu worker still beats.
    w.advance(600_000);
    await w.engine.workerHeartbeat("cpu-1");
    const data = await emfOf(() => w.sweeper());

    const pool = (name: string) => ({ ...service, pool: name });
    expect(total(data, METRIC.poolReadyTasks, pool("gpu"))).toBe(1);
    expect(total(data, METRIC.poolHealthyWorkers, pool("gpu"))).toBe(0);
    expect(total(data, METRIC.poolOldestTaskAge, pool("gpu"))).toBe(600_000);
    expect(find(data, METRIC.poolOldestTaskAge, pool("gpu"))[0]?.unit).toBe("Milliseconds");
    expect(total(data, METRIC.poolReadyTasks, pool("cpu"))).toBe(0);
    expect(total(data, METRIC.poolHealthyWorkers, pool("cpu"))).toBe(1);
    // Across pools, under the service alone: what the alarms watch.
    expect(total(data, METRIC.poolsStarved)).toBe(1);
    expect(total(data, METRIC.poolOldestTaskAge)).toBe(600_000);
    // A pool's levels are its own: never under the service alone.
    expect(find(data, METRIC.poolReadyTasks)).toEqual([]);
    expect(total(data, METRIC.sweeps)).toBe(1);
  });

  it("caps the pools with a dimension of their own, and frees a pool's slot with its last worker", async () => {
    const w = externalWorld({ workflows: 100, pools: 1 });
    const register = (workerId: string, pool: string) =>
      w.engine.registerWorker({
        workerId,
        pool,
        executors: [],
        capabilities: {},
        labels: [],
        maxParallel: 1,
      });
    const poolsOf = (data: Datum[]) =>
      new Set(
        data
          .filter((d) => d.name === METRIC.poolHealthyWorkers)
          .flatMap((d) => d.dimensions.map((set) => set.pool)),
      );
    await register("gpu-1", "gpu");
    await register("gpu-2", "gpu");
    expect(poolsOf(await emfOf(() => w.sweeper()))).toEqual(new Set(["gpu"]));
    // gpu was seen first: its own series; cpu past the cap of one: under pool=other.
    await register("cpu-1", "cpu");
    w.advance(60_000);
    expect(poolsOf(await emfOf(() => w.sweeper()))).toEqual(new Set(["gpu", "other"]));

    // One gpu worker left: the pool stays.
    await w.engine.deregisterWorker("gpu-1");
    w.advance(60_000);
    expect(poolsOf(await emfOf(() => w.sweeper()))).toEqual(new Set(["gpu", "other"]));

    // Its last worker gone: no more gpu series, and cpu has the slot.
    await emfOf(async () => {
      await w.engine.deregisterWorker("gpu-2");
      w.flush();
    });
    w.advance(60_000);
    expect(poolsOf(await emfOf(() => w.sweeper()))).toEqual(new Set(["cpu"]));
  });

  it("reads no pools when the engine has no metrics port", async () => {
    const w = externalWorld();
    await w.plain.sweep({ force: true });
    expect(w.listWorkers).not.toHaveBeenCalled();
    await w.engine.sweep({ force: true });
    expect(w.listWorkers).toHaveBeenCalledTimes(1);
  });
});
