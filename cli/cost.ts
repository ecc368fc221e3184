/**
 * `weft cost WORKFLOW`: the modeled cost of a run before it happens (shared/engine/cost-estimate.ts),
 * per node and in total, for N executions, beside Step Functions Standard and Express for the same
 * runs. Loaded only for this command (it compiles the definition and loads the task types).
 */
import { formatUsd, type ModeledRequests } from "../shared/domain/cost-model.js";
import { WeftError } from "../shared/domain/errors.js";
import { stringifyExact } from "../shared/domain/exact-numbers.js";
import { compileGraph } from "../shared/domain/graph.js";
import { PAYLOAD_LIMITS } from "../shared/domain/payload.js";
import { PRICES } from "../shared/domain/prices.js";
import { DEFAULT_CLAIM_AFTER_SECONDS, DEFAULT_MAX_CONTINUATIONS } from "../shared/engine/context.js";
import { estimateRun, type RunEstimate } from "../shared/engine/cost-estimate.js";
import { DEFAULT_FAN_IN } from "../shared/engine/dispatch-mode.js";
import { createTaskRegistry } from "../shared/tasks/builtins.js";
import { integerOption, readInput } from "./args.js";
import type { Command } from "./commands.js";
import { EXIT, UsageError } from "./errors.js";
import { paint, type Style } from "./render.js";

/** Defaults of the estimate's assumptions: small outputs, one run, 100 ms a node. */
export const COST_DEFAULTS = { outputBytes: 100, executions: 1, nodeMs: 100 } as const;
/** The most executions one estimate multiplies by (10^12: beyond it dollars lose their cents). */
export const MAX_COST_EXECUTIONS = 1_000_000_000_000;

export const cost: Command = async (ctx, [name]) => {
  const values = ctx.values;
  const version = integerOption("version", values.version, 1);
  const outputBytes = integerOption("output-bytes", values["output-bytes"], 2) ?? COST_DEFAULTS.outputBytes;
  if (outputBytes > PAYLOAD_LIMITS.maxBytes)
    throw new UsageError(
      `--output-bytes must be at most ${PAYLOAD_LIMITS.maxBytes} (a node output's limit), got "${outputBytes}"`,
    );
  const executions = integerOption("executions", values.executions, 1) ?? COST_DEFAULTS.executions;
  if (executions > MAX_COST_EXECUTIONS)
    throw new UsageError(`--executions must be at most ${MAX_COST_EXECUTIONS}, got "${values.executions}"`);
  const items = integerOption("items", values.items, 0);
  const nodeMs = integerOption("node-ms", values["node-ms"], 1) ?? COST_DEFAULTS.nodeMs;
  const input = await readInput(values.input);
  const workflow = await ctx.client().getWorkflow(name as string, version);
  const graph = compileGraph(workflow.definition);
  let estimate: RunEstimate;
  try {
    estimate = estimateRun(
      graph,
      {
        inputJson: stringifyExact(input?.value ?? {}) ?? "{}",
        outputBytes,
        nodeMs,
        ...(items === undefined ? {} : { items }),
      },
      {
        // Built-in task types known here; a custom type runs on a worker like any task.
        tasks: createTaskRegistry(),
        fanIn: DEFAULT_FAN_IN,
        workerMemoryGb: PRICES.lambdaMemoryGb,
        maxContinuations: DEFAULT_MAX_CONTINUATIONS,
        claimAfterMs: DEFAULT_CLAIM_AFTER_SECONDS * 1000,
      },
    );
  } catch (error) {
    if (error instanceof WeftError) throw new UsageError(error.message);
    throw error;
  }
  const report = costReport(workflow.name, workflow.version, executions, { outputBytes, nodeMs }, estimate);
  ctx.emit(report);
  ctx.print(renderCost(ctx.style, report));
  return EXIT.ok;
};

export interface CostReport {
  workflow: string;
  version: number;
  executions: number;
  assumptions: { outputBytes: number; nodeMs: number; note: string };
  model: string;
  /** One run, modeled. */
  perRun: { requests: ModeledRequests; usd: RunEstimate["cost"]["usd"]; totalUsd: number };
  /** `executions` runs. */
  totalUsd: number;
  nodes: Array<{
    nodeId: string;
    type: string;
    mode: string;
    continued: boolean;
    items?: number;
    writeUnits: number;
    messages: number;
    s3Puts: number;
    usd: number;
  }>;
  stepFunctions: {
    transitionsPerRun: number;
    standardUsd: number;
    expressUsd: number;
  };
}

function costReport(
  workflow: string,
  version: number,
  executions: number,
  assumptions: { outputBytes: number; nodeMs: number },
  estimate: RunEstimate,
): CostReport {
  return {
    workflow,
    version,
    executions,
    assumptions: {
      ...assumptions,
      note: "modeled: every node completes on its first attempt; not a bill (docs/cost.md)",
    },
    model: estimate.cost.model,
    perRun: { requests: estimate.cost.requests, usd: estimate.cost.usd, totalUsd: estimate.cost.totalUsd },
    totalUsd: estimate.cost.totalUsd * executions,
    nodes: estimate.nodes.map((n) => ({
      nodeId: n.nodeId,
      type: n.type,
      mode: n.mode,
      continued: n.continued,
      ...(n.items === undefined ? {} : { items: n.items }),
      writeUnits: n.requests.dynamodb.writeUnits + n.requests.dynamodb.indexWriteUnits,
      messages: n.requests.sqs.messages,
      s3Puts: n.requests.s3.puts,
      usd: n.usd,
    })),
    stepFunctions: {
      transitionsPerRun: estimate.stepFunctions.transitions,
      standardUsd: estimate.stepFunctions.standardUsd * executions,
      expressUsd: estimate.stepFunctions.expressUsd * executions,
    },
  };
}

const pad = (text: string, width: number) => text.padEnd(width);
const num = (value: number) => (Number.isInteger(value) ? String(value) : value.toFixed(2));

export function renderCost(style: Style, report: CostReport): string {
  const rows = report.nodes.map((n) => [
    n.nodeId,
    n.type,
    n.continued ? `${n.mode} (continued)` : n.mode,
    n.items === undefined ? "" : String(n.items),
    num(n.writeUnits),
    num(n.messages),
    num(n.s3Puts),
    formatUsd(n.usd),
  ]);
  const header = ["NODE", "TYPE", "DISPATCH", "ITEMS", "WRITE UNITS", "MESSAGES", "S3 PUT", "USD/RUN"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => pad(c, widths[i]!))
      .join("  ")
      .trimEnd();
  const r = report.perRun.requests;
  const u = report.perRun.usd;
  const runs = report.executions === 1 ? "1 run" : `${report.executions} runs`;
  return [
    paint(style, "bold", `${report.workflow} v${report.version}: modeled cost (${report.model})`),
    `assumed: every node completes on its first attempt, outputs of ${report.assumptions.outputBytes} bytes, ${report.assumptions.nodeMs} ms a node`,
    "",
    line(header),
    ...rows.map(line),
    "",
    "per run, by service:",
    `  DynamoDB     ${num(r.dynamodb.writeUnits + r.dynamodb.indexWriteUnits)} write units, ${num(r.dynamodb.readUnits)} read units  ${formatUsd(u.dynamodb)}`,
    `  SQS          ${num(r.sqs.messages)} messages, ${num(r.sqs.requests)} requests  ${formatUsd(u.sqs)}`,
    `  Lambda       ${num(r.lambda.invocations)} invocations, ${num(r.lambda.gbSeconds)} GB-s  ${formatUsd(u.lambda)}`,
    `  EventBridge  ${num(r.eventbridge.events)} events  ${formatUsd(u.eventbridge)}`,
    `  S3           ${num(r.s3.puts)} PUT, ${num(r.s3.gets)} GET  ${formatUsd(u.s3)}`,
    `  total        ${formatUsd(report.perRun.totalUsd)} a run`,
    "",
    `${runs}: weft ${formatUsd(report.totalUsd)}`,
    `  Step Functions Standard ${formatUsd(report.stepFunctions.standardUsd)} (${report.stepFunctions.transitionsPerRun} state transitions a run at $25 per million)`,
    `  Step Functions Express  ${formatUsd(report.stepFunctions.expressUsd)} ($1.00 per million requests + the run's duration at 64 MB)`,
    paint(style, "dim", "modeled from the engine's protocol, not a bill: see docs/cost.md"),
  ].join("\n");
}
