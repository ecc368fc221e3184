/**
 * `npm run bench` — the weft benchmark. Flags: --workload NAME (chain, fanout, random-dag, many-small),
 * --backend memory|memory-6ms|moto, --quick (small sizes), --no-write (print only).
 * Writes bench/results/latest.json, latest.md and YYYY-MM-DD.md.
 */
import { mkdir, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startMoto } from "../tools/emulators/moto.js";
import { FORMULAS, PRICES } from "./cost.js";
import { type EngineCpuResult, measureEngineCpu } from "./engine-cpu.js";
import { type BenchReport, modeledCosts, type ResultRow, renderMarkdown, targets, toRow } from "./report.js";
import { type BackendName, runWorkload } from "./run.js";
import { WORKLOAD_NAMES, workloads } from "./workloads.js";

const BACKENDS: readonly BackendName[] = ["memory", "memory-6ms", "moto"];

export interface BenchOptions {
  quick: boolean;
  workloads?: readonly string[];
  backends: readonly BackendName[];
  concurrency?: number;
  batchSize?: number;
  log?: (line: string) => void;
}

export async function runBench(options: BenchOptions): Promise<BenchReport> {
  const log = options.log ?? (() => {});
  const concurrency = options.concurrency ?? 8;
  const batchSize = options.batchSize ?? 10;
  const selected = workloads(options.quick).filter(
    (w) => options.workloads === undefined || options.workloads.includes(w.name),
  );
  const results: ResultRow[] = [];
  const engineCpu: EngineCpuResult[] = [];
  for (const workload of selected) {
    log(`engine-only CPU: ${workload.name}`);
    await measureEngineCpu(workload); // warm-up (JIT, graph caches)
    engineCpu.push(await measureEngineCpu(workload));
  }
  for (const backend of options.backends) {
    const moto = backend === "moto" ? await startMoto() : undefined;
    try {
      for (const workload of selected) {
        log(`${backend}: ${workload.name} (${workload.description})`);
        const run = await runWorkload(workload, {
          backend,
          concurrency,
          batchSize,
          ...(moto ? { endpoint: moto.endpoint } : {}),
        });
        results.push(toRow(run));
        log(`  ${run.completedNodes} nodes in ${(run.e2eMs / 1000).toFixed(2)} s`);
      }
    } finally {
      await moto?.stop();
    }
  }
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
  };
}

export async function writeReport(report: BenchReport, dir: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  const markdown = renderMarkdown(report);
  await writeFile(path.join(dir, "latest.json"), `${JSON.stringify(report, null, 2)}\n`);
  await writeFile(path.join(dir, "latest.md"), markdown);
  await writeFile(path.join(dir, `${report.date.slice(0, 10)}.md`), markdown);
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
  return {
    quick: argv.includes("--quick"),
    write: !argv.includes("--no-write"),
    ...(workload === undefined ? {} : { workloads: [workload] }),
    backends: (backend === undefined ? BACKENDS : [backend]) as BackendName[],
  };
}

const isMain =
  process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const args = parseArgs(process.argv.slice(2));
  const started = Date.now();
  const report = await runBench({ ...args, log: (line) => console.error(`[bench] ${line}`) });
  const markdown = renderMarkdown(report);
  if (args.write)
    await writeReport(report, path.join(path.dirname(fileURLToPath(import.meta.url)), "results"));
  console.log(markdown);
  console.error(`[bench] done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  process.exit(0);
}
