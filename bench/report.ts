/** The bench report: its shape, and the markdown rendering. */

import type { CliStartupResult } from "./cli-startup.js";
import { type Cost, cost, type FORMULAS, type PerNode, PRICES, perNode } from "./cost.js";
import type { EngineCpuResult } from "./engine-cpu.js";
import { type ExpressionCostResult, renderExpressionCost } from "./expressions.js";
import type { MapComparison } from "./map.js";
import type { WorkloadRun } from "./run.js";
import type { SweepPoint, SweepResult } from "./sweep.js";
import type { WorkerTimeoutComparison } from "./worker-timeouts.js";

export interface ResultRow extends WorkloadRun {
  perNode: PerNode;
  cost: Cost;
}

export interface Target {
  name: string;
  limit: string;
  /** The worst workload's figure. */
  worst: number;
  /** Over every node of every workload together (workloads weighted by their node counts). */
  overall: number;
  met: boolean;
  metOverall: boolean;
  measuredOn: string;
}

/**
 * The cost model of AWS per workload: DynamoDB, SQS and EventBridge as measured against the
 * emulator (moto), Lambda requests and duration as measured on the memory backend with every AWS
 * call taking AWS_CALL_MS (memory-6ms): the handler's real concurrency, at in-region latency.
 */
export interface ModeledCost {
  workload: string;
  /** DynamoDB + SQS + EventBridge + S3 requests, from the measured row. */
  services: number;
  /** Of which S3 requests (PUT and GET, as measured). */
  s3: number;
  lambdaRequests: number;
  lambdaDuration: number;
  total: number;
  /** The same with Lambda at AWS_CALL_MS per call summed as if none overlapped (and no CPU time). */
  totalSequential: number;
  /** `total` with S3 GETs as if no blob were cached anywhere (Cost.s3GetColdCache). */
  totalColdCache: number;
  /** DynamoDB + S3 storage over the retention (PRICES.retentionDays), not in `total`. */
  storage: number;
  totalWithStorage: number;
  measuredOn: string;
}

export interface BenchReport {
  date: string;
  node: string;
  cpu: string;
  cores: number;
  platform: string;
  quick: boolean;
  settings: {
    concurrency: number;
    batchSize: number;
    /** The engine's inline threshold (EngineOptions.payloads.inlineBytes) of the workload runs. */
    inlineBytes: number;
    /** The worker function's timeout of the workload runs (their invocations' and their engine's). */
    workerTimeoutSeconds?: number;
    sweeper: string;
    capacityModel: string;
    memoryCounts: string;
  };
  prices: typeof PRICES;
  formulas: typeof FORMULAS;
  results: ResultRow[];
  modeled: ModeledCost[];
  engineCpu: EngineCpuResult[];
  targets: Target[];
  /** The inline threshold sweep (sweep.ts), when it ran. */
  sweep?: SweepResult;
  /** The chain under other worker timeouts beside the main runs' (worker-timeouts.ts), when it ran. */
  workerTimeouts?: WorkerTimeoutComparison;
  /** The map workload per item, beside Step Functions' Distributed Map (map.ts), when it ran. */
  map?: MapComparison;
  /** How fast the `weft` command starts (cli-startup.ts), when it ran. */
  cliStartup?: CliStartupResult[];
  /** What one expression evaluation costs, in the caller's thread and isolated (expressions.ts). */
  expressionCost?: ExpressionCostResult[];
}

export function toRow(run: WorkloadRun): ResultRow {
  const per = perNode(run);
  return { ...run, perNode: per, cost: cost(per, run.calls.worker.durationsMs) };
}

/** The backend counts are taken from: the emulator's when it ran, else the memory backend's. */
export function measuredBackend(rows: readonly ResultRow[]) {
  return (["moto", "memory", "memory-6ms"] as const).find((b) => rows.some((r) => r.backend === b));
}

/** The rows the targets are measured on: the emulator's when it ran, else the memory backend's. */
function measuredRows(rows: readonly ResultRow[]): readonly ResultRow[] {
  const on = measuredBackend(rows);
  return rows.filter((r) => r.backend === on);
}

export function modeledCosts(rows: readonly ResultRow[]): ModeledCost[] {
  return measuredRows(rows).flatMap((r) => {
    const timed = rows.find((t) => t.backend === "memory-6ms" && t.workload === r.workload);
    if (!timed) return [];
    const c = r.cost;
    const services = c.dynamoWrite + c.dynamoRead + c.sqs + c.eventBridge + c.s3;
    const { lambdaRequests, lambdaDuration } = timed.cost;
    const total = services + lambdaRequests + lambdaDuration;
    const storage = c.ddbStorage + c.s3Storage;
    return [
      {
        workload: r.workload,
        services,
        s3: c.s3,
        lambdaRequests,
        lambdaDuration,
        total,
        totalSequential: c.totalAtAwsLatency,
        totalColdCache: total - c.s3Get + c.s3GetColdCache,
        storage,
        totalWithStorage: total + storage,
        measuredOn: `${r.backend} + memory-6ms`,
      },
    ];
  });
}

/** Targets are over the workloads that measure the engine's own cost (not those with `notInTargets`). */
export function targets(rows: readonly ResultRow[], engineCpu: readonly EngineCpuResult[]): Target[] {
  const excluded = new Set(rows.filter((r) => r.notInTargets !== undefined).map((r) => r.workload));
  const measured = measuredRows(rows).filter((r) => !excluded.has(r.workload));
  const on = measured[0]?.backend ?? "none";
  const modeled = new Map(modeledCosts(rows).map((m) => [m.workload, m]));
  const nodes = measured.reduce((sum, r) => sum + r.totalNodes, 0);
  const figure = (
    name: string,
    limit: number,
    inclusive: boolean,
    f: (r: ResultRow) => number,
    measuredOn = on,
  ): Target => {
    const worst = Math.max(0, ...measured.map(f));
    const overall = nodes === 0 ? 0 : measured.reduce((sum, r) => sum + f(r) * r.totalNodes, 0) / nodes;
    const within = (x: number) => (inclusive ? x <= limit : x < limit);
    return {
      name,
      limit: `${inclusive ? "≤" : "<"} ${limit}`,
      worst,
      overall,
      met: within(worst),
      metOverall: within(overall),
      measuredOn,
    };
  };
  const cpuRows = engineCpu.filter((e) => !excluded.has(e.workload));
  const cpus = cpuRows.map((e) => e.cpuMsPerNode);
  const cpuNodes = cpuRows.reduce((sum, e) => sum + e.nodes, 0);
  const cpuOverall = cpuNodes === 0 ? 0 : cpuRows.reduce((sum, e) => sum + e.cpuMs, 0) / cpuNodes;
  const cpuWorst = Math.max(0, ...cpus);
  // Issue 27's goals: ≤ 2 write units and ≤ $2 per million nodes on every workload.
  return [
    figure("DynamoDB write units per node", 2, true, (r) => r.perNode.ddbWriteUnits),
    figure("SQS requests per node", 3, true, (r) => r.perNode.sqsBilledRequests),
    // The target's model of AWS: Lambda billed for the handler's time with each AWS call at
    // in-region latency, measured with the engine's own concurrency.
    ...(measured.length > 0 && measured.every((r) => modeled.has(r.workload))
      ? [
          figure(
            "modeled cost per million nodes ($), Lambda as measured at 6 ms per AWS call",
            2,
            true,
            (r) => modeled.get(r.workload)?.total ?? Number.NaN,
            `${on} + memory-6ms`,
          ),
        ]
      : []),
    // The earlier model: every AWS call of an invocation summed as if one after another, no CPU.
    figure(
      "modeled cost per million nodes ($), Lambda at 6 ms per AWS call summed as if sequential",
      2,
      true,
      (r) => r.cost.totalAtAwsLatency,
    ),
    // For reference: Lambda billed for the duration measured here, against an emulator hundreds of
    // times slower than DynamoDB (not a model of AWS).
    figure(
      "modeled cost per million nodes ($), Lambda as measured against the emulator",
      3,
      false,
      (r) => r.cost.total,
    ),
    {
      name: "engine CPU per node (ms)",
      limit: "< 1",
      worst: cpuWorst,
      overall: cpuOverall,
      met: cpuWorst < 1,
      metOverall: cpuOverall < 1,
      measuredOn: "engine on memory ports",
    },
  ];
}

const f = (n: number, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : "–");
const table = (head: string[], rows: string[][]) =>
  [
    `| ${head.join(" | ")} |`,
    `|${head.map(() => "---").join("|")}|`,
    ...rows.map((r) => `| ${r.join(" | ")} |`),
  ].join("\n");

export function renderMarkdown(report: BenchReport): string {
  const rows = report.results;
  const id = (r: ResultRow) => [r.workload, r.backend];
  const out: string[] = [];
  out.push(`# weft benchmark — ${report.date}${report.quick ? " (quick)" : ""}`);
  out.push("");
  out.push(
    `Node ${report.node} · ${report.cpu} · ${report.cores} cores · ${report.platform} · worker concurrency ${report.settings.concurrency}, batch size ${report.settings.batchSize}${report.settings.workerTimeoutSeconds === undefined ? "" : `, worker timeout ${report.settings.workerTimeoutSeconds} s (the deployed default; default node timeouts)`} · inline threshold ${report.settings.inlineBytes} bytes · ${report.settings.sweeper}`,
  );
  out.push("");
  const summary = summaryRows(report);
  if (summary.length > 0) {
    out.push(
      `## Summary (per node; counts on ${measuredBackend(rows)}, $ per million nodes by the model of AWS below; storage over ${PRICES.retentionDays} days' retention, not in the $)`,
    );
    out.push("");
    out.push(
      table(
        [
          "workload",
          "DynamoDB write units / node",
          "SQS requests / node",
          "S3 PUT / GET per node",
          "modeled $ per million nodes",
          "(calls summed)",
          `(+ storage, ${PRICES.retentionDays} d)`,
          "Step Functions Standard",
        ],
        summary,
      ),
    );
    out.push("");
    const excluded = rows.filter(
      (r, i) => r.notInTargets && rows.findIndex((x) => x.workload === r.workload) === i,
    );
    for (const r of excluded)
      out.push(`${r.workload} is not in "all nodes" nor in the targets: ${r.notInTargets}.`);
    if (excluded.length > 0) out.push("");
  }
  out.push(
    "## Throughput and latency (through the local runtime: HTTP → api handler, poller → worker handler)",
  );
  out.push("");
  out.push(
    table(
      [
        "workload",
        "backend",
        "nodes",
        "end-to-end s",
        "nodes/s",
        "node p50 ms",
        "node p99 ms",
        "queue→start p50 ms",
        "queue→start p99 ms",
        "process CPU ms/node",
      ],
      rows.map((r) => [
        ...id(r),
        `${r.completedNodes}/${r.totalNodes}`,
        f(r.e2eMs / 1000),
        f(r.nodesPerSecond, 0),
        f(r.nodeLatencyMs.p50, 0),
        f(r.nodeLatencyMs.p99, 0),
        f(r.queueToStartMs.p50, 0),
        f(r.queueToStartMs.p99, 0),
        f(r.processCpuMsPerNode),
      ]),
    ),
  );
  out.push("");
  out.push("## AWS calls per node");
  out.push("");
  out.push(
    table(
      [
        "workload",
        "backend",
        "DDB reads",
        "DDB writes",
        "tx items",
        "WCU (table+index)",
        "RCU",
        "SQS send calls / msgs",
        "receives (+empty)",
        "delete calls",
        "SQS billed req",
        "EB events",
        "S3 PUT / GET (no cache)",
        "worker invocations",
        "handler ms (mean)",
      ],
      rows.map((r) => {
        const p = r.perNode;
        return [
          ...id(r),
          f(p.ddbReadCalls),
          f(p.ddbWriteCalls),
          f(p.ddbTransactItems),
          `${f(p.ddbWriteUnits)} (${f(p.ddbTableWriteUnits)}+${f(p.ddbIndexWriteUnits)})`,
          f(p.ddbReadUnits),
          `${f(p.sqsSendCalls)} / ${f(p.sqsSendEntries)}`,
          `${f(p.sqsReceives)} (+${f(p.sqsEmptyReceives)})`,
          f(p.sqsDeleteCalls),
          f(p.sqsBilledRequests),
          f(p.eventBridgeEvents, 3),
          `${f(p.s3PutRequests)} / ${f(p.s3GetRequests)} (${f(p.s3ColdGetRequests)})`,
          f(p.workerInvocations),
          f(r.cost.meanWorkerDurationMs, 1),
        ];
      }),
    ),
  );
  out.push("");
  out.push("## Modeled cost per million nodes (USD, us-east-1 list prices)");
  out.push("");
  out.push(
    table(
      [
        "workload",
        "backend",
        "DDB write",
        "DDB read",
        "SQS",
        "Lambda req",
        "Lambda GB-s (measured)",
        "EventBridge",
        "S3 PUT + GET",
        "total",
        "Lambda GB-s @6 ms/call",
        "total @6 ms/call",
        `storage ${PRICES.retentionDays} d (DDB + S3)`,
        "Step Functions Standard",
        "SFN / weft",
      ],
      rows.map((r) => {
        const c = r.cost;
        return [
          ...id(r),
          f(c.dynamoWrite),
          f(c.dynamoRead),
          f(c.sqs),
          f(c.lambdaRequests),
          f(c.lambdaDuration),
          f(c.eventBridge),
          `${f(c.s3Put)} + ${f(c.s3Get)}`,
          `**${f(c.total)}**`,
          f(c.lambdaDurationAtAwsLatency),
          `**${f(c.totalAtAwsLatency)}**`,
          `${f(c.ddbStorage)} + ${f(c.s3Storage)}`,
          f(c.stepFunctionsStandard),
          `${f(c.cheaperThanStepFunctionsBy, 1)}×`,
        ];
      }),
    ),
  );
  out.push("");
  if (report.modeled.length > 0) {
    out.push(
      "### The model of AWS: DynamoDB, SQS, EventBridge and S3 as measured on moto; Lambda as measured on memory-6ms (every AWS call 6 ms, the handler's real concurrency)",
    );
    out.push("");
    out.push(
      table(
        [
          "workload",
          "DDB + SQS + EventBridge + S3",
          "of which S3",
          "Lambda req",
          "Lambda GB-s",
          "total",
          "total, Lambda as 6 ms per call summed",
          "total, no blob cached",
          `storage ${PRICES.retentionDays} d`,
          "total + storage",
          "SFN / weft",
        ],
        report.modeled.map((m) => [
          m.workload,
          f(m.services),
          f(m.s3),
          f(m.lambdaRequests),
          f(m.lambdaDuration),
          `**${f(m.total)}**`,
          f(m.totalSequential),
          f(m.totalColdCache),
          f(m.storage),
          f(m.totalWithStorage),
          `${f(PRICES.stepFunctionsStandardPerMillionTransitions / m.total, 1)}×`,
        ]),
      ),
    );
    out.push("");
  }
  out.push(
    `Prices: DynamoDB $${PRICES.dynamoWritePerMillionUnits}/M write units, $${PRICES.dynamoReadPerMillionUnits}/M read units; SQS $${PRICES.sqsPerMillionRequests}/M requests (per 64 KB chunk, a batch call is one request); Lambda $${PRICES.lambdaPerMillionRequests}/M requests + $${PRICES.lambdaPerGbSecondArm64}/GB-s (arm64, ${PRICES.lambdaMemoryGb} GB); EventBridge $${PRICES.eventBridgePerMillionEvents}/M events; S3 Standard $${PRICES.s3PutPerMillionRequests}/M PUT/COPY/POST/LIST, $${PRICES.s3GetPerMillionRequests}/M GET/HEAD, $${PRICES.s3StoragePerGbMonth}/GB-month; DynamoDB storage $${PRICES.dynamoStoragePerGbMonth}/GB-month (storage over ${PRICES.retentionDays} days' retention, shown apart from the totals); Step Functions Standard $${PRICES.stepFunctionsStandardPerMillionTransitions}/M transitions (one per node: a lower bound).`,
  );
  out.push("");
  for (const [name, formula] of Object.entries(report.formulas)) out.push(`- ${name}: ${formula}`);
  out.push("");
  out.push(`Capacity: ${report.settings.capacityModel}`);
  out.push("");
  out.push(`In-memory counts: ${report.settings.memoryCounts}`);
  out.push("");
  out.push(
    "## Engine CPU per node (engine alone on memory ports: createExecution + handleTask loop, no HTTP/poller/SDK)",
  );
  out.push("");
  out.push(
    table(
      ["workload", "nodes", "task messages", "CPU ms", "CPU ms/node", "wall ms"],
      report.engineCpu.map((e) => [
        e.workload,
        String(e.nodes),
        String(e.taskMessages),
        f(e.cpuMs, 1),
        f(e.cpuMsPerNode, 3),
        f(e.wallMs, 0),
      ]),
    ),
  );
  out.push("");
  if (report.cliStartup) {
    out.push("## CLI startup (whole `weft` processes, wall time; `node -e 0` is Node's own start)");
    out.push("");
    out.push(
      table(
        ["command", "runs", "min ms", "median ms", "p90 ms", "median over node ms"],
        report.cliStartup.map((c) => [
          c.command,
          String(c.runs),
          f(c.minMs, 0),
          f(c.medianMs, 0),
          f(c.p90Ms, 0),
          f(c.overNodeMs, 0),
        ]),
      ),
    );
    out.push("");
  }
  if (report.expressionCost) {
    out.push("## Expressions: one evaluation of three params, in the caller's thread and isolated");
    out.push("");
    out.push(...renderExpressionCost(report.expressionCost));
    out.push("");
  }
  out.push("## Targets (per node, on average: for the worst workload, and over all nodes of all workloads)");
  out.push("");
  out.push(
    table(
      ["target", "limit", "worst workload", "met", "all nodes", "met", "measured on"],
      report.targets.map((t) => [
        t.name,
        t.limit,
        f(t.worst, 3),
        t.met ? "yes" : "**no**",
        f(t.overall, 3),
        t.metOverall ? "yes" : "**no**",
        t.measuredOn,
      ]),
    ),
  );
  out.push("");
  if (report.map) out.push(...renderMap(report.map), "");
  if (report.workerTimeouts) out.push(...renderWorkerTimeouts(report.workerTimeouts), "");
  if (report.sweep) out.push(...renderSweep(report.sweep), "");
  out.push("## Calls by operation (totals over the run)");
  out.push("");
  out.push(
    table(
      ["workload", "backend", "operation", "calls", "items", "failed"],
      rows.flatMap((r) =>
        Object.entries(r.calls.ops)
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([op, s]) => [...id(r), op, String(s.calls), String(s.items), String(s.failed)]),
      ),
    ),
  );
  out.push("");
  return out.join("\n");
}

/** The README's table: one row per workload, then all nodes of the workloads in the targets together. */
function summaryRows(report: BenchReport): string[][] {
  const measured = measuredRows(report.results);
  const modeled = new Map(report.modeled.map((m) => [m.workload, m]));
  const dollars = (r: ResultRow) => modeled.get(r.workload)?.total ?? r.cost.total;
  const storage = (r: ResultRow) => modeled.get(r.workload)?.storage ?? r.cost.ddbStorage + r.cost.s3Storage;
  const line = (name: string, figure: (f: (r: ResultRow) => number) => number) => [
    name,
    f(figure((r) => r.perNode.ddbWriteUnits)),
    f(figure((r) => r.perNode.sqsBilledRequests)),
    `${f(figure((r) => r.perNode.s3PutRequests))} / ${f(figure((r) => r.perNode.s3GetRequests))}`,
    f(figure(dollars)),
    f(figure((r) => r.cost.totalAtAwsLatency)),
    f(figure(storage)),
    f(PRICES.stepFunctionsStandardPerMillionTransitions, 0),
  ];
  const rows = measured.map((r) => line(`${r.workload} (${r.totalNodes} nodes)`, (g) => g(r)));
  const together = measured.filter((r) => r.notInTargets === undefined);
  const nodes = together.reduce((sum, r) => sum + r.totalNodes, 0);
  if (together.length > 1 && nodes > 0)
    rows.push(
      line(
        `all ${nodes} nodes of ${together.map((r) => r.workload).join(", ")} together`,
        (g) => together.reduce((sum, r) => sum + g(r) * r.totalNodes, 0) / nodes,
      ),
    );
  return rows;
}

function renderMap(comparison: MapComparison): string[] {
  const p = comparison.prices;
  return [
    "## Map: per item, beside Step Functions' Distributed Map",
    "",
    `The map workload's counts (the map's own node included) over its items. SQS: send calls (each item's message, batched per invocation) + receives + deletes, billed as above. Lambda GB-s: the worker's billed duration × ${PRICES.lambdaMemoryGb} GB. Step Functions, per million items: **Standard child workflows** (the comparison: like a weft item, each is a durable record with its own retries, run once, no 5-minute limit) at $${p.standardPerMillionTransitions} per million transitions, ${p.standardTransitionsPerItem} per item as in every other row (its Pass state; a lower bound: AWS also bills one per child execution the Distributed Map starts, ${p.standardTransitionsPerItemBilled} per item with one item per child); **Express child workflows** for reference (at-least-once, no per-item record, 5 minutes at most): $${p.expressPerMillionRequests} per million requests + ${p.expressMinBilledMs} ms × ${p.expressMinBilledGb * 1024} MB at $${p.expressPerGbSecond} per GB-s + the parent's transition per child started, one item per child (an ItemBatcher divides it by the batch size).`,
    "",
    table(
      [
        "workload",
        "items (lanes)",
        "counted on",
        "DynamoDB write units / item",
        "read units / item",
        "SQS requests / item (send calls + receives + deletes)",
        "SQS messages / item",
        "S3 PUT / item",
        "worker invocations / item",
        "Lambda GB-s / item",
        "modeled $ per million items",
        "(calls summed)",
        "Step Functions Standard children (billed)",
        "Step Functions Express children",
        "SFN Standard / weft",
      ],
      comparison.points.map((m) => [
        m.workload,
        `${m.items} (${m.lanes})`,
        `${m.countedOn}; Lambda on ${m.timedOn}`,
        f(m.writeUnits, 3),
        f(m.readUnits, 3),
        `${f(m.sqsRequests, 3)} (${f(m.sqsSendCalls, 3)} + ${f(m.sqsReceives, 3)} + ${f(m.sqsDeleteCalls, 3)})`,
        f(m.sqsMessages, 3),
        f(m.s3Puts, 4),
        f(m.workerInvocations, 3),
        f(m.lambdaGbSeconds, 4),
        m.modeled === undefined ? "–" : `**${f(m.modeled)}**`,
        f(m.summed),
        `${f(m.stepFunctionsStandard)} (${f(m.stepFunctionsStandardBilled)})`,
        f(m.stepFunctionsExpress),
        `${f(m.stepFunctionsStandard / (m.modeled ?? m.summed), 1)}×`,
      ]),
    ),
  ];
}

function renderWorkerTimeouts(comparison: WorkerTimeoutComparison): string[] {
  return [
    "## Worker timeout: the deployed default beside a 15-minute worker",
    "",
    `The same workload, default node timeouts, under each worker function timeout (the local runtime gives its invocations that timeout and the engine the deadline rule: no attempt past the timeout less 5 s). Continuation runs a ready child in the same invocation while twice its expected run time fits in what is left (shared/engine/worker-time.ts). Target: ≤ ${comparison.target} SQS requests per node under each.`,
    "",
    table(
      [
        "workload",
        "worker timeout",
        "counted on",
        "SQS requests / node",
        "worker invocations / node",
        "DynamoDB write units / node",
        "modeled $ per million nodes",
        "(calls summed)",
        `≤ ${comparison.target} SQS / node`,
      ],
      comparison.points.map((p) => [
        p.workload,
        p.label,
        p.backend,
        f(p.sqsRequests),
        f(p.workerInvocations, 3),
        f(p.writeUnits),
        p.modeled === undefined ? "–" : f(p.modeled),
        f(p.summed),
        p.met ? "yes" : "**no**",
      ]),
    ),
  ];
}

/** The sweep's totals, in the order of its "cheaper" column. */
const SWEEP_TOTALS: ReadonlyArray<(p: SweepPoint) => number> = [
  (p) => p.total,
  (p) => p.totalSequential,
  (p) => p.totalColdCache,
  (p) => p.totalWithStorage,
];

const kib = (bytes: number) => (bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} B`);

function renderSweep(sweep: SweepResult): string[] {
  const out: string[] = [];
  const on = sweep.points[0]?.measuredOn ?? "–";
  out.push("## The inline threshold: outputs of each size kept inline or offloaded to S3");
  out.push("");
  out.push(
    `Each shape runs twice per output size: with the threshold at the size (outputs on their items) and one byte below (outputs in S3, a reference on the item). Counts per node on ${on}; $ per million nodes by the same model as above ("requests": Lambda time as measured on memory-6ms, which moves by a few cents between runs on a busy machine; "calls summed": Lambda at 6 ms per call from the counts alone, no noise). "no cache" prices every blob load as a GET (the bench's one engine caches every blob it wrote, as one warm Lambda container would; AWS lies between). Storage: DynamoDB $${PRICES.dynamoStoragePerGbMonth} and S3 $${PRICES.s3StoragePerGbMonth} per GB-month over ${PRICES.retentionDays} days.`,
  );
  out.push("");
  for (const shape of sweep.shapes) out.push(`- ${shape.name}: ${shape.description}`);
  out.push("");
  const point = (shape: string, bytes: number, mode: string) =>
    sweep.points.find((p) => p.shape === shape && p.bytes === bytes && p.mode === mode);
  const rows: string[][] = [];
  for (const shape of sweep.shapes) {
    const sizes = [...new Set(sweep.points.filter((p) => p.shape === shape.name).map((p) => p.bytes))].sort(
      (a, b) => a - b,
    );
    for (const bytes of sizes) {
      const inline = point(shape.name, bytes, "inline");
      const offloaded = point(shape.name, bytes, "offloaded");
      const pair = (g: (p: SweepPoint) => number, digits = 2) =>
        `${inline ? f(g(inline), digits) : "–"} / ${offloaded ? f(g(offloaded), digits) : "–"}`;
      const cheaper = (g: (p: SweepPoint) => number) =>
        inline && offloaded && Number.isFinite(g(inline)) && Number.isFinite(g(offloaded))
          ? g(offloaded) < g(inline)
            ? "offloaded"
            : "inline"
          : "–";
      rows.push([
        shape.name,
        kib(bytes),
        pair((p) => p.writeUnits),
        pair((p) => p.readUnits),
        pair((p) => p.s3Puts),
        `${pair((p) => p.s3Gets)} (${pair((p) => p.s3ColdGets)})`,
        pair((p) => p.total),
        pair((p) => p.totalSequential),
        pair((p) => p.totalColdCache),
        pair((p) => p.storage),
        pair((p) => p.totalWithStorage),
        SWEEP_TOTALS.map(cheaper).join(" · "),
      ]);
    }
  }
  out.push(
    table(
      [
        "shape",
        "output",
        "WCU / node (inline / offloaded)",
        "RCU / node",
        "S3 PUT / node",
        "S3 GET / node (no cache)",
        "$ requests",
        "$ requests, Lambda as calls summed",
        "$ requests, no cache",
        `$ storage ${PRICES.retentionDays} d`,
        "$ requests + storage",
        "cheaper (requests · calls summed · no cache · + storage)",
      ],
      rows,
    ),
  );
  out.push("");
  out.push(
    table(
      ["shape", "cost counted", "inline cheaper up to", "offloaded cheaper from"],
      sweep.crossovers.map((c) => [
        c.shape,
        c.variant,
        c.inlineCheaperUpTo === undefined ? "–" : kib(c.inlineCheaperUpTo),
        c.offloadedCheaperFrom === undefined ? "–" : kib(c.offloadedCheaperFrom),
      ]),
    ),
  );
  return out;
}
