/**
 * `npm run bench -- --capacity [--quick] [--no-write]`: the load runs on moto (capacity-run.ts) and
 * the capacity table derived from them (capacity-table.ts), written to
 * bench/results/capacity-latest.json and .md.
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { startMoto } from "../tools/emulators/moto.js";
import {
  type CapacitySizes,
  capacityLoads,
  FULL_SIZES,
  type LoadName,
  QUICK_SIZES,
  runLoad,
} from "./capacity-run.js";
import { type CapacityReport, capacityOf, PARTITION_LIMITS, renderCapacity } from "./capacity-table.js";

export interface CapacityOptions {
  quick: boolean;
  /** Other sizes than the quick or full ones (the test's tiny run). */
  sizes?: CapacitySizes;
  /** Only these loads (default all four). */
  only?: readonly LoadName[];
  /** An emulator already running (the tests'); default: a moto started for the run. */
  endpoint?: string;
  log?: (line: string) => void;
}

export async function measureCapacity(options: CapacityOptions): Promise<CapacityReport> {
  const log = options.log ?? (() => {});
  const sizes = options.sizes ?? (options.quick ? QUICK_SIZES : FULL_SIZES);
  const loads = capacityLoads(sizes).filter(
    (load) => options.only === undefined || options.only.includes(load.name),
  );
  const moto = options.endpoint === undefined ? await startMoto() : undefined;
  const endpoint = options.endpoint ?? moto!.endpoint;
  try {
    const results = [];
    for (const load of loads) {
      log(`capacity: ${load.name} (${load.description})`);
      const run = await runLoad(load, endpoint);
      log(
        `  ${run.executions} executions in ${run.seconds.toFixed(1)} s, ${run.partitions.length} partitions`,
      );
      results.push(capacityOf(run));
    }
    return {
      date: new Date().toISOString(),
      node: process.version,
      quick: options.quick,
      sizes,
      backend: "moto",
      limits: PARTITION_LIMITS,
      loads: results,
    };
  } finally {
    await moto?.stop();
  }
}

export function capacityMarkdown(report: CapacityReport): string {
  const title = `# Capacity by partition, ${report.date} (Node ${report.node}, ${report.backend}${report.quick ? ", quick" : ""})`;
  const sizes = Object.entries(report.sizes)
    .map(([name, value]) => `${name} ${value}`)
    .join(", ");
  return `${[title, "", `Sizes: ${sizes}.`, "", ...renderCapacity(report)].join("\n")}\n`;
}

/**
 * `--capacity-sizes starts=500,width=500`: sizes over the full ones (the per-unit figures hardly
 * depend on them; the emulator's time does).
 */
export function parseCapacitySizes(text: string): CapacitySizes {
  const sizes: CapacitySizes = { ...FULL_SIZES };
  for (const part of text.split(",")) {
    const [name, value] = part.split("=");
    const n = Number(value);
    if (name === undefined || !(name in sizes) || !Number.isInteger(n) || n < 1)
      throw new Error(
        `--capacity-sizes takes name=whole number pairs, comma-separated, of ${Object.keys(FULL_SIZES).join(", ")}`,
      );
    sizes[name as keyof CapacitySizes] = n;
  }
  return sizes;
}

/** Writes capacity-latest.json and capacity-latest.md under `dir`. */
export async function writeCapacity(report: CapacityReport, dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, "capacity-latest.json"), `${JSON.stringify(report, null, 2)}\n`);
  await writeFile(path.join(dir, "capacity-latest.md"), capacityMarkdown(report));
}
