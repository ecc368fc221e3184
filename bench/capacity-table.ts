/**
 * The capacity table: from the load runs' DynamoDB use by partition (capacity-run.ts), for each key
 * shape the units one unit of work puts on its busiest single key, and the rate at which that key
 * reaches DynamoDB's per-partition limits. Nothing here is a hand-written figure: a key the store
 * shards shows as more keys of the same shape, each with less load, and its ceiling rises by itself.
 */
import { type PartitionUse, shapeOf } from "./capacity-partitions.js";
import type { CapacitySizes, LoadRun } from "./capacity-run.js";

/** DynamoDB's limits on one partition, per second. */
export const PARTITION_LIMITS = { writeUnits: 1000, readUnits: 3000 } as const;

/** Key shapes with one partition per execution: their load is per execution's units of work. */
const PER_EXECUTION = /^(gsi\d )?(EX#|OFFER#|OFFERED#)/;

/**
 * Key shapes sharded by worker id: a run of a few workers puts each worker's whole traffic on one
 * shard, while the fleet a fleet-wide goal needs (hundreds of workers) spreads over all of them.
 * Their ceiling is the shape's load spread evenly over the shards the run touched (a listing reads
 * every shard), the busiest key of the run kept beside it.
 */
const PER_WORKER = /^WORKERS#/;

export interface CapacityRow {
  shape: string;
  /** Distinct keys of the shape the load touched. */
  keys: number;
  /** The busiest key (by share of its limits), and what it took in the whole load. */
  busiest: PartitionUse;
  /** Units of work the busiest key's load is divided by: all of the load's, or its execution's. */
  per: number;
  writeUnitsPerUnit: number;
  readUnitsPerUnit: number;
  /** Units of work per second at which the busiest key reaches a limit; undefined: not shared by them. */
  ceiling?: number;
  limitedBy?: "write" | "read";
  /** Why there is no ceiling, when there is none. */
  note?: string;
  /** How the per-unit figures were taken when not from the busiest key (PER_WORKER). */
  spread?: string;
  goalMet?: boolean;
}

export interface BusyPartition extends PartitionUse {
  shape: string;
  /** Of all the load's DynamoDB requests (a call counts once per partition it touches). */
  requestShare: number;
  /** Averaged over the run (the emulator is far slower than DynamoDB: these are far under the limits). */
  writeUnitsPerSecond: number;
  readUnitsPerSecond: number;
}

export interface CapacityLoadResult {
  name: string;
  description: string;
  unit: string;
  units: number;
  goal: number;
  goalScope: string;
  goalPer: string;
  executions: number;
  failedExecutions: number;
  seconds: number;
  rows: CapacityRow[];
  /** The lowest ceiling of the shapes the goal applies to, and its shape: what caps this load. */
  ceiling?: number;
  limitingShape?: string;
  goalMet?: boolean;
  busiest: BusyPartition[];
}

export interface CapacityReport {
  date: string;
  node: string;
  quick: boolean;
  sizes: CapacitySizes;
  backend: "moto";
  limits: typeof PARTITION_LIMITS;
  loads: CapacityLoadResult[];
}

/** How loaded a key is: its larger fraction of the per-partition limits. */
const heat = (use: PartitionUse) =>
  Math.max(use.writeUnits / PARTITION_LIMITS.writeUnits, use.readUnits / PARTITION_LIMITS.readUnits);

export function capacityOf(run: LoadRun): CapacityLoadResult {
  const { load } = run;
  const byShape = new Map<string, PartitionUse[]>();
  for (const use of run.partitions) {
    const shape = shapeOf(use);
    byShape.set(shape, [...(byShape.get(shape) ?? []), use]);
  }
  const rows: CapacityRow[] = [];
  for (const [shape, uses] of byShape) {
    const busiest = uses.reduce((a, b) => (heat(b) > heat(a) ? b : a));
    const perExecution = PER_EXECUTION.test(shape);
    const perWorker = PER_WORKER.test(shape) && load.goalPer === "fleet";
    const per = perExecution ? load.units / Math.max(1, run.executions) : load.units;
    const sum = (field: "writeUnits" | "readUnits") => uses.reduce((total, use) => total + use[field], 0);
    const writeUnitsPerUnit = (perWorker ? sum("writeUnits") / uses.length : busiest.writeUnits) / per;
    const readUnitsPerUnit = (perWorker ? sum("readUnits") / uses.length : busiest.readUnits) / per;
    const row: CapacityRow = { shape, keys: uses.length, busiest, per, writeUnitsPerUnit, readUnitsPerUnit };
    if (perWorker)
      row.spread = `spread over its ${uses.length} shards, as by a fleet of many workers; this run's few put ${(busiest.writeUnits / per).toFixed(2)} WU a task on its busiest`;
    if (perExecution && load.goalPer === "workflow") {
      row.note = "one partition per execution: starts do not share it";
    } else {
      const byWrites = writeUnitsPerUnit > 0 ? PARTITION_LIMITS.writeUnits / writeUnitsPerUnit : Infinity;
      const byReads = readUnitsPerUnit > 0 ? PARTITION_LIMITS.readUnits / readUnitsPerUnit : Infinity;
      row.ceiling = Math.min(byWrites, byReads);
      row.limitedBy = byWrites <= byReads ? "write" : "read";
      if (perExecution && load.goalPer === "fleet")
        row.note = "within one execution; the goal is the fleet's, over many executions";
      else row.goalMet = row.ceiling >= load.goal;
    }
    rows.push(row);
  }
  rows.sort((a, b) => (a.ceiling ?? Infinity) - (b.ceiling ?? Infinity) || a.shape.localeCompare(b.shape));
  const limiting = rows.find((r) => r.goalMet !== undefined);
  const requests = run.partitions.reduce((sum, use) => sum + use.requests, 0);
  const seconds = Math.max(run.seconds, 0.001);
  const busiest = [...run.partitions]
    .sort((a, b) => b.requests - a.requests)
    .slice(0, 5)
    .map((use) => ({
      ...use,
      shape: shapeOf(use),
      requestShare: requests > 0 ? use.requests / requests : 0,
      writeUnitsPerSecond: use.writeUnits / seconds,
      readUnitsPerSecond: use.readUnits / seconds,
    }));
  return {
    name: load.name,
    description: load.description,
    unit: load.unit,
    units: load.units,
    goal: load.goal,
    goalScope: load.goalScope,
    goalPer: load.goalPer,
    executions: run.executions,
    failedExecutions: run.failedExecutions,
    seconds: run.seconds,
    rows,
    ...(limiting?.ceiling === undefined
      ? {}
      : { ceiling: limiting.ceiling, limitingShape: limiting.shape, goalMet: limiting.ceiling >= load.goal }),
    busiest,
  };
}

const round = (n: number) =>
  n === Infinity ? "∞" : n >= 100 ? Math.round(n).toLocaleString("en-US") : n.toFixed(n >= 10 ? 1 : 2);
const units = (n: number) => (n === 0 ? "0" : n < 0.01 ? n.toExponential(1) : n.toFixed(n >= 10 ? 1 : 3));
const short = (pk: string) => (pk.length > 40 ? `${pk.slice(0, 37)}…` : pk);

export const CAPACITY_EXPLANATION = [
  "DynamoDB serves at most 1,000 write units and 3,000 read units per second on one partition",
  "(a strongly consistent read of up to 4 KB is 1 read unit, an eventually consistent one half; a",
  "write of up to 1 KB is 1 write unit, a transactional one 2). Every request of the load runs below",
  "was recorded with the partition key it landed on and its units, modeled from item sizes",
  "(bench/capacity.ts); index writes and index queries land on the index's own partition key.",
  "",
  "For each key shape, the table takes its busiest single key and divides what that key took by the",
  "units of work that share it (every start, node, map item or external task of the load; for a",
  "per-execution key, its execution's). The **ceiling** is the rate of units of work at which that",
  "key reaches a per-partition limit: 1,000 / (write units per unit) or 3,000 / (read units per",
  "unit), the lower. A load's ceiling is its lowest shape's; the goal is issue 27's. When the store",
  "shards a key, the same shape shows more keys with less load each, and its ceiling rises by itself.",
  "",
  "DynamoDB also splits a hot partition by itself (split for heat) once the load has lasted a while,",
  "but it splits between sort keys: a key whose writes all go to the end of one monotonically",
  "increasing sort key (a time-ordered listing, an offer queue) keeps landing on the newest split, so",
  "splitting does not raise its ceiling. The ceilings here assume no split, the worst case.",
  "",
  "The emulator answers one request at a time, so the run's own rates (the busiest partitions below)",
  "are far under the limits; the ceilings come from units per unit of work, not from the emulator's speed.",
  "One exception: external workers' heartbeats (every 30 s) and their polls that find nothing cost",
  "`WORKERS` and `POOL#<pool>` per worker and second, not per task, and are counted with the tasks:",
  "over the emulator's slow run they overstate those per-task figures somewhat.",
];

export function renderCapacity(report: CapacityReport): string[] {
  const lines = [...CAPACITY_EXPLANATION, "", "## Summary", ""];
  lines.push(
    "| load | units of work | goal | ceiling | limited by | goal met |",
    "|---|---|---|---|---|---|",
  );
  for (const load of report.loads) {
    lines.push(
      `| ${load.name} | ${load.units} ${load.unit}s | ${load.goal.toLocaleString("en-US")} ${load.goalScope} | ${
        load.ceiling === undefined ? "—" : `${round(load.ceiling)}/s`
      } | ${load.limitingShape ?? "—"} | ${load.goalMet === undefined ? "—" : load.goalMet ? "yes" : "**no**"} |`,
    );
  }
  for (const load of report.loads) {
    lines.push(
      "",
      `## ${load.name}: ${load.description}`,
      "",
      `${load.executions} executions (${load.failedExecutions} not SUCCEEDED) in ${load.seconds.toFixed(1)} s on the emulator. Goal: ${load.goal.toLocaleString("en-US")} ${load.goalScope}.`,
      "",
      `| key shape | keys | busiest key | requests | WU per ${load.unit} | RU per ${load.unit} (strong) | ceiling ${load.unit}s/s | goal met |`,
      "|---|---|---|---|---|---|---|---|",
    );
    for (const row of load.rows) {
      const strong = row.busiest.readUnits > 0 ? row.busiest.strongReadUnits / row.busiest.readUnits : 0;
      lines.push(
        `| \`${row.shape}\` | ${row.keys} | \`${short(row.busiest.pk)}\` | ${row.busiest.requests} | ${units(row.writeUnitsPerUnit)} | ${units(row.readUnitsPerUnit)} (${Math.round(strong * 100)} %) | ${
          row.ceiling === undefined
            ? `— (${row.note})`
            : `${round(row.ceiling)} (${row.limitedBy}s)${[row.note, row.spread].map((text) => (text === undefined ? "" : ` — ${text}`)).join("")}`
        } | ${row.goalMet === undefined ? "—" : row.goalMet ? "yes" : "**no**"} |`,
      );
    }
    lines.push(
      "",
      "Busiest partitions of the run, by requests:",
      "",
      "| partition | requests | share of requests | WU | RU | WU/s in the run | RU/s in the run |",
      "|---|---|---|---|---|---|---|",
    );
    for (const use of load.busiest) {
      lines.push(
        `| \`${use.index === undefined ? "" : `${use.index} `}${short(use.pk)}\` | ${use.requests} | ${(use.requestShare * 100).toFixed(1)} % | ${units(use.writeUnits)} | ${units(use.readUnits)} | ${round(use.writeUnitsPerSecond)} | ${round(use.readUnitsPerSecond)} |`,
      );
    }
  }
  return lines;
}
