/**
 * The modeled cost of a run before it happens (`weft cost`): the records a run would leave — every
 * node completed on its first attempt, outputs of the given size, a map's items counted from its
 * literal list or from `items` — given to modelExecutionCost (cost-model.ts), beside what Step
 * Functions would charge for the same run. Pure.
 */
import { type ModeledCost, stepFunctionsExpressUsd, stepFunctionsStandardUsd } from "../domain/cost-model.js";
import { badRequest } from "../domain/errors.js";
import { requiredCompletions } from "../domain/fan-in.js";
import type { GraphNode, WorkflowGraph } from "../domain/graph.js";
import { MAP_LIMITS, mapParamsSchema } from "../domain/map.js";
import { composePayload, PAYLOAD_LIMITS, type Payload, storedBytes } from "../domain/payload.js";
import type { ExecutionRecord, NodeRecord } from "../domain/records.js";
import { type CostSettings, modelExecutionCost, type NodeCost } from "./cost-model.js";
import { dispatchMode } from "./dispatch-mode.js";

export interface EstimateOptions {
  /** The execution's input as JSON text. */
  inputJson: string;
  /** Bytes of every node's output (JSON text). */
  outputBytes: number;
  /** Items of a map whose list is an expression (a literal list counts itself). */
  items?: number;
  /** How long each node runs (ms): Lambda GB-seconds, and Step Functions Express's duration. */
  nodeMs: number;
  /** Values over this size go to the blob store (PAYLOAD_LIMITS.inlineBytes). */
  inlineBytes?: number;
}

export interface RunEstimate {
  cost: ModeledCost;
  nodes: NodeCost[];
  /** Node runs: each node, and each map item. */
  nodeRuns: number;
  /** The run's duration: its longest path at `nodeMs` a node. */
  durationMs: number;
  stepFunctions: {
    /** One state transition per node run (a lower bound: a Task state's retries add more). */
    transitions: number;
    standardUsd: number;
    /** One request and the run's duration at the smallest memory (64 MB). */
    expressUsd: number;
  };
}

/** A value of `bytes` bytes of JSON text as the engine would store it (inline or a blob reference). */
function sizedPayload(bytes: number, inlineBytes: number, key: string): Payload {
  if (bytes > inlineBytes) return { blob: { key, sha256: key, bytes } };
  return { json: JSON.stringify("x".repeat(Math.max(0, bytes - 2))) };
}

function mapItems(node: GraphNode, items: number | undefined): number {
  const params = mapParamsSchema.safeParse(node.params);
  if (params.success && Array.isArray(params.data.items)) return params.data.items.length;
  if (items === undefined)
    throw badRequest(
      `map node "${node.id}" takes its list from an expression: give its item count (--items N)`,
    );
  return items;
}

export function estimateRun(
  graph: WorkflowGraph,
  options: EstimateOptions,
  settings: CostSettings,
): RunEstimate {
  const inlineBytes = options.inlineBytes ?? PAYLOAD_LIMITS.inlineBytes;
  const finished = new Map<number, number>();
  const outputs = new Map<number, Payload>();
  const records: NodeRecord[] = [];
  let nodeRuns = 0;
  // Definition order need not be topological: visit parents first.
  const visit = (node: GraphNode): number => {
    const known = finished.get(node.index);
    if (known !== undefined) return known;
    const start = Math.max(0, ...node.parents.map((p) => visit(graph.nodes[p]!)));
    const mode = dispatchMode(settings, node);
    const task = settings.tasks.get(node.type);
    let ms = mode === "inline" ? 0 : options.nodeMs;
    let output: Payload;
    const record: NodeRecord = {
      executionId: "estimate",
      nodeId: node.id,
      status: "COMPLETED",
      attempt: 1,
      okDeps:
        node.fanIn.kind === "all"
          ? []
          : node.parents.slice(0, requiredCompletions(node.fanIn, node.parents.length)),
      badDeps: [],
    };
    if (mode === "inline") {
      // A merge: its dependencies' values by reference, written whole when too wide.
      const parts = node.parents.map(
        (p) => [graph.nodes[p]!.id, outputs.get(p) ?? { json: "null" }] as const,
      );
      const composed = composePayload(parts);
      output =
        storedBytes(composed) > PAYLOAD_LIMITS.maxPartsBytes
          ? sizedPayload(storedBytes(composed), inlineBytes, node.id)
          : composed;
    } else output = sizedPayload(options.outputBytes, inlineBytes, node.id);
    nodeRuns += 1;
    if (task?.composite === "map") {
      const items = mapItems(node, options.items);
      const params = mapParamsSchema.safeParse(node.params);
      const concurrency =
        (params.success ? params.data.maxConcurrency : undefined) ?? MAP_LIMITS.defaultMaxConcurrency;
      const lanes = Math.max(1, Math.min(concurrency, items));
      const chunks = Math.max(1, Math.ceil(items / MAP_LIMITS.chunkSize));
      record.composite = {
        kind: "map",
        items,
        lanes,
        chunks: Array.from({ length: chunks }, () => ({ json: "[]" })),
      };
      ms = Math.ceil(items / lanes) * options.nodeMs;
      // Its output: the items' outputs as one list.
      output = sizedPayload(items * (options.outputBytes + 1) + 2, inlineBytes, node.id);
      nodeRuns += items;
    }
    record.startedAt = start;
    record.finishedAt = start + ms;
    record.output = output;
    records.push(record);
    outputs.set(node.index, output);
    finished.set(node.index, start + ms);
    return start + ms;
  };
  for (const node of graph.nodes) visit(node);
  const durationMs = Math.max(0, ...finished.values());
  const inputBytes = Buffer.byteLength(options.inputJson, "utf8");
  const execution: ExecutionRecord = {
    executionId: "estimate",
    workflow: graph.definition.name,
    version: 0,
    status: "SUCCEEDED",
    input:
      inputBytes > inlineBytes
        ? { blob: { key: "input", sha256: "input", bytes: inputBytes } }
        : { json: options.inputJson },
    createdAt: 0,
    startedAt: 0,
    finishedAt: durationMs,
    sinksDone: graph.sinks.length > 1 ? [...graph.sinks] : [],
  };
  const model = modelExecutionCost(graph, execution, records, settings);
  return {
    cost: model.cost,
    nodes: model.nodes,
    nodeRuns,
    durationMs,
    stepFunctions: {
      transitions: nodeRuns,
      standardUsd: stepFunctionsStandardUsd(nodeRuns),
      expressUsd: stepFunctionsExpressUsd(durationMs),
    },
  };
}
