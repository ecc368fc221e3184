/**
 * The modeled cost of an execution from its records: the protocol's counts per transition
 * (domain/cost-model.ts PROTOCOL) applied to what the records show — attempts per node, statuses,
 * outputs inline or in blobs, how each node is dispatched (dispatch-mode.ts), a map's items and
 * lanes. Pure. A child execution (a `workflow` node's) is counted as its own execution, not here.
 * It is a model, not a bill: see docs/cost.md for its limits.
 */

import {
  addRequests,
  itemWriteUnits,
  type ModeledCost,
  type ModeledRequests,
  noRequests,
  PROTOCOL,
  priceRequests,
} from "../domain/cost-model.js";
import { failureGoesOn } from "../domain/edges.js";
import type { GraphNode, WorkflowGraph } from "../domain/graph.js";
import { blobsOf, storedBytes } from "../domain/payload.js";
import type { ExecutionRecord, NodeRecord } from "../domain/records.js";
import { VARS_TASK_TYPE } from "../domain/vars.js";
import type { TaskRegistry } from "../tasks/task-type.js";
import { type DispatchMode, dispatchMode, type FanInSettings, fanInSource } from "./dispatch-mode.js";

export interface CostSettings {
  tasks: TaskRegistry;
  fanIn: FanInSettings;
  /** The worker function's memory (GB), for Lambda GB-seconds. */
  workerMemoryGb: number;
  /** Continuations one message may run (EngineOptions.maxContinuations, default 16). */
  maxContinuations: number;
  /** EngineOptions.claimAfterSeconds in ms (attempt-fence.ts): shorter first attempts carry their claim. */
  claimAfterMs: number;
  /**
   * Bytes of the execution's variables item (engine/vars.ts) as it ended, for the write units of
   * each variables write; unknown (0) counts each as one unit.
   */
  variablesBytes?: number;
}

/** One node's share of the modeled cost. */
export interface NodeCost {
  nodeId: string;
  type: string;
  mode: DispatchMode;
  attempts: number;
  status: NodeRecord["status"];
  /** Whether a continuation ran its first attempt (no message). */
  continued: boolean;
  /** A map's items, counted with it. */
  items?: number;
  requests: ModeledRequests;
  usd: number;
}

export interface ExecutionCostModel {
  cost: ModeledCost;
  /** The execution's own requests (create, sinks, end, its input's blob). */
  execution: ModeledRequests;
  nodes: NodeCost[];
}

const FINAL = new Set(["SUCCEEDED", "FAILED", "CANCELLED"]);
const ran = (record: NodeRecord | undefined): record is NodeRecord =>
  record !== undefined && record.attempt >= 1;

/** The execution's modeled cost from its graph, its record and its nodes' records (map items not needed). */
export function modelExecutionCost(
  graph: WorkflowGraph,
  execution: ExecutionRecord,
  nodeRecords: readonly NodeRecord[],
  settings: CostSettings,
): ExecutionCostModel {
  const records = new Map(nodeRecords.map((r) => [r.nodeId, r]));
  const P = PROTOCOL;
  const nodeEvents = graph.definition.events?.nodes === true;
  const modeOf = (node: GraphNode) => dispatchMode(settings, node);
  const inline = (node: GraphNode) => modeOf(node) === "inline";
  const variablesUnits = itemWriteUnits(settings.variablesBytes ?? 0);

  // ── the execution's own writes ───────────────────────────────────────────────────────────────
  const own = noRequests();
  const executionUnits = itemWriteUnits(P.itemBytes.execution + storedBytes(execution.input));
  own.dynamodb.writeUnits += P.execution.createWrites * executionUnits;
  own.dynamodb.indexWriteUnits += P.execution.createIndexWriteUnits;
  // Sent its entries before its record (engine/executions.ts): no first look, so no due index.
  const sentFirst =
    execution.idempotencyKey === undefined &&
    execution.parent === undefined &&
    execution.startedAt === execution.createdAt &&
    graph.entries.every((index) => modeOf(graph.nodes[index]!) === "direct");
  if (execution.startedAt !== undefined && !sentFirst)
    own.dynamodb.indexWriteUnits += P.execution.firstLookIndexWriteUnits;
  // A client's start under the workflow's rate limit took a token (engine/rate-limits.ts).
  if (graph.definition.rateLimit !== undefined && execution.parent === undefined) {
    own.dynamodb.writeUnits += P.flowControl.startTokenWrites;
    own.dynamodb.readUnits += P.flowControl.startTokenReads;
  }
  if (execution.startedAt !== undefined) {
    own.eventbridge.events += 1;
    // Created PENDING (`start: false`) and started later by a trigger: one more write.
    if (execution.startedAt > execution.createdAt)
      own.dynamodb.writeUnits += P.execution.triggerWrites * executionUnits;
  }
  own.s3.puts += blobsOf(execution.input).length * P.payloads.putsPerBlob;
  if (graph.sinks.length > 1)
    own.dynamodb.writeUnits +=
      execution.sinksDone.length * P.execution.sinkWritesWhenSeveral * executionUnits;
  if (FINAL.has(execution.status)) {
    own.dynamodb.writeUnits += P.execution.endWrites * executionUnits;
    own.eventbridge.events += P.execution.events - 1;
    const mayLeaveWork =
      execution.status !== "SUCCEEDED" ||
      graph.nodes.some((n) => n.fanIn.kind !== "all" || settings.tasks.get(n.type)?.composite === "map");
    if (mayLeaveWork) own.dynamodb.writeUnits += P.execution.cleanupWrites * executionUnits;
  }

  // ── which nodes a continuation ran (no message of their own) ─────────────────────────────────
  const runByWorker = (node: GraphNode) => !inline(node) && modeOf(node) !== "deferred";
  /** The parent whose completion decided a join: the last of its inputs to finish. */
  const deciderOf = (node: GraphNode): number | undefined => {
    const record = records.get(node.id);
    const inputs = record && record.okDeps.length > 0 ? record.okDeps : node.parents;
    let best: { index: number; at: number } | undefined;
    for (const index of inputs) {
      const at = records.get(graph.nodes[index]?.id ?? "")?.finishedAt ?? 0;
      if (!best || at >= best.at) best = { index, at };
    }
    return best?.index;
  };
  /** The child `parent`'s completion kept for its invocation (propagation.ts afterCompletion keepOne). */
  const keptChild = (parent: GraphNode): GraphNode | undefined => {
    const children = parent.children.map((i) => graph.nodes[i]!).filter((c) => ran(records.get(c.id)));
    const direct = children.filter((c) => modeOf(c) === "direct");
    if (direct.length > 0) return direct[0];
    return children.find((c) => modeOf(c) === "join" && deciderOf(c) === parent.index);
  };
  /** Hops of continuation from the node that had a message (0 for that one). */
  const hops = new Map<string, number>();
  const hopsOf = (node: GraphNode, seen = new Set<string>()): number => {
    const known = hops.get(node.id);
    if (known !== undefined) return known;
    let value = 0;
    if (!seen.has(node.id)) {
      seen.add(node.id);
      for (const index of node.parents) {
        const parent = graph.nodes[index]!;
        const record = records.get(parent.id);
        // Any node a worker completes keeps a child (a deferred one too, once its message runs it).
        // A node under concurrency limits sends its child rather than run it (worker.ts handleLimited).
        if (
          inline(parent) ||
          record?.status !== "COMPLETED" ||
          isComposite(settings, parent) ||
          parent.concurrency
        )
          continue;
        if (keptChild(parent)?.id !== node.id) continue;
        const depth = hopsOf(parent, seen) + 1;
        if (depth <= settings.maxContinuations) value = depth;
      }
    }
    hops.set(node.id, value);
    return value;
  };

  // ── each node ────────────────────────────────────────────────────────────────────────────────
  const nodes: NodeCost[] = [];
  const all: GraphNode[] = [...graph.nodes];
  // The onFailure handler, once a failure started it: a node of its own (not in the DAG).
  if (graph.onFailure && records.has(graph.onFailure.id)) all.push(graph.onFailure);
  for (const node of all) {
    const record = records.get(node.id);
    if (!record || (record.status === "PENDING" && record.attempt === 0 && record.okDeps.length === 0))
      continue;
    const mode = node.onFailureHandler ? "deferred" : modeOf(node);
    const r = noRequests();
    const continued = runByWorker(node) && ran(record) && record.attempt >= 1 && hopsOf(node) > 0;
    const line: NodeCost = {
      nodeId: node.id,
      type: node.type,
      mode,
      attempts: record.attempt,
      status: record.status,
      continued,
      requests: r,
      usd: 0,
    };
    const outputUnits = itemWriteUnits(P.itemBytes.node + (record.output ? storedBytes(record.output) : 0));

    // Arrivals recorded per parent before the node is decided (wide fan-ins).
    if (mode === "fanIn") r.dynamodb.writeUnits += record.okDeps.length + record.badDeps.length;
    else if (node.parents.length > 1 && fanInSource(settings.fanIn, node) === "sharded")
      r.dynamodb.writeUnits += node.parents.length * P.fanIn.shardedArrivalWrites;

    if (mode === "inline") {
      // Decided by a write where its arrivals are sharded (PENDING → QUEUED), then completed.
      if (fanInSource(settings.fanIn, node) === "sharded" && node.parents.length > 1)
        r.dynamodb.writeUnits += P.node.queueWrites;
      if (record.status === "COMPLETED") r.dynamodb.writeUnits += P.node.inlineWrites * outputUnits;
    }
    const attempts = record.attempt;
    if (mode !== "inline" && attempts >= 1) {
      // Dispatched by a write first (deferred, arrivals), then by its message unless continued.
      if (mode === "deferred" || mode === "fanIn") r.dynamodb.writeUnits += P.node.queueWrites;
      if (!continued) r.sqs.messages += P.node.messages;
      // A first attempt by message, not a waiting kind: its claim rides its ending when it was short.
      const byMessage = mode === "direct" || mode === "join";
      const firstMs =
        attempts === 1 && record.startedAt !== undefined
          ? (record.finishedAt ?? Number.POSITIVE_INFINITY) - record.startedAt
          : 0;
      const carried =
        byMessage &&
        !isComposite(settings, node) &&
        settings.claimAfterMs > 0 &&
        firstMs < settings.claimAfterMs;
      r.dynamodb.writeUnits += (attempts - (carried ? 1 : 0)) * P.node.claimWrites;
      r.dynamodb.writeUnits += (attempts - 1) * P.node.retryWrites;
      r.sqs.messages += (attempts - 1) * P.node.retryMessages;
      if (nodeEvents) r.eventbridge.events += attempts * P.nodeEvents.perAttemptStarted + (attempts - 1);
      // The inputs read per attempt (eventually consistent execution; parents strongly).
      const inputs = node.parents.map((i) => records.get(graph.nodes[i]!.id)?.output);
      r.dynamodb.readUnits +=
        attempts *
        (P.reads.executionUnitsPerRun +
          inputs.reduce(
            (sum, out) =>
              sum +
              (out ? Math.max(1, Math.ceil(storedBytes(out) / P.reads.bytesPerReadUnit)) : 0) *
                P.reads.unitsPerInputRead,
            0,
          ));
      r.s3.gets += attempts * inputs.reduce((sum, out) => sum + (out ? blobsOf(out).length : 0), 0);
      const composite = isComposite(settings, node);
      if (composite) r.dynamodb.writeUnits += P.map.startWrites;
      if (!composite && record.startedAt !== undefined) {
        const ms = Math.max(1, (record.finishedAt ?? record.startedAt) - record.startedAt);
        r.lambda.gbSeconds += attempts * (ms / 1000) * settings.workerMemoryGb;
      }
      if (record.composite?.kind === "map") {
        const { items, lanes, chunks } = record.composite;
        line.items = items;
        const M = P.map;
        r.dynamodb.writeUnits += M.reserveWriteUnits + items * M.itemWrites;
        r.sqs.messages += items * M.itemMessages;
        r.s3.puts += chunks.reduce((sum, chunk) => sum + blobsOf(chunk).length, 0);
        if (record.status === "COMPLETED") {
          r.dynamodb.writeUnits += lanes * M.laneArrivalWrites + M.checkWrites + M.releaseWriteUnits;
          r.sqs.messages += M.checkMessages;
          // Items' time, at most: every lane busy from the map's start to its end.
          if (record.startedAt !== undefined && record.finishedAt !== undefined)
            r.lambda.gbSeconds +=
              (lanes * Math.max(items, record.finishedAt - record.startedAt) * settings.workerMemoryGb) /
              1000;
          r.dynamodb.readUnits += items * P.reads.executionUnitsPerRun;
        }
      }
    }
    // Its concurrency limits' slots, taken and given back per attempt (PROTOCOL.flowControl).
    if (node.concurrency && attempts >= 1) {
      const limits = new Set(
        node.concurrency.map((limit, i) => (limit.scope === "global" ? `g${limit.key}` : i)),
      ).size;
      r.dynamodb.writeUnits += attempts * limits * P.flowControl.slotWritesPerLimit;
      r.dynamodb.readUnits += attempts * limits * P.flowControl.slotReadsPerLimit;
    }
    // Its variables written (a `vars` node, an `assign`) before its completion: once per completion.
    if (record.status === "COMPLETED" && (node.type === VARS_TASK_TYPE || node.assign !== undefined)) {
      r.dynamodb.writeUnits += P.vars.applyWrites * variablesUnits;
      r.dynamodb.readUnits +=
        P.vars.applyReads * Math.max(1, Math.ceil((settings.variablesBytes ?? 0) / P.reads.bytesPerReadUnit));
    }
    switch (record.status) {
      case "COMPLETED":
        if (mode !== "inline") r.dynamodb.writeUnits += P.node.completionWrites * outputUnits;
        if (record.output && !("parts" in record.output))
          r.s3.puts += blobsOf(record.output).length * P.payloads.putsPerBlob;
        if (nodeEvents) r.eventbridge.events += P.nodeEvents.perEnd;
        break;
      case "FAILED":
        r.dynamodb.writeUnits += failureGoesOn(node, record.error)
          ? P.node.completionWrites
          : P.node.failWriteUnits;
        if (record.error?.retryable === false) r.dynamodb.writeUnits += P.node.deadLetterWrites;
        if (nodeEvents) r.eventbridge.events += P.nodeEvents.perEnd;
        break;
      case "SKIPPED":
        r.dynamodb.writeUnits += P.node.skipWrites;
        if (nodeEvents) r.eventbridge.events += P.nodeEvents.perEnd;
        break;
      case "CANCELLED":
        r.dynamodb.writeUnits += P.node.cancelWriteUnits;
        break;
      default:
        break;
    }
    // Each message a worker invocation at most (Lambda's poller batches them when several wait);
    // each message sent, received and deleted.
    r.lambda.invocations = r.sqs.messages;
    r.sqs.requests = 3 * r.sqs.messages;
    line.usd = priceRequests(r).totalUsd;
    nodes.push(line);
  }

  const total = addRequests(noRequests(), own);
  for (const line of nodes) addRequests(total, line.requests);
  return { cost: priceRequests(total), execution: own, nodes };
}

function isComposite(settings: CostSettings, node: GraphNode): boolean {
  return settings.tasks.get(node.type)?.composite !== undefined;
}
