/**
 * Two benchmark runs side by side, with Step Functions beside them:
 *
 *   npm run bench -- --compare BEFORE.json AFTER.json
 *
 * Per workload (counts on moto when the run has it, else on the counting in-memory ports; the
 * modeled $ with Lambda as measured on memory-6ms): DynamoDB write units (table + indexes) per node and $ per million nodes before and
 * after; what Step Functions bills for the same work — Standard at $25 per million transitions, one
 * per node; Express per execution, a request plus its duration billed at its minimum (100 ms of 64
 * MB: the bench's nodes do nothing, so no Express run of them is longer) — per node and per
 * execution, and the ratios. Reads only the two files: anyone can re-run it on any two results.
 */
import { readFile } from "node:fs/promises";
import { stepFunctionsExpressUsd } from "../shared/domain/cost-model.js";
import { PRICES } from "../shared/domain/prices.js";

interface RunFile {
  date: string;
  results: Array<{
    workload: string;
    backend: string;
    nodesPerExecution: number;
    totalNodes: number;
    calls: { ddb: { writeUnits: number; indexWriteUnits: number } };
  }>;
  modeled: Array<{ workload: string; total: number }>;
}

interface Row {
  workload: string;
  nodesPerExecution: number;
  writeUnits?: number;
  usd?: number;
}

/** The backend a run's counts are taken from: moto when it ran, else the in-memory ports' count. */
function countedOn(run: RunFile): string {
  const backends = new Set(run.results.map((r) => r.backend));
  return ["moto", "memory-6ms", "memory"].find((b) => backends.has(b)) ?? "moto";
}

function rows(run: RunFile): Map<string, Row> {
  const out = new Map<string, Row>();
  const on = countedOn(run);
  for (const r of run.results) {
    if (r.backend !== on) continue;
    out.set(r.workload, {
      workload: r.workload,
      nodesPerExecution: r.nodesPerExecution,
      writeUnits: (r.calls.ddb.writeUnits + r.calls.ddb.indexWriteUnits) / r.totalNodes,
    });
  }
  for (const m of run.modeled) {
    const row = out.get(m.workload);
    if (row) row.usd = m.total;
  }
  return out;
}

const fixed = (n: number | undefined, digits = 2) => (n === undefined ? "–" : n.toFixed(digits));

/** The comparison as markdown lines. */
export function renderComparison(before: RunFile, after: RunFile): string[] {
  const a = rows(before);
  const b = rows(after);
  const expressPerExecution = stepFunctionsExpressUsd(100) * 1e6;
  const standardPerNode = PRICES.stepFunctionsStandardPerMillionTransitions;
  const lines = [
    `Before: ${before.date}, counted on ${countedOn(before)}; after: ${after.date}, counted on ${countedOn(after)} (the in-memory ports count the calls the AWS adapters would make, bench/memory-ports.ts). $ per million nodes with Lambda as measured at 6 ms per AWS call (memory-6ms). Step Functions Standard: $${standardPerNode} per million transitions, one per node. Express: $${expressPerExecution.toFixed(3)} per million executions (a request and 100 ms of 64 MB, its minimum), per node = per execution ÷ nodes per execution.`,
    "",
    "| workload | nodes / execution | write units / node before | after | $ / M nodes before | after | $ / M executions after | SFN Standard $ / M nodes | SFN Standard ÷ weft | SFN Express $ / M nodes | weft ÷ SFN Express |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
  ];
  for (const [name, now] of b) {
    const was = a.get(name);
    const perExecution = now.usd === undefined ? undefined : now.usd * now.nodesPerExecution;
    const expressPerNode = expressPerExecution / now.nodesPerExecution;
    lines.push(
      `| ${name} | ${now.nodesPerExecution} | ${fixed(was?.writeUnits)} | **${fixed(now.writeUnits)}** | ${fixed(was?.usd)} | **${fixed(now.usd)}** | ${fixed(perExecution)} | ${standardPerNode} | ${now.usd ? (standardPerNode / now.usd).toFixed(1) : "–"}× | ${expressPerNode.toFixed(3)} | ${now.usd ? (now.usd / expressPerNode).toFixed(1) : "–"}× |`,
    );
  }
  return lines;
}

export async function compareFiles(beforePath: string, afterPath: string): Promise<string[]> {
  const [before, after] = await Promise.all(
    [beforePath, afterPath].map(async (p) => JSON.parse(await readFile(p, "utf8")) as RunFile),
  );
  return renderComparison(before!, after!);
}
