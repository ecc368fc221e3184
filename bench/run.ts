/**
 * Runs one workload on one backend through the real handlers: the local runtime's HTTP server feeds
 * the api handler (register, start), its poller feeds the worker handler SQS batches. Engine-side
 * AWS calls are counted by middleware on clients the bench builds itself (createAwsClients +
 * createAwsPorts, injected through `wrapPorts`); the poller's own receives and deletes go through the
 * runtime's internal SQS client, which has no seam, so the middleware is added to that client too.
 */

import { startLocalRuntime } from "../local/runtime.js";
import { ensureTable } from "../shared/adapters/dynamo/table.js";
import { ensureEventBus } from "../shared/adapters/eventbridge/publisher.js";
import { ensureBucket } from "../shared/adapters/s3/bucket.js";
import { ensureQueues } from "../shared/adapters/sqs/queues.js";
import { loadConfig } from "../shared/config/env.js";
import { createAwsClients, createAwsPorts } from "../shared/config/wiring.js";
import { MAP_LIMITS } from "../shared/domain/map.js";
import { blobsOf, PAYLOAD_LIMITS, type Payload } from "../shared/domain/payload.js";
import { silentLogger } from "../shared/engine/context.js";
import { DEFAULT_WORKER_TIMEOUT_SECONDS } from "../shared/engine/worker-time.js";
import { createTaskRegistry } from "../shared/tasks/builtins.js";
import { CallLog, instrumentDynamo, instrumentEventBridge, instrumentS3, instrumentSqs } from "./calls.js";
import { itemSize } from "./capacity.js";
import { AWS_CALL_MS } from "./cost.js";
import { countingPorts } from "./memory-ports.js";
import { percentile } from "./stats.js";
import type { EnginePorts, HistoryEventLike, QueueConsumer, ReceivedMessage } from "./types.js";
import { BENCH_TASKS, type Workload } from "./workloads.js";

/**
 * "memory-6ms": the memory backend with every engine port call delayed by AWS_CALL_MS, so that the
 * worker's measured duration models Lambda time at in-region latency with the engine's concurrency.
 */
export type BackendName = "memory" | "memory-6ms" | "moto";

export interface RunOptions {
  backend: BackendName;
  /** moto's endpoint (moto backend). */
  endpoint?: string;
  concurrency: number;
  batchSize: number;
  /** EngineOptions.payloads.inlineBytes: values up to this size stay on their items (default PAYLOAD_LIMITS.inlineBytes). */
  inlineBytes?: number;
  /**
   * The worker function's timeout the local runtime gives its invocations and its engine (default
   * the deployed one, 300 s: DEFAULT_WORKER_TIMEOUT_SECONDS).
   */
  workerTimeoutSeconds?: number;
  /**
   * Called once every execution has ended, before the runtime stops: the uncounted ports and the
   * executions' ids (test/bench/cost-model.test.ts compares the cost model's counts with the run's).
   */
  afterRun?: (ports: EnginePorts, executionIds: readonly string[]) => Promise<void>;
}

export interface Distribution {
  count: number;
  p50: number;
  p99: number;
  mean: number;
  max: number;
}

export interface WorkloadRun {
  workload: string;
  description: string;
  backend: BackendName;
  /** Why this workload is left out of the targets (Workload.notInTargets). */
  notInTargets?: string;
  executions: number;
  nodesPerExecution: number;
  totalNodes: number;
  completedNodes: number;
  cancelledNodes: number;
  failedExecutions: number;
  /** First start request → last execution finishedAt. */
  e2eMs: number;
  executionE2eMs: Distribution;
  nodesPerSecond: number;
  /** NodeQueued → NodeCompleted, per node. */
  nodeLatencyMs: Distribution;
  /** NodeQueued → NodeStarted, per node that went through the queue (inline merges do not). */
  queueToStartMs: Distribution;
  /** process.cpuUsage() (user + system) over the run, per completed node; includes HTTP and poller. */
  processCpuMsPerNode: number;
  /** The engine's inline threshold in this run (bytes). */
  inlineBytes: number;
  /** The worker function's timeout in this run (seconds): each invocation's, and the engine's. */
  workerTimeoutSeconds: number;
  calls: ReturnType<CallLog["snapshot"]>;
  storage: Storage;
}

/** What the run left stored (kept for the execution retention), and the blob reads a cold cache would make. */
export interface Storage {
  /**
   * DynamoDB: bytes of the executions' items as last written (item size + 100 bytes of overhead
   * each, DynamoDB's storage rule); modeled from the moto run's items, undefined on the memory
   * backends (their items are not sized).
   */
  ddbBytes?: number;
  /** S3: bytes of the distinct objects written (the blobs of the executions). */
  s3Bytes: number;
  /**
   * GetObject requests if no worker had the blob cached: every node run loads every blob of its
   * execution input and of its dependencies' outputs (a merge composes without loading). The bench
   * runs one engine, whose cache holds every blob it wrote, so its measured GETs are the other
   * extreme (a single warm Lambda container); on AWS the figure lies between.
   */
  coldBlobGets: number;
}

const CREDENTIALS = { accessKeyId: "test", secretAccessKey: "test" };
const REGION = "us-east-1";
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function distribution(values: readonly number[]): Distribution {
  const sorted = [...values].sort((a, b) => a - b);
  const sum = sorted.reduce((a, b) => a + b, 0);
  return {
    count: sorted.length,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    mean: sorted.length === 0 ? 0 : sum / sorted.length,
    max: sorted.at(-1) ?? 0,
  };
}

/** Ports of the moto backend on instrumented clients (resources created first, uncounted). */
export async function motoPorts(
  endpoint: string,
  names: Record<"table" | "queue" | "deadLetter" | "eventBus" | "payloadBucket", string>,
  log: CallLog,
) {
  const setup = createAwsClients({ endpoint, region: REGION, credentials: CREDENTIALS });
  try {
    const [, queues] = await Promise.all([
      ensureTable(setup.dynamo, names.table),
      ensureQueues(
        setup.sqs,
        { queue: names.queue, deadLetter: names.deadLetter },
        { maxReceiveCount: 5, visibilityTimeoutSeconds: 30 },
      ),
      ensureEventBus(setup.eventBridge, names.eventBus),
      ensureBucket(setup.s3, names.payloadBucket),
    ]);
    const clients = createAwsClients({ endpoint, region: REGION, credentials: CREDENTIALS });
    instrumentDynamo(clients.dynamo, log);
    instrumentSqs(clients.sqs, log, queues.deadLetterUrl);
    instrumentEventBridge(clients.eventBridge, log);
    instrumentS3(clients.s3, log);
    const config = loadConfig({
      WEFT_TABLE_NAME: names.table,
      WEFT_QUEUE_URL: queues.queueUrl,
      WEFT_EVENT_BUS_NAME: names.eventBus,
      WEFT_PAYLOAD_BUCKET: names.payloadBucket,
      AWS_ENDPOINT_URL: endpoint,
    });
    return { ports: createAwsPorts(config, clients), clients, deadLetterUrl: queues.deadLetterUrl };
  } finally {
    setup.destroy();
  }
}

/**
 * Wraps the poller's consumer (the object the poller calls) to see each worker invocation: a receive
 * that returned messages is one invocation (the poller hands each such batch to the worker handler),
 * and its delete follows the handler's return, so receive → delete is the handler's duration.
 */
function watchInvocations(consumer: QueueConsumer, log: CallLog, countCalls: boolean) {
  const receive = consumer.receive.bind(consumer);
  const remove = consumer.delete.bind(consumer);
  const batches = new Map<string, { start: number; open: boolean }>();
  let open = 0;
  consumer.receive = async (options) => {
    const messages: ReceivedMessage[] = await receive(options);
    if (countCalls) {
      if (messages.length > 0) {
        log.op("SQS.ReceiveMessage", messages.length);
        log.sqs.billedRequests += 1;
      } else {
        log.op("SQS.ReceiveMessage(empty)", 0);
        log.sqs.emptyReceives += 1;
      }
    }
    if (messages.length > 0) {
      log.worker.invocations += 1;
      log.worker.records += messages.length;
      const batch = { start: performance.now(), open: true };
      open += 1;
      for (const m of messages) batches.set(m.receiptHandle, batch);
    }
    return messages;
  };
  consumer.delete = async (handles) => {
    const batch = handles[0] === undefined ? undefined : batches.get(handles[0]);
    if (batch?.open) {
      batch.open = false;
      open -= 1;
      log.worker.durationsMs.push(performance.now() - batch.start);
    }
    for (const h of handles) batches.delete(h);
    if (countCalls) {
      log.op("SQS.DeleteMessageBatch", handles.length);
      log.sqs.billedRequests += Math.ceil(handles.length / 10);
    }
    return remove(handles);
  };
  return { inFlight: () => open };
}

export async function runWorkload(workload: Workload, options: RunOptions): Promise<WorkloadRun> {
  const log = new CallLog();
  const stamp = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
  const names = {
    table: `bench-${stamp}`,
    queue: `bench-${stamp}-tasks`,
    deadLetter: `bench-${stamp}-dlq`,
    eventBus: `bench-${stamp}-events`,
    payloadBucket: `bench-${stamp}-payloads`,
  };
  const inlineBytes = options.inlineBytes ?? PAYLOAD_LIMITS.inlineBytes;
  const workerTimeoutSeconds = options.workerTimeoutSeconds ?? DEFAULT_WORKER_TIMEOUT_SECONDS;
  const moto = options.backend === "moto" ? await motoPorts(options.endpoint ?? "", names, log) : undefined;
  let raw: EnginePorts | undefined;
  const runtime = await startLocalRuntime({
    backend: options.backend === "moto" ? "aws" : "memory",
    port: 0,
    concurrency: options.concurrency,
    batchSize: options.batchSize,
    sweep: false,
    tasks: createTaskRegistry(BENCH_TASKS),
    // The deployed deadline rule: invocations of this timeout, less the worker's margin (worker-time.ts).
    workerTimeoutSeconds,
    engineOptions: { logger: silentLogger, payloads: { inlineBytes } },
    wrapPorts: (ports) => {
      raw = ports;
      if (moto) return moto.ports;
      return countingPorts(ports, log, options.backend === "memory-6ms" ? AWS_CALL_MS : 0);
    },
    ...(moto
      ? { endpoint: options.endpoint, region: REGION, credentials: CREDENTIALS, names, env: {} }
      : { env: {} }),
    onError: (error, where) => console.error(`[bench] ${where}:`, error),
  });
  try {
    if (moto) {
      // The poller's receives and deletes use the runtime's own SQS client: no option reaches it.
      const client = (runtime.taskConsumer as unknown as { client?: { middlewareStack: unknown } }).client;
      if (!client) throw new Error("cannot reach the poller's SQS client to count its calls");
      instrumentSqs(client, log, moto.deadLetterUrl);
    }
    const watcher = watchInvocations(runtime.taskConsumer, log, !moto);
    // Let receives already in flight (started before the wrappers) come back.
    await sleep(moto ? 1300 : 400);

    const post = poster(runtime.url);
    await post("/workflows", workload.definition);
    log.reset();

    const cpu0 = process.cpuUsage();
    const t0 = Date.now();
    const started = await Promise.all(
      Array.from({ length: workload.executions }, async (_, i) => {
        const at = Date.now();
        const body = await post("/executions", {
          workflow: workload.definition.name,
          input: { ...workload.input, i },
        });
        return { executionId: String(body.executionId), at };
      }),
    );
    const store = raw!.store;
    const finished: Array<{ executionId: string; at: number; finishedAt: number; status: string }> = [];
    for (const execution of started) {
      for (;;) {
        const record = await store.getExecution(execution.executionId);
        if (record && record.status !== "RUNNING" && record.status !== "PENDING") {
          finished.push({ ...execution, finishedAt: record.finishedAt ?? Date.now(), status: record.status });
          break;
        }
        await sleep(moto ? 100 : 10);
      }
    }
    const cpu = process.cpuUsage(cpu0);
    // The last invocations may still be deleting their messages or publishing events.
    for (let waited = 0; watcher.inFlight() > 0 && waited < 10_000; waited += 20) await sleep(20);
    const calls = log.snapshot();
    await options.afterRun?.(
      raw!,
      started.map((e) => e.executionId),
    );
    const lastFinish = Math.max(...finished.map((f) => f.finishedAt));

    const latencies: number[] = [];
    const queueToStart: number[] = [];
    let completed = 0;
    let cancelled = 0;
    let coldBlobGets = 0;
    for (const execution of started) {
      coldBlobGets += await coldGets(raw!, workload, execution.executionId);
      // A map's items are nodes with no events in the history (a map's default): counted from the store.
      completed += await completedMapItems(raw!, workload, execution.executionId);
      const history: HistoryEventLike[] = await store.listHistory(execution.executionId);
      const byNode = new Map<string, { queued?: number; started?: number; done?: number }>();
      for (const event of history) {
        if (event.nodeId === undefined) continue;
        const node = byNode.get(event.nodeId) ?? {};
        byNode.set(event.nodeId, node);
        if (event.type === "NodeQueued") node.queued ??= event.at;
        else if (event.type === "NodeStarted") node.started = event.at;
        else if (event.type === "NodeCompleted") node.done = event.at;
        else if (event.type === "NodeCancelled") cancelled += 1;
      }
      for (const node of byNode.values()) {
        if (node.done === undefined) continue;
        completed += 1;
        if (node.queued !== undefined) latencies.push(node.done - node.queued);
        if (node.queued !== undefined && node.started !== undefined)
          queueToStart.push(node.started - node.queued);
      }
    }
    const e2eMs = lastFinish - t0;
    return {
      workload: workload.name,
      description: workload.description,
      backend: options.backend,
      ...(workload.notInTargets === undefined ? {} : { notInTargets: workload.notInTargets }),
      executions: workload.executions,
      nodesPerExecution: nodesPerExecution(workload),
      totalNodes: workload.executions * nodesPerExecution(workload),
      completedNodes: completed,
      cancelledNodes: cancelled,
      failedExecutions: finished.filter((f) => f.status !== "SUCCEEDED").length,
      e2eMs,
      executionE2eMs: distribution(finished.map((f) => f.finishedAt - f.at)),
      nodesPerSecond: e2eMs > 0 ? (completed * 1000) / e2eMs : 0,
      nodeLatencyMs: distribution(latencies),
      queueToStartMs: distribution(queueToStart),
      processCpuMsPerNode: completed > 0 ? (cpu.user + cpu.system) / 1000 / completed : 0,
      inlineBytes,
      workerTimeoutSeconds,
      calls,
      storage: {
        ...(moto
          ? {
              ddbBytes: storedItemBytes(
                log,
                started.map((e) => e.executionId),
              ),
            }
          : {}),
        s3Bytes: calls.s3.storedBytes,
        coldBlobGets,
      },
    };
  } finally {
    await runtime.stop();
    moto?.clients.destroy();
  }
}

/** The nodes of one execution: the definition's, and the items its map runs (Workload.mapItems). */
export function nodesPerExecution(workload: Workload): number {
  return workload.definition.nodes.length + (workload.mapItems ?? 0);
}

/** The completed items of an execution's maps (their latest attempt's). */
async function completedMapItems(
  ports: EnginePorts,
  workload: Workload,
  executionId: string,
): Promise<number> {
  let completed = 0;
  for (const spec of workload.definition.nodes) {
    if (spec.type !== "map") continue;
    const map = await ports.store.getNode(executionId, spec.id);
    if (!map || map.attempt < 1) continue;
    const items = await ports.store.listMapItems(executionId, spec.id, map.attempt, { statusOnly: true });
    completed += items.filter((item) => item.status === "COMPLETED").length;
  }
  return completed;
}

/**
 * DynamoDB's stored bytes of the executions' items: each item's size and 100 bytes of overhead. An
 * execution's items are in `EX#<id>` and its other node shards' `EX#<id>#<n>` (ids hold no `#`).
 */
function storedItemBytes(log: CallLog, executionIds: readonly string[]): number {
  const prefixes = executionIds.flatMap((id) => [`EX#${id}|`, `EX#${id}#`]);
  let bytes = 0;
  for (const [key, item] of log.knownItems) {
    if (prefixes.some((p) => key.startsWith(p))) bytes += itemSize(item) + 100;
  }
  return bytes;
}

/** GetObject requests of an execution's node runs with no cache (Storage.coldBlobGets). */
async function coldGets(ports: EnginePorts, workload: Workload, executionId: string): Promise<number> {
  const execution = await ports.store.getExecution(executionId);
  const records = new Map((await ports.store.listNodes(executionId)).map((r) => [r.nodeId, r]));
  const specs = workload.definition.nodes;
  const keys = (payload: Payload | undefined) => (payload ? blobsOf(payload).map((b) => b.key) : []);
  const input = keys(execution?.input);
  let gets = 0;
  for (const spec of specs) {
    const record = records.get(spec.id);
    if (record?.status !== "COMPLETED") continue;
    const depIds = record.okDeps.length > 0 ? record.okDeps.map((i) => specs[i]!.id) : (spec.dependsOn ?? []);
    const deps = depIds.flatMap((id) => keys(records.get(id)?.output));
    if (spec.type === "map") {
      // Each item loads its chunk of the list (a blob when over the inline threshold); the map's
      // check loads the items' outputs, inline here.
      const state = record.composite;
      if (state?.kind === "map")
        for (let i = 0; i < state.items; i++) {
          const chunk = state.chunks[Math.floor(i / MAP_LIMITS.chunkSize)];
          gets += keys(chunk).length;
        }
      gets += new Set([...input, ...deps]).size * Math.max(1, record.attempt);
      continue;
    }
    if (spec.type === "merge") {
      // Composed without loading, unless too wide to keep as parts: then loaded whole and written as one blob.
      const output = record.output;
      if (output && "blob" in output && deps.length > 0) gets += new Set(deps).size;
      continue;
    }
    gets += new Set([...input, ...deps]).size * Math.max(1, record.attempt);
  }
  return gets;
}

/** POSTs JSON to the local runtime at `baseUrl`; a status of 300 or more throws, naming the route. */
export function poster(baseUrl: string): (path: string, body: unknown) => Promise<Record<string, unknown>> {
  return async (path, body) => {
    const response = await fetch(`${baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const json = (await response.json()) as Record<string, unknown>;
    if (response.status >= 300) throw new Error(`POST ${path} → ${response.status} ${JSON.stringify(json)}`);
    return json;
  };
}
