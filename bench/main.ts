/**
 * `npm run bench` — the weft benchmark. Flags: --workload NAME (chain, fanout, random-dag, many-small,
 * large-payloads, map, flow-control), --backend memory|memory-6ms|moto, --quick (small sizes), --no-write (print only),
 * --inline-bytes N (the engine's inline threshold for the workloads; default PAYLOAD_LIMITS.inlineBytes),
 * --sweep (only the inline-threshold sweep, sweep.ts), --no-sweep, --sizes 1,2,4 (the sweep's output
 * sizes in KiB), --no-worker-timeouts (no chain under a 15-minute worker beside the deployed 300 s),
 * --no-cli (no timing of the `weft` command's startup), --cli-only (only that: cli-latest.json and .md),
 * --expressions-only (only the cost of one expression evaluation, expressions.ts: expressions-latest.*),
 * --timers (only what time costs, timers.ts: lateness, sweeps, a day-long wait, a map: timers-latest.*),
 * --cold-start (only the functions' bundles: bytes, module load, packages, cold-start.ts: cold-start-latest.*),
 * --capacity (only the load runs by partition and the capacity table, capacity-main.ts: capacity-latest.*;
 * --capacity-sizes=starts=500,width=500,… for other sizes than the issue's).
 * Without --workload the full run ends with the sweep.
 * Writes bench/results/latest.json, latest.md and YYYY-MM-DD.md (--sweep: sweep-latest.json and .md;
 * --inline-bytes N other than the default: inline-N-latest.json and .md).
 */

import { mkdir, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { PAYLOAD_LIMITS } from "../shared/domain/payload.js";
import { DEFAULT_WORKER_TIMEOUT_SECONDS } from "../shared/engine/worker-time.js";
import { startMoto } from "../tools/emulators/moto.js";
import { capacityMarkdown, measureCapacity, parseCapacitySizes, writeCapacity } from "./capacity-main.js";
import { type CliStartupResult, measureCliStartup } from "./cli-startup.js";
import {
  type ColdStartResult,
  measureColdStart,
  renderColdStart,
  renderColdStartComparison,
} from "./cold-start.js";
import { compareFiles } from "./compare.js";
import { FORMULAS, PRICES } from "./cost.js";
import { type EngineCpuResult, measureEngineCpu } from "./engine-cpu.js";
import { type ExpressionCostResult, measureExpressionCost, renderExpressionCost } from "./expressions.js";
import { mapComparison } from "./map.js";
import {
  type BenchReport,
  measuredBackend,
  modeledCosts,
  type ResultRow,
  renderMarkdown,
  targets,
  toRow,
} from "./report.js";
import { type BackendName, runWorkload } from "./run.js";
import { SWEEP_SIZES_KIB, sweepResult, sweepRuns } from "./sweep.js";
import { measureTimers, renderTimers } from "./timers.js";
import { OTHER_WORKER_TIMEOUTS, workerTimeoutComparison } from "./worker-timeouts.js";
import { mapOf, WORKLOAD_NAMES, type Workload, workloads } from "./workloads.js";

const BACKENDS: readonly BackendName[] = ["memory", "memory-6ms", "moto"];

/**
 * Moto answers one request at a time (a 10,000-item map takes it over 15 minutes): there the map
 * runs 1,000 items. Its figures are per item, and its fixed cost (the map's own writes) is spread
 * over the items, so they move by about 10 / items per item.
 */
const MOTO_MAP_ITEMS = 1000;

function forBackend(workload: Workload, backend: BackendName): Workload {
  return backend === "moto" && workload.mapItems !== undefined && workload.mapItems > MOTO_MAP_ITEMS
    ? mapOf(MOTO_MAP_ITEMS)
    : workload;
}

export interface BenchOptions {
  quick: boolean;
  workloads?: readonly string[];
  backends: readonly BackendName[];
  concurrency?: number;
  batchSize?: number;
  /** The engine's inline threshold for the workloads (EngineOptions.payloads.inlineBytes). */
  inlineBytes?: number;
  /** Also run the inline-threshold sweep (sweep.ts) on the same backends. */
  sweep?: boolean;
  /** Run only the sweep: no workloads, no engine CPU. */
  sweepOnly?: boolean;
  /** The sweep's output sizes, KiB (default SWEEP_SIZES_KIB). */
  sweepSizesKib?: readonly number[];
  /**
   * Also run the chain with a 15-minute worker (as benchmarked before the deployed default was
   * modeled), beside the main runs' deployed default of 300 s (default true; not with sweepOnly).
   */
  workerTimeouts?: boolean;
  /** Also time the `weft` command's startup (cli-startup.ts; `npm run bench` does unless --no-cli). */
  cliStartup?: boolean;
  log?: (line: string) => void;
}

export async function runBench(options: BenchOptions): Promise<BenchReport> {
  const log = options.log ?? (() => {});
  const concurrency = options.concurrency ?? 8;
  const batchSize = options.batchSize ?? 10;
  const inlineBytes = options.inlineBytes ?? PAYLOAD_LIMITS.inlineBytes;
  const selected = options.sweepOnly
    ? []
    : workloads(options.quick).filter(
        (w) => options.workloads === undefined || options.workloads.includes(w.name),
      );
  const sweep =
    options.sweep || options.sweepOnly
      ? sweepRuns(options.quick, options.sweepSizesKib ?? SWEEP_SIZES_KIB)
      : [];
  const results: ResultRow[] = [];
  const sweepRows: ResultRow[] = [];
  // The chain again under the other worker timeouts (report.workerTimeouts).
  const otherWorkers = options.workerTimeouts === false ? [] : selected.filter((w) => w.name === "chain");
  const workerRows: ResultRow[] = [];
  const engineCpu: EngineCpuResult[] = [];
  for (const workload of selected) {
    log(`engine-only CPU: ${workload.name}`);
    await measureEngineCpu(workload, { inlineBytes }); // warm-up (JIT, graph caches)
    engineCpu.push(await measureEngineCpu(workload, { inlineBytes }));
  }
  for (const backend of options.backends) {
    const moto = backend === "moto" ? await startMoto() : undefined;
    try {
      const runs: Array<{
        workload: (typeof selected)[number];
        inlineBytes: number;
        into: ResultRow[];
        workerTimeoutSeconds?: number;
      }> = [
        ...selected.map((workload) => ({
          workload: forBackend(workload, backend),
          inlineBytes,
          into: results,
        })),
        ...OTHER_WORKER_TIMEOUTS.flatMap((workerTimeoutSeconds) =>
          otherWorkers.map((workload) => ({ workload, inlineBytes, into: workerRows, workerTimeoutSeconds })),
        ),
        ...sweep.map((s) => ({ workload: s.workload, inlineBytes: s.inlineBytes, into: sweepRows })),
      ];
      for (const { workload, inlineBytes, into, workerTimeoutSeconds } of runs) {
        log(
          `${backend}: ${workload.name} (${workload.description}; inline ≤ ${inlineBytes} bytes${workerTimeoutSeconds === undefined ? "" : `; worker timeout ${workerTimeoutSeconds} s`})`,
        );
        const run = await runWorkload(workload, {
          backend,
          concurrency,
          batchSize,
          inlineBytes,
          ...(workerTimeoutSeconds === undefined ? {} : { workerTimeoutSeconds }),
          ...(moto ? { endpoint: moto.endpoint } : {}),
        });
        into.push(toRow(run));
        log(`  ${run.completedNodes} nodes in ${(run.e2eMs / 1000).toFixed(2)} s`);
      }
    } finally {
      await moto?.stop();
    }
  }
  let expressionCost: ExpressionCostResult[] | undefined;
  if (!options.sweepOnly) {
    log("expressions: in the caller's thread and isolated");
    expressionCost = await measureExpressionCost({ quick: options.quick });
  }
  let cliStartup: CliStartupResult[] | undefined;
  if (options.cliStartup === true && !options.sweepOnly) {
    log("CLI startup: weft --help, weft status");
    cliStartup = await measureCliStartup({ runs: options.quick ? 5 : 20 });
  }
  const sweepOn = measuredBackend(sweepRows);
  const maps = mapComparison(
    results,
    selected.flatMap((w) =>
      w.mapItems === undefined
        ? []
        : [
            {
              workload: w.name,
              items: w.mapItems,
              lanes: w.mapLanes ?? 1,
              itemsOn: Object.fromEntries(
                BACKENDS.map((backend) => [backend, forBackend(w, backend).mapItems ?? w.mapItems!]),
              ),
            },
          ],
    ),
  );
  const cpu = os.cpus()[0];
  return {
    date: new Date().toISOString(),
    node: process.version,
    cpu: cpu?.model ?? "unknown",
    cores: os.cpus().length,
    platform: `${os.platform()} ${os.arch()}`,
    quick: options.quick,
    settings: {
      concurrency,
      batchSize,
      inlineBytes,
      workerTimeoutSeconds: DEFAULT_WORKER_TIMEOUT_SECONDS,
      sweeper: "sweeper off (a per-minute backstop, not per-node work)",
      capacityModel:
        "DynamoDB write/read units are MODELED from item sizes by DynamoDB's rules (bench/capacity.ts): moto answers ReturnConsumedCapacity with fixed placeholders (1 per PutItem, 0.5 per UpdateItem whatever the size, nothing for transactions), so its reported sum is kept in the JSON (calls.ddb.reportedUnits) only for reference. Index (GSI) write units are included.",
      memoryCounts:
        "the memory backend makes no AWS calls; its counts are the calls the AWS adapters would make for the same port calls, with capacity floored at 1 WCU per write and 1 RCU per item read (bench/memory-ports.ts). The moto rows are measured with SDK middleware.",
    },
    prices: PRICES,
    formulas: FORMULAS,
    results,
    modeled: modeledCosts(results),
    engineCpu,
    targets: targets(results, engineCpu),
    ...(workerRows.length > 0 ? { workerTimeouts: workerTimeoutComparison(results, workerRows) } : {}),
    ...(maps ? { map: maps } : {}),
    ...(cliStartup ? { cliStartup } : {}),
    ...(expressionCost ? { expressionCost } : {}),
    ...(sweep.length > 0 && sweepOn !== undefined
      ? { sweep: sweepResult(options.quick, sweep, sweepRows, modeledCosts(sweepRows), sweepOn) }
      : {}),
  };
}

/** Writes `<name>.json` and `<name>.md`, and with `dated` a YYYY-MM-DD.md copy. */
export async function writeReport(
  report: BenchReport,
  dir: string,
  options: { name?: string; dated?: boolean } = {},
): Promise<string> {
  const name = options.name ?? "latest";
  await mkdir(dir, { recursive: true });
  const markdown = renderMarkdown(report);
  await writeFile(path.join(dir, `${name}.json`), `${JSON.stringify(report, null, 2)}\n`);
  await writeFile(path.join(dir, `${name}.md`), markdown);
  if (options.dated ?? true) await writeFile(path.join(dir, `${report.date.slice(0, 10)}.md`), markdown);
  return markdown;
}

function parseArgs(argv: readonly string[]) {
  const value = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : argv.find((a) => a.startsWith(`${flag}=`))?.slice(flag.length + 1);
  };
  const workload = value("--workload");
  const backend = value("--backend");
  if (workload !== undefined && !(WORKLOAD_NAMES as readonly string[]).includes(workload))
    throw new Error(`--workload must be one of ${WORKLOAD_NAMES.join(", ")}`);
  if (backend !== undefined && !(BACKENDS as readonly string[]).includes(backend))
    throw new Error(`--backend must be one of ${BACKENDS.join(", ")}`);
  const inline = value("--inline-bytes");
  const inlineBytes = inline === undefined ? undefined : Number(inline);
  if (inlineBytes !== undefined && !(Number.isInteger(inlineBytes) && inlineBytes >= 0))
    throw new Error("--inline-bytes must be a whole number of bytes");
  const sizes = value("--sizes");
  const sweepSizesKib = sizes?.split(",").map(Number);
  if (sweepSizesKib?.some((kib) => !(Number.isInteger(kib) && kib >= 1)))
    throw new Error("--sizes must be whole numbers of KiB, comma-separated (e.g. 1,2,4,8)");
  const sweepOnly = argv.includes("--sweep");
  return {
    quick: argv.includes("--quick"),
    write: !argv.includes("--no-write"),
    ...(workload === undefined ? {} : { workloads: [workload] }),
    backends: (backend === undefined ? BACKENDS : [backend]) as BackendName[],
    ...(inlineBytes === undefined ? {} : { inlineBytes }),
    sweepOnly,
    sweep: sweepOnly || (workload === undefined && !argv.includes("--no-sweep")),
    ...(sweepSizesKib === undefined ? {} : { sweepSizesKib }),
    workerTimeouts: !argv.includes("--no-worker-timeouts"),
    cliStartup: !argv.includes("--no-cli"),
  };
}

const isMain =
  process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain && process.argv.includes("--cli-only")) {
  // Only the CLI's startup (cli-startup.ts): bench/results/cli-latest.json and .md.
  const cliStartup = await measureCliStartup();
  const lines = [
    "| command | runs | min ms | median ms | p90 ms | median over node ms |",
    "|---|---|---|---|---|---|",
    ...cliStartup.map(
      (c) =>
        `| ${c.command} | ${c.runs} | ${c.minMs.toFixed(0)} | ${c.medianMs.toFixed(0)} | ${c.p90Ms.toFixed(0)} | ${c.overNodeMs.toFixed(0)} |`,
    ),
  ];
  const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), "results");
  await mkdir(dir, { recursive: true });
  const when = { date: new Date().toISOString(), node: process.version, cores: os.cpus().length };
  await writeFile(path.join(dir, "cli-latest.json"), `${JSON.stringify({ ...when, cliStartup }, null, 2)}\n`);
  await writeFile(
    path.join(dir, "cli-latest.md"),
    `# CLI startup, ${when.date} (Node ${when.node})\n\n${lines.join("\n")}\n`,
  );
  console.log(lines.join("\n"));
  process.exit(0);
} else if (isMain && process.argv.includes("--expressions-only")) {
  // Only what one expression evaluation costs (expressions.ts): bench/results/expressions-latest.*.
  const expressionCost = await measureExpressionCost({ quick: process.argv.includes("--quick") });
  const lines = renderExpressionCost(expressionCost);
  const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), "results");
  await mkdir(dir, { recursive: true });
  const when = { date: new Date().toISOString(), node: process.version, cores: os.cpus().length };
  await writeFile(
    path.join(dir, "expressions-latest.json"),
    `${JSON.stringify({ ...when, expressionCost }, null, 2)}\n`,
  );
  await writeFile(
    path.join(dir, "expressions-latest.md"),
    `# Expression evaluation, ${when.date} (Node ${when.node})\n\n${lines.join("\n")}\n`,
  );
  console.log(lines.join("\n"));
  process.exit(0);
} else if (isMain && process.argv.includes("--compare")) {
  // Two runs side by side with Step Functions (compare.ts): --compare BEFORE.json AFTER.json.
  const at = process.argv.indexOf("--compare");
  const [beforePath, afterPath] = [process.argv[at + 1], process.argv[at + 2]];
  if (!beforePath || !afterPath) throw new Error("--compare takes two result files: BEFORE.json AFTER.json");
  const lines = await compareFiles(beforePath, afterPath);
  const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), "results");
  await writeFile(
    path.join(dir, "compare-latest.md"),
    `# Before and after, with Step Functions\n\n${lines.join("\n")}\n`,
  );
  console.log(lines.join("\n"));
  process.exit(0);
} else if (isMain && process.argv.includes("--timers")) {
  // Only what time costs (timers.ts): bench/results/timers-latest.json and .md.
  const started = Date.now();
  const timers = await measureTimers({
    quick: process.argv.includes("--quick"),
    log: (line) => console.error(`[bench] ${line}`),
  });
  const lines = renderTimers(timers);
  const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), "results");
  await mkdir(dir, { recursive: true });
  const when = { date: new Date().toISOString(), node: process.version, cores: os.cpus().length };
  await writeFile(path.join(dir, "timers-latest.json"), `${JSON.stringify({ ...when, timers }, null, 2)}\n`);
  await writeFile(
    path.join(dir, "timers-latest.md"),
    `# Timers, ${when.date} (Node ${when.node}, ${when.cores} cores)\n\n${lines.join("\n")}\n`,
  );
  console.log(lines.join("\n"));
  console.error(`[bench] done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  process.exit(0);
} else if (isMain && process.argv.includes("--capacity")) {
  // Only DynamoDB use by partition and the capacity table (capacity-main.ts): capacity-latest.*.
  const sizes = process.argv.find((a) => a.startsWith("--capacity-sizes="));
  const capacity = await measureCapacity({
    quick: process.argv.includes("--quick"),
    ...(sizes === undefined ? {} : { sizes: parseCapacitySizes(sizes.slice("--capacity-sizes=".length)) }),
    log: (line) => console.error(`[bench] ${line}`),
  });
  if (!process.argv.includes("--no-write"))
    await writeCapacity(capacity, path.join(path.dirname(fileURLToPath(import.meta.url)), "results"));
  console.log(capacityMarkdown(capacity));
  process.exit(0);
} else if (isMain && process.argv.includes("--cold-start")) {
  // Only the functions' bundles (cold-start.ts): bench/results/cold-start-latest.json and .md.
  const coldStart = await measureColdStart({
    quick: process.argv.includes("--quick"),
    log: (line) => console.error(`[bench] ${line}`),
  });
  const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), "results");
  // The baseline, when kept: the bundles before issue 27's cuts.
  const before = await readFile(path.join(dir, "cold-start-before.json"), "utf8").then(
    (text) => JSON.parse(text) as ColdStartResult,
    () => undefined,
  );
  const lines = [
    ...renderColdStart(coldStart),
    ...(before === undefined
      ? []
      : ["", "## Before and now", "", ...renderColdStartComparison(before, coldStart)]),
  ];
  if (!process.argv.includes("--no-write")) {
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, "cold-start-latest.json"), `${JSON.stringify(coldStart, null, 2)}\n`);
    await writeFile(
      path.join(dir, "cold-start-latest.md"),
      `# Cold start of the function bundles, ${coldStart.date} (Node ${coldStart.node}, ${coldStart.cores} cores)\n\n${lines.join("\n")}\n`,
    );
  }
  console.log(lines.join("\n"));
  process.exit(0);
} else if (isMain) {
  const args = parseArgs(process.argv.slice(2));
  const started = Date.now();
  const report = await runBench({ ...args, log: (line) => console.error(`[bench] ${line}`) });
  const markdown = renderMarkdown(report);
  if (args.write)
    await writeReport(
      report,
      path.join(path.dirname(fileURLToPath(import.meta.url)), "results"),
      // A run at another threshold than the engine's default does not replace latest.*.
      args.sweepOnly
        ? { name: "sweep-latest", dated: false }
        : args.inlineBytes !== undefined && args.inlineBytes !== PAYLOAD_LIMITS.inlineBytes
          ? { name: `inline-${args.inlineBytes}-latest`, dated: false }
          : {},
    );
  console.log(markdown);
  console.error(`[bench] done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  process.exit(0);
}
