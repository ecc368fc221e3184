/**
 * The inline threshold, chosen from the benchmark: the same workloads with outputs of several sizes,
 * each run twice — with the threshold at the output size (outputs stay on their items) and one byte
 * below it (outputs go to S3, a reference on the item) — and priced by the same model as the rest of
 * the report. Where "offloaded" becomes cheaper than "inline" is the threshold to choose.
 */
import type { ModeledCost, ResultRow } from "./report.js";
import type { BackendName } from "./run.js";
import { payloads, sizedChain, sizedDiamonds, type Workload } from "./workloads.js";

/** Output sizes of the sweep, KiB: powers of two, and 6 and 12 to place the crossover more closely. */
export const SWEEP_SIZES_KIB = [1, 2, 4, 6, 8, 12, 16, 32] as const;

export type SweepMode = "inline" | "offloaded";

export interface SweepShape {
  name: string;
  description: string;
  workload(bytes: number, name: string): Workload;
}

export function sweepShapes(quick: boolean): SweepShape[] {
  const chainLength = quick ? 5 : 20;
  const width = quick ? 5 : 20;
  const diamonds = quick ? 1 : 4;
  return [
    {
      name: "chain",
      description: `a chain of ${chainLength} (each node loads its parent's output)`,
      workload: (bytes, name) => sizedChain(bytes, chainLength, name),
    },
    {
      name: "diamonds",
      description: `${diamonds} diamonds 1 → 4 → 1 (each join decided by reading its 4 parents: every completing parent reads the others)`,
      workload: (bytes, name) => sizedDiamonds(bytes, diamonds, 4, name),
    },
    {
      name: "fan-out",
      description: `1 → ${width} → merge → 1 (the workers load the source's output, the merge composes theirs, the last node loads the merge)`,
      workload: (bytes, name) => payloads(bytes, 1, width, name),
    },
  ];
}

/** One run of the sweep: its workload is named `<shape>@<bytes>/<mode>`, unique in the report. */
export interface SweepRun {
  shape: string;
  bytes: number;
  mode: SweepMode;
  inlineBytes: number;
  workload: Workload;
}

export function sweepRuns(quick: boolean, sizesKib: readonly number[] = SWEEP_SIZES_KIB): SweepRun[] {
  return sweepShapes(quick).flatMap((shape) =>
    sizesKib.flatMap((kib) => {
      const bytes = kib * 1024;
      return (["inline", "offloaded"] as const).map((mode): SweepRun => {
        const name = `${shape.name}@${bytes}/${mode}`;
        return {
          shape: shape.name,
          bytes,
          mode,
          // Outputs are exactly `bytes` of JSON text: kept at a threshold of `bytes`, offloaded below.
          inlineBytes: mode === "inline" ? bytes : bytes - 1,
          workload: shape.workload(bytes, name),
        };
      });
    }),
  );
}

/** One point of the sweep, priced per million nodes (ModeledCost when moto and memory-6ms both ran). */
export interface SweepPoint
  extends Pick<
    ModeledCost,
    "total" | "totalSequential" | "totalColdCache" | "storage" | "totalWithStorage" | "measuredOn"
  > {
  shape: string;
  bytes: number;
  mode: SweepMode;
  inlineBytes: number;
  nodes: number;
  /** Counts per node on the measured backend. */
  writeUnits: number;
  readUnits: number;
  s3Puts: number;
  s3Gets: number;
  s3ColdGets: number;
  ddbStoredBytes?: number;
  s3StoredBytes: number;
}

export interface SweepResult {
  shapes: Array<{ name: string; description: string }>;
  points: SweepPoint[];
  /** Per shape and cost variant: the smallest size whose offloaded total is below its inline one. */
  crossovers: Crossover[];
}

export interface Crossover {
  shape: string;
  variant: "requests" | "requests, Lambda as calls summed" | "requests, no cache" | "requests + storage";
  /** Largest size measured at which inline was still cheaper (or none), and the first at which offloading was. */
  inlineCheaperUpTo?: number;
  offloadedCheaperFrom?: number;
}

const VARIANTS: ReadonlyArray<[Crossover["variant"], (p: SweepPoint) => number]> = [
  ["requests", (p) => p.total],
  ["requests, Lambda as calls summed", (p) => p.totalSequential],
  ["requests, no cache", (p) => p.totalColdCache],
  ["requests + storage", (p) => p.totalWithStorage],
];

/** The sweep's points from the report's rows (and its modeled costs, where moto and memory-6ms ran). */
export function sweepResult(
  quick: boolean,
  runs: readonly SweepRun[],
  rows: readonly ResultRow[],
  modeled: readonly ModeledCost[],
  measuredOn: BackendName,
): SweepResult {
  const points = runs.flatMap((run): SweepPoint[] => {
    const row = rows.find((r) => r.workload === run.workload.name && r.backend === measuredOn);
    if (!row) return [];
    const m = modeled.find((x) => x.workload === run.workload.name);
    const p = row.perNode;
    const c = row.cost;
    const total = m?.total ?? c.total;
    const storage = c.ddbStorage + c.s3Storage;
    return [
      {
        shape: run.shape,
        bytes: run.bytes,
        mode: run.mode,
        inlineBytes: run.inlineBytes,
        nodes: row.completedNodes,
        writeUnits: p.ddbWriteUnits,
        readUnits: p.ddbReadUnits,
        s3Puts: p.s3PutRequests,
        s3Gets: p.s3GetRequests,
        s3ColdGets: p.s3ColdGetRequests,
        ...(p.ddbStoredBytes === undefined ? {} : { ddbStoredBytes: p.ddbStoredBytes }),
        s3StoredBytes: p.s3StoredBytes,
        total,
        totalSequential: c.totalAtAwsLatency,
        totalColdCache: total - c.s3Get + c.s3GetColdCache,
        storage,
        totalWithStorage: total + storage,
        measuredOn: m?.measuredOn ?? measuredOn,
      },
    ];
  });
  const shapes = sweepShapes(quick).map(({ name, description }) => ({ name, description }));
  const crossovers = shapes.flatMap((shape) =>
    VARIANTS.map(([variant, figure]): Crossover => {
      const sizes = [...new Set(points.filter((p) => p.shape === shape.name).map((p) => p.bytes))].sort(
        (a, b) => a - b,
      );
      let inlineCheaperUpTo: number | undefined;
      let offloadedCheaperFrom: number | undefined;
      for (const bytes of sizes) {
        const at = (mode: SweepMode) =>
          points.find((p) => p.shape === shape.name && p.bytes === bytes && p.mode === mode);
        const inline = at("inline");
        const offloaded = at("offloaded");
        if (!inline || !offloaded || !Number.isFinite(figure(inline)) || !Number.isFinite(figure(offloaded)))
          continue;
        if (figure(offloaded) < figure(inline)) offloadedCheaperFrom ??= bytes;
        else inlineCheaperUpTo = bytes;
      }
      return {
        shape: shape.name,
        variant,
        ...(inlineCheaperUpTo === undefined ? {} : { inlineCheaperUpTo }),
        ...(offloadedCheaperFrom === undefined ? {} : { offloadedCheaperFrom }),
      };
    }),
  );
  return { shapes, points, crossovers };
}
