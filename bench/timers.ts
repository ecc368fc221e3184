/**
 * `npm run bench -- --timers`: what time costs (issue 26). Four measurements, each of whatever the
 * engine does now (nothing here assumes how the sweeper works; it counts its calls):
 * 1. lateness locally: the real local runtime on memory, its sweeper on its default schedule; how
 *    long after its deadline a callback's timeout fails it, and a `wait` ends (from the history);
 * 2. a sweep with nothing due over 1,000 / 10,000 / 100,000 running executions, each waiting on a
 *    callback with a day's timeout: DynamoDB calls, RCU and WCU of one sweep 30 s, 10 min (their
 *    first checks), 20 min and 1 h on;
 * 3. one execution waiting a day (`wait` 86,400 s, then a `pass`) through 1,440 sweeps a minute
 *    apart: its write units beside the sweeps of an empty store and the same nodes without waiting;
 * 4. a running map: the sweeper's reads, sweeps interleaved with item completions, at two sizes
 *    (linear in the items if the larger costs items-ratio times the smaller, quadratic if its square).
 * 2–4 run the engine on the counting memory ports (memory-ports.ts) on a virtual clock.
 */

import { startLocalRuntime } from "../local/runtime.js";
import { MemoryBlobStore } from "../shared/adapters/memory/blobs.js";
import { MemoryEventPublisher } from "../shared/adapters/memory/events.js";
import { MemoryQueue } from "../shared/adapters/memory/queue.js";
import { MemoryStore } from "../shared/adapters/memory/store.js";
import { randomIds } from "../shared/adapters/system.js";
import { TIMER_LIMITS } from "../shared/domain/timers.js";
import { silentLogger } from "../shared/engine/context.js";
import { Engine } from "../shared/engine/engine.js";
import type { EnginePorts, TaskMessage } from "../shared/ports.js";
import { createTaskRegistry } from "../shared/tasks/builtins.js";
import { VirtualClock } from "../testkit/clock.js";
import { CallLog } from "./calls.js";
import { countingPorts } from "./memory-ports.js";
import { percentile } from "./stats.js";

export interface TimerBenchOptions {
  /** Tiny sizes (tests): a few executions, small maps, fewer sweeps. */
  quick?: boolean;
  log?: (line: string) => void;
}

export interface LatenessResult {
  kind: "callback timeout" | "wait";
  count: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export interface SweepCostPoint {
  running: number;
  /** How the executions were created (the engine's own steps, timed). */
  setupSeconds: number;
  /** Virtual time after the executions began waiting. */
  after: string;
  calls: number;
  readUnits: number;
  writeUnits: number;
  /** Calls per shard of the due index (TIMER_LIMITS.shards). */
  callsPerShard: number;
  /** What the sweep reported it did (executions revisited, timers sent). */
  executionsVisited: number;
  timersSent: number;
}

export interface DayWaitResult {
  sweeps: number;
  /** wait 86,400 s then pass, every sweep of the day included. */
  totalWriteUnits: number;
  /** The same sweeps over an empty store: the per-sweep constant. */
  emptyStoreSweepWriteUnits: number;
  /** total − empty store: what this one execution costs. */
  attributableWriteUnits: number;
  /** A `pass` alone, no sweeps (the workflow without the wait). */
  passOnlyWriteUnits: number;
  /** `wait` 0 s then `pass`, no sweeps: the same nodes' work when nothing waits. */
  noWaitWriteUnits: number;
  /** attributable − noWait: what waiting a day adds beyond its node work (goal ≤ 3). */
  beyondNodeWork: number;
  readUnits: number;
  emptyStoreSweepReadUnits: number;
}

export interface MapSweepPoint {
  items: number;
  sweeps: number;
  /** Messages handled between two sweeps (each sweep 30 s of virtual time after the previous). */
  sweepEvery: number;
  readCalls: number;
  readUnits: number;
  readUnitsPerSweep: number;
  /** The same sweeps over an empty store (the per-sweep constant), and the reads beyond it. */
  emptyStoreReadUnits: number;
  readUnitsBeyondEmpty: number;
  /** The largest read of one sweep, and the items done when it ran. */
  maxSweepReadUnits: number;
  itemsDoneAtMax: number;
  /** Reads of sweeps, sampled: items done → read units of that sweep. */
  series: Array<{ itemsDone: number; readUnits: number }>;
}

export interface TimerBenchResult {
  lateness: LatenessResult[];
  sweepCost: SweepCostPoint[];
  sweepCostNote?: string;
  dayWait: DayWaitResult;
  map: MapSweepPoint[];
  /**
   * readUnitsBeyondEmpty(largest) / readUnitsBeyondEmpty(smallest) against items(largest) /
   * items(smallest): linear within 2× of the items' ratio, quadratic within 2× of its square.
   */
  mapGrowth: {
    itemsRatio: number;
    readsRatio: number;
    /** What the ratio compares: reads beyond the empty store's sweeps, or (none at the smaller) all. */
    basis: "beyond the empty store's" | "in total";
    /** The largest single sweep's reads beyond an empty store's sweep, at the larger map. */
    largestSweepBeyond: number;
    /** "linear" when no sweep reads more than a map check's bound, else by the ratio. */
    verdict: "linear" | "quadratic" | "between";
  };
}

const DDB = "DynamoDB.";

function ddbCalls(log: CallLog): number {
  return Object.entries(log.ops)
    .filter(([name]) => name.startsWith(DDB))
    .reduce((sum, [, stats]) => sum + stats.calls, 0);
}

/** Table and index write units (memory-ports.ts counts both). */
const writeUnits = (log: CallLog) => log.ddb.writeUnits + log.ddb.indexWriteUnits;

// ---------------------------------------------------------------------------------------------
// An engine on the counting memory ports and a virtual clock; a second engine over the same
// adapters, uncounted, sets the scene cheaply.

interface Rig {
  clock: VirtualClock;
  store: MemoryStore;
  queue: MemoryQueue;
  log: CallLog;
  counted: Engine;
  uncounted: Engine;
}

const START = Date.UTC(2026, 0, 5, 9, 0, 0);

function rig(): Rig {
  const clock = new VirtualClock(START);
  const store = new MemoryStore();
  const queue = new MemoryQueue({ clock });
  const ports: EnginePorts = {
    store,
    blobs: new MemoryBlobStore(),
    queue,
    events: new MemoryEventPublisher(),
    clock,
    ids: randomIds,
  };
  const log = new CallLog();
  const tasks = createTaskRegistry([]);
  const options = { logger: silentLogger };
  return {
    clock,
    store,
    queue,
    log,
    counted: new Engine(countingPorts(ports, log), tasks, options),
    uncounted: new Engine(ports, tasks, options),
  };
}

/** Handles visible messages (up to `limit`) with `engine`; returns how many. */
async function drain(r: Rig, engine: Engine, limit = Number.POSITIVE_INFINITY): Promise<number> {
  let handled = 0;
  while (handled < limit) {
    const batch = await r.queue.receive({
      maxMessages: Math.min(10, limit - handled),
      waitSeconds: 0,
      visibilityTimeoutSeconds: 60,
    });
    if (batch.length === 0) break;
    await Promise.all(
      batch.map((m) =>
        engine.handleTask(JSON.parse(m.body) as TaskMessage, { receiveCount: m.receiveCount }),
      ),
    );
    await r.queue.delete(batch.map((m) => m.receiptHandle));
    handled += batch.length;
  }
  return handled;
}

async function register(engine: Engine, definition: object): Promise<void> {
  const result = await engine.registerWorkflow(definition);
  if (!("version" in result)) throw new Error(`bench workflow refused: ${JSON.stringify(result)}`);
}

// ---------------------------------------------------------------------------------------------
// 1. Lateness on the local runtime.

async function measureLateness(quick: boolean): Promise<LatenessResult[]> {
  const runtime = await startLocalRuntime({
    backend: "memory",
    port: 0,
    waitSeconds: 0,
    engineOptions: { logger: silentLogger },
    consoleDir: false,
    env: {},
    onError: (error, where) => console.error(`[bench] ${where}:`, error),
  });
  try {
    const engine = runtime.engine;
    const store = runtime.ports.store;
    for (const s of [1, 2, 3]) {
      await register(engine, {
        name: `bench-callback-${s}`,
        nodes: [{ id: "cb", type: "callback", params: { timeoutSeconds: s }, retry: { maxAttempts: 1 } }],
      });
      await register(engine, {
        name: `bench-wait-${s}`,
        nodes: [{ id: "w", type: "wait", params: { seconds: s } }],
      });
    }
    const callbacks = quick ? 3 : 20;
    const waits = quick ? 3 : 6;
    const started: Array<{ id: string; kind: LatenessResult["kind"]; seconds: number }> = [];
    for (let i = 0; i < callbacks; i++) {
      const seconds = 1 + (i % 3);
      const { executionId } = await engine.createExecution({
        workflow: `bench-callback-${seconds}`,
        input: {},
      });
      started.push({ id: executionId, kind: "callback timeout", seconds });
    }
    for (let i = 0; i < waits; i++) {
      const seconds = 1 + (i % 3);
      const { executionId } = await engine.createExecution({ workflow: `bench-wait-${seconds}`, input: {} });
      started.push({ id: executionId, kind: "wait", seconds });
    }
    // Until every execution ended, or far past every deadline (the sweeper's minute, and more).
    const giveUp = Date.now() + 150_000;
    for (;;) {
      const statuses = await Promise.all(started.map(async (s) => (await store.getExecution(s.id))?.status));
      if (statuses.every((s) => s === "SUCCEEDED" || s === "FAILED" || s === "CANCELLED")) break;
      if (Date.now() > giveUp) throw new Error(`lateness: executions still running: ${statuses.join(", ")}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const late: Record<LatenessResult["kind"], number[]> = { "callback timeout": [], wait: [] };
    for (const s of started) {
      const history = await store.listHistory(s.id);
      const at = (type: string) => history.find((e) => e.type === type && e.nodeId !== undefined)?.at;
      const [from, to] =
        s.kind === "callback timeout"
          ? [at("CallbackWaiting"), at("NodeFailed")]
          : [at("NodeQueued"), at("NodeStarted")];
      if (from === undefined || to === undefined)
        throw new Error(
          `lateness: execution ${s.id} (${s.kind}) lacks its events: ${history.map((e) => e.type).join(", ")}`,
        );
      late[s.kind].push(to - (from + s.seconds * 1000));
    }
    return (Object.keys(late) as Array<LatenessResult["kind"]>).map((kind) => {
      const sorted = [...late[kind]].sort((a, b) => a - b);
      return {
        kind,
        count: sorted.length,
        p50Ms: percentile(sorted, 50),
        p99Ms: percentile(sorted, 99),
        maxMs: sorted.at(-1) ?? 0,
      };
    });
  } finally {
    await runtime.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// 2. A sweep with nothing due.

async function measureSweepCost(
  sizes: readonly number[],
  log: (line: string) => void,
): Promise<SweepCostPoint[]> {
  const points: SweepCostPoint[] = [];
  for (const running of sizes) {
    const r = rig();
    await register(r.uncounted, {
      name: "bench-waiting",
      nodes: [{ id: "cb", type: "callback", params: { timeoutSeconds: 86_400 } }],
    });
    const t0 = performance.now();
    for (let i = 0; i < running; i++) {
      await r.uncounted.createExecution({ workflow: "bench-waiting", input: {} });
      if (i % 500 === 499) await drain(r, r.uncounted);
    }
    await drain(r, r.uncounted);
    const setupSeconds = (performance.now() - t0) / 1000;
    log(`  ${running} running executions waiting (${setupSeconds.toFixed(1)} s)`);
    for (const [after, ms] of [
      ["30 s", 30_000],
      ["10 min", 600_000],
      ["20 min", 1_200_000],
      ["1 h", 3_600_000],
    ] as const) {
      r.clock.advanceTo(START + ms);
      r.log.reset();
      const report = await r.counted.sweep({ force: true });
      const calls = ddbCalls(r.log);
      points.push({
        running,
        setupSeconds,
        after,
        calls,
        readUnits: r.log.ddb.readUnits,
        writeUnits: writeUnits(r.log),
        callsPerShard: calls / TIMER_LIMITS.shards,
        executionsVisited: report.executions,
        timersSent: report.timers,
      });
      // What the sweep queued (a repair, a resend) is handled, uncounted, before the next one.
      await drain(r, r.uncounted);
    }
  }
  return points;
}

// ---------------------------------------------------------------------------------------------
// 3. A day-long wait.

const MINUTE = 60_000;

/** Runs `definition` to its end with a sweep every minute of virtual time, `sweeps` times (0: none). */
async function runWithSweeps(
  definition: object | undefined,
  sweeps: number,
): Promise<{ writeUnits: number; readUnits: number }> {
  const r = rig();
  if (definition) await register(r.uncounted, definition);
  r.log.reset();
  let id: string | undefined;
  if (definition) {
    const name = (definition as { name: string }).name;
    id = (await r.counted.createExecution({ workflow: name, input: {} })).executionId;
    await drain(r, r.counted);
  }
  for (let i = 1; i <= sweeps; i++) {
    r.clock.advanceTo(START + i * MINUTE);
    await r.counted.sweep({ force: true });
    await drain(r, r.counted);
  }
  if (id !== undefined) {
    const status = (await r.store.getExecution(id))?.status;
    if (status !== "SUCCEEDED") throw new Error(`day wait: execution ended ${status}`);
  }
  return { writeUnits: writeUnits(r.log), readUnits: r.log.ddb.readUnits };
}

async function measureDayWait(quick: boolean): Promise<DayWaitResult> {
  const seconds = quick ? 3600 : 86_400;
  // One sweep past the wait's end, so the execution has finished within the run.
  const sweeps = seconds / 60 + 1;
  const waited = await runWithSweeps(
    {
      name: "bench-day-wait",
      nodes: [
        { id: "w", type: "wait", params: { seconds } },
        { id: "after", type: "pass", dependsOn: ["w"], params: { value: 1 } },
      ],
    },
    sweeps,
  );
  const empty = await runWithSweeps(undefined, sweeps);
  const passOnly = await runWithSweeps(
    { name: "bench-pass", nodes: [{ id: "after", type: "pass", params: { value: 1 } }] },
    0,
  );
  const noWait = await runWithSweeps(
    {
      name: "bench-no-wait",
      nodes: [
        { id: "w", type: "wait", params: { seconds: 0 } },
        { id: "after", type: "pass", dependsOn: ["w"], params: { value: 1 } },
      ],
    },
    0,
  );
  const attributable = waited.writeUnits - empty.writeUnits;
  return {
    sweeps,
    totalWriteUnits: waited.writeUnits,
    emptyStoreSweepWriteUnits: empty.writeUnits,
    attributableWriteUnits: attributable,
    passOnlyWriteUnits: passOnly.writeUnits,
    noWaitWriteUnits: noWait.writeUnits,
    beyondNodeWork: attributable - noWait.writeUnits,
    readUnits: waited.readUnits,
    emptyStoreSweepReadUnits: empty.readUnits,
  };
}

// ---------------------------------------------------------------------------------------------
// 4. A running map.

const MAP_BENCH_CONCURRENCY = 100;

async function measureMap(items: number, sweepEvery: number): Promise<MapSweepPoint> {
  const r = rig();
  // The same sweeps, at the same times, over an empty store: what any sweep reads.
  const empty = rig();
  let emptyStoreReadUnits = 0;
  await register(r.uncounted, {
    name: "bench-map-sweeps",
    nodes: [
      {
        id: "items",
        type: "map",
        params: {
          items: "{% [0..input.count - 1] %}",
          task: { type: "noop" },
          maxConcurrency: MAP_BENCH_CONCURRENCY,
        },
      },
    ],
  });
  const { executionId } = await r.uncounted.createExecution({
    workflow: "bench-map-sweeps",
    input: { count: items },
  });
  const series: MapSweepPoint["series"] = [];
  let readCalls = 0;
  let readUnits = 0;
  let sweeps = 0;
  let max = { readUnits: 0, itemsDone: 0 };
  let idle = 0;
  for (let step = 1; ; step++) {
    const handled = await drain(r, r.uncounted, sweepEvery);
    const execution = await r.store.getExecution(executionId);
    if (execution?.status !== "RUNNING") {
      if (execution?.status !== "SUCCEEDED") throw new Error(`map: execution ended ${execution?.status}`);
      break;
    }
    r.clock.advanceTo(START + step * 30_000);
    r.log.reset();
    await r.counted.sweep({ force: true });
    sweeps++;
    empty.clock.advanceTo(START + step * 30_000);
    empty.log.reset();
    await empty.counted.sweep({ force: true });
    emptyStoreReadUnits += empty.log.ddb.readUnits;
    const reads = Object.entries(r.log.ops)
      .filter(([name]) => name.startsWith(DDB) && /Get|Query|Scan/.test(name))
      .reduce((sum, [, stats]) => sum + stats.calls, 0);
    readCalls += reads;
    readUnits += r.log.ddb.readUnits;
    const itemsDone = (await r.store.listMapItems(executionId, "items", 1, { statusOnly: true })).filter(
      (item) => item.status === "COMPLETED",
    ).length;
    series.push({ itemsDone, readUnits: r.log.ddb.readUnits });
    if (r.log.ddb.readUnits > max.readUnits) max = { readUnits: r.log.ddb.readUnits, itemsDone };
    idle = handled === 0 ? idle + 1 : 0;
    if (idle > 100)
      throw new Error(`map: no message for ${idle} sweeps, ${itemsDone} of ${items} items done`);
  }
  const sampleEvery = Math.max(1, Math.ceil(series.length / 10));
  return {
    items,
    sweeps,
    sweepEvery,
    readCalls,
    readUnits,
    readUnitsPerSweep: sweeps === 0 ? 0 : readUnits / sweeps,
    emptyStoreReadUnits,
    readUnitsBeyondEmpty: readUnits - emptyStoreReadUnits,
    maxSweepReadUnits: max.readUnits,
    itemsDoneAtMax: max.itemsDone,
    series: series.filter((_, i) => i % sampleEvery === sampleEvery - 1 || i === series.length - 1),
  };
}

// ---------------------------------------------------------------------------------------------

/** Creating executions through the engine faster than this per second lets 100,000 fit the run. */
const SETUP_BUDGET_SECONDS = 150;

export async function measureTimers(options: TimerBenchOptions = {}): Promise<TimerBenchResult> {
  const quick = options.quick ?? false;
  const log = options.log ?? (() => {});
  log("timers: lateness on the local runtime (memory, sweeper every minute)");
  const lateness = await measureLateness(quick);
  log("timers: one sweep with nothing due");
  const sizes = quick ? [20, 200] : [1000, 10_000];
  const sweepCost = await measureSweepCost(sizes, log);
  let sweepCostNote: string | undefined;
  if (!quick) {
    // 100,000 only if creating them through the engine fits the run (extrapolated from 10,000).
    const tenK = sweepCost.find((p) => p.running === 10_000);
    const projected = (tenK?.setupSeconds ?? Number.POSITIVE_INFINITY) * 10;
    if (projected <= SETUP_BUDGET_SECONDS) sweepCost.push(...(await measureSweepCost([100_000], log)));
    else
      sweepCostNote = `100,000 not run: creating them through the engine would take ~${projected.toFixed(0)} s here (10,000 took ${tenK?.setupSeconds.toFixed(1)} s)`;
  }
  log("timers: a day-long wait");
  const dayWait = await measureDayWait(quick);
  log("timers: a running map");
  const mapSizes = quick ? [50, 200] : [2000, 20_000];
  const map: MapSweepPoint[] = [];
  for (const items of mapSizes) {
    const t0 = performance.now();
    map.push(await measureMap(items, quick ? 20 : 200));
    log(`  map of ${items}: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  const [small, large] = [map[0], map.at(-1)];
  const itemsRatio = small && large ? large.items / small.items : 1;
  // Beyond the per-sweep constant; when the smaller map reads nothing beyond it, the totals.
  const readsRatio =
    !small || !large
      ? 1
      : small.readUnitsBeyondEmpty > 0
        ? large.readUnitsBeyondEmpty / small.readUnitsBeyondEmpty
        : large.readUnits / Math.max(1, small.readUnits);
  // A sweep that read a map's items would read more the more items are done; one that only checks
  // the waiting map reads at most its lanes' first items (≤ maxConcurrency) whatever the items:
  // bounded per sweep is linear in the items over the map's run, whatever the ratio of two runs
  // whose shorter one may end before any check (then it reads nothing beyond the constant).
  const largestBeyond = large ? large.maxSweepReadUnits - large.emptyStoreReadUnits / large.sweeps : 0;
  const boundedPerSweep = largestBeyond <= MAP_BENCH_CONCURRENCY + 4;
  const verdict = boundedPerSweep
    ? "linear"
    : readsRatio <= itemsRatio * 2
      ? "linear"
      : readsRatio >= itemsRatio ** 2 / 2
        ? "quadratic"
        : "between";
  return {
    lateness,
    sweepCost,
    ...(sweepCostNote ? { sweepCostNote } : {}),
    dayWait,
    map,
    mapGrowth: {
      itemsRatio,
      readsRatio,
      basis: small && small.readUnitsBeyondEmpty <= 0 ? "in total" : "beyond the empty store's",
      largestSweepBeyond: largestBeyond,
      verdict,
    },
  };
}

const n = (x: number, digits = 0) => x.toLocaleString("en-US", { maximumFractionDigits: digits });

export function renderTimers(result: TimerBenchResult): string[] {
  const d = result.dayWait;
  const g = result.mapGrowth;
  return [
    "## Lateness locally (npm start's runtime on memory, its sweeper every minute)",
    "",
    "Event time of the timeout's NodeFailed minus CallbackWaiting + timeoutSeconds; a wait's NodeStarted minus NodeQueued + seconds. Goal: within 1 s.",
    "",
    "| deadline | count | p50 ms | p99 ms | max ms |",
    "|---|---|---|---|---|",
    ...result.lateness.map(
      (l) => `| ${l.kind} | ${l.count} | ${n(l.p50Ms)} | ${n(l.p99Ms)} | ${n(l.maxMs)} |`,
    ),
    "",
    "## Sweep with nothing due",
    "",
    `Running executions each waiting on a callback with a day's timeout; one forced sweep at each time. At 10 min each execution's first check after its start is due (a look at what its start may have left undone, once per execution); after that nothing is. DynamoDB calls, RCU, WCU (table + index) per sweep; ${TIMER_LIMITS.shards} shards. Goal: flat, ≤ 1 call per shard.`,
    "",
    "| running executions | sweep after | DynamoDB calls | calls per shard | RCU | WCU | executions revisited |",
    "|---|---|---|---|---|---|---|",
    ...result.sweepCost.map(
      (p) =>
        `| ${n(p.running)} | ${p.after} | ${n(p.calls)} | ${n(p.callsPerShard, 2)} | ${n(p.readUnits, 1)} | ${n(p.writeUnits)} | ${n(p.executionsVisited)} |`,
    ),
    ...(result.sweepCostNote ? ["", result.sweepCostNote] : []),
    "",
    "## A day-long wait",
    "",
    `\`wait\` ${d.sweeps - 1 === 1440 ? "86,400" : n((d.sweeps - 1) * 60)} s then \`pass\`, with a sweep every minute of virtual time (${n(d.sweeps)} sweeps). Goal: ≤ 3 write units beyond its node work.`,
    "",
    "| figure | write units |",
    "|---|---|",
    `| the whole run, every sweep included | ${n(d.totalWriteUnits)} |`,
    `| the same sweeps over an empty store (the per-sweep constant) | ${n(d.emptyStoreSweepWriteUnits)} |`,
    `| attributable to the execution (difference) | ${n(d.attributableWriteUnits)} |`,
    `| node work: \`wait\` 0 s then \`pass\`, no sweeps | ${n(d.noWaitWriteUnits)} |`,
    `| the workflow without the wait (\`pass\` alone) | ${n(d.passOnlyWriteUnits)} |`,
    `| **beyond its node work** | **${n(d.beyondNodeWork)}** |`,
    "",
    `Reads: ${n(d.readUnits, 1)} RCU over the run, ${n(d.emptyStoreSweepReadUnits, 1)} of them the empty store's sweeps would make.`,
    "",
    "## A running map: the sweeper's reads",
    "",
    "`noop` items, maxConcurrency 100; a forced sweep every N handled messages, 30 s of virtual time apart.",
    "",
    "| items | sweep every | sweeps | sweeper read calls | sweeper RCU | RCU per sweep | empty store's sweeps RCU | RCU beyond them | largest sweep RCU (at items done) |",
    "|---|---|---|---|---|---|---|---|---|",
    ...result.map.map(
      (m) =>
        `| ${n(m.items)} | ${m.sweepEvery} | ${m.sweeps} | ${n(m.readCalls)} | ${n(m.readUnits, 1)} | ${n(m.readUnitsPerSweep, 1)} | ${n(m.emptyStoreReadUnits, 1)} | ${n(m.readUnitsBeyondEmpty, 1)} | ${n(m.maxSweepReadUnits, 1)} (${n(m.itemsDoneAtMax)}) |`,
    ),
    "",
    `${n(g.itemsRatio)}× the items cost ${n(g.readsRatio, 1)}× the sweeper's reads ${g.basis} (linear ≈ ${n(g.itemsRatio)}×, quadratic ≈ ${n(g.itemsRatio ** 2)}×); the largest sweep read ${n(g.largestSweepBeyond, 1)} RCU beyond an empty store's sweep (a check of the waiting map reads at most its lanes' first items, maxConcurrency ${MAP_BENCH_CONCURRENCY}): **${g.verdict}**.`,
    "",
    ...result.map.flatMap((m) => [
      `Map of ${n(m.items)}, sampled sweeps (items done → RCU of that sweep): ${m.series.map((s) => `${n(s.itemsDone)} → ${n(s.readUnits, 1)}`).join("; ")}`,
      "",
    ]),
  ];
}
