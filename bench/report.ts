/** The bench report: its shape, and the markdown rendering. */
import { type Cost, cost, type FORMULAS, type PerNode, PRICES, perNode } from "./cost.js";
import type { EngineCpuResult } from "./engine-cpu.js";
import type { WorkloadRun } from "./run.js";

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
  /** DynamoDB + SQS + EventBridge, from the measured row. */
  services: number;
  lambdaRequests: number;
  lambdaDuration: number;
  total: number;
  /** The same with Lambda at AWS_CALL_MS per call summed as if none overlapped (and no CPU time). */
  totalSequential: number;
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
}

export function toRow(run: WorkloadRun): ResultRow {
  const per = perNode(run);
  return { ...run, perNode: per, cost: cost(per, run.calls.worker.durationsMs) };
}

/** The rows the targets are measured on: the emulator's when it ran, else the memory backend's. */
function measuredRows(rows: readonly ResultRow[]): readonly ResultRow[] {
  const on = (["moto", "memory", "memory-6ms"] as const).find((b) => rows.some((r) => r.backend === b));
  return rows.filter((r) => r.backend === on);
}

export function modeledCosts(rows: readonly ResultRow[]): ModeledCost[] {
  return measuredRows(rows).flatMap((r) => {
    const timed = rows.find((t) => t.backend === "memory-6ms" && t.workload === r.workload);
    if (!timed) return [];
    const c = r.cost;
    const services = c.dynamoWrite + c.dynamoRead + c.sqs + c.eventBridge;
    const { lambdaRequests, lambdaDuration } = timed.cost;
    return [
      {
        workload: r.workload,
        services,
        lambdaRequests,
        lambdaDuration,
        total: services + lambdaRequests + lambdaDuration,
        totalSequential: c.totalAtAwsLatency,
        measuredOn: `${r.backend} + memory-6ms`,
      },
    ];
  });
}

export function targets(rows: readonly ResultRow[], engineCpu: readonly EngineCpuResult[]): Target[] {
  const measured = measuredRows(rows);
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
  const cpus = engineCpu.map((e) => e.cpuMsPerNode);
  const cpuNodes = engineCpu.reduce((sum, e) => sum + e.nodes, 0);
  const cpuOverall = cpuNodes === 0 ? 0 : engineCpu.reduce((sum, e) => sum + e.cpuMs, 0) / cpuNodes;
  const cpuWorst = Math.max(0, ...cpus);
  return [
    figure("DynamoDB write units per node", 3, true, (r) => r.perNode.ddbWriteUnits),
    figure("SQS requests per node", 3, true, (r) => r.perNode.sqsBilledRequests),
    // The target's model of AWS: Lambda billed for the handler's time with each AWS call at
    // in-region latency, measured with the engine's own concurrency.
    ...(modeled.size === measured.length && modeled.size > 0
      ? [
          figure(
            "modeled cost per million nodes ($), Lambda as measured at 6 ms per AWS call",
            3,
            false,
            (r) => modeled.get(r.workload)?.total ?? Number.NaN,
            `${on} + memory-6ms`,
          ),
        ]
      : []),
    // The earlier model: every AWS call of an invocation summed as if one after another, no CPU.
    figure(
      "modeled cost per million nodes ($), Lambda at 6 ms per AWS call summed as if sequential",
      3,
      false,
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
    `Node ${report.node} · ${report.cpu} · ${report.cores} cores · ${report.platform} · worker concurrency ${report.settings.concurrency}, batch size ${report.settings.batchSize} · ${report.settings.sweeper}`,
  );
  out.push("");
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
        "total",
        "Lambda GB-s @6 ms/call",
        "total @6 ms/call",
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
          `**${f(c.total)}**`,
          f(c.lambdaDurationAtAwsLatency),
          `**${f(c.totalAtAwsLatency)}**`,
          f(c.stepFunctionsStandard),
          `${f(c.cheaperThanStepFunctionsBy, 1)}×`,
        ];
      }),
    ),
  );
  out.push("");
  if (report.modeled.length > 0) {
    out.push(
      "### The model of AWS: DynamoDB, SQS and EventBridge as measured on moto; Lambda as measured on memory-6ms (every AWS call 6 ms, the handler's real concurrency)",
    );
    out.push("");
    out.push(
      table(
        [
          "workload",
          "DDB + SQS + EventBridge",
          "Lambda req",
          "Lambda GB-s",
          "total",
          "total, Lambda as 6 ms per call summed",
          "SFN / weft",
        ],
        report.modeled.map((m) => [
          m.workload,
          f(m.services),
          f(m.lambdaRequests),
          f(m.lambdaDuration),
          `**${f(m.total)}**`,
          f(m.totalSequential),
          `${f(PRICES.stepFunctionsStandardPerMillionTransitions / m.total, 1)}×`,
        ]),
      ),
    );
    out.push("");
  }
  out.push(
    `Prices: DynamoDB $${PRICES.dynamoWritePerMillionUnits}/M write units, $${PRICES.dynamoReadPerMillionUnits}/M read units; SQS $${PRICES.sqsPerMillionRequests}/M requests (per 64 KB chunk, a batch call is one request); Lambda $${PRICES.lambdaPerMillionRequests}/M requests + $${PRICES.lambdaPerGbSecondArm64}/GB-s (arm64, ${PRICES.lambdaMemoryGb} GB); EventBridge $${PRICES.eventBridgePerMillionEvents}/M events; Step Functions Standard $${PRICES.stepFunctionsStandardPerMillionTransitions}/M transitions (one per node: a lower bound).`,
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
