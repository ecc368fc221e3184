/**
 * The modeled cost of an execution as its records stand (GET /executions/{id}, with
 * ViewOptions.cost): modelExecutionCost (cost-model.ts) under the engine's own settings, over the
 * records the description read already — no read of its own.
 */
import type { ModeledCost } from "../domain/cost-model.js";
import type { WorkflowGraph } from "../domain/graph.js";
import { PRICES } from "../domain/prices.js";
import type { ExecutionRecord, NodeRecord } from "../domain/records.js";
import type { EngineContext } from "./context.js";
import { modelExecutionCost } from "./cost-model.js";

export function executionCostOf(
  ctx: Pick<EngineContext, "tasks" | "fanIn" | "maxContinuations" | "claimAfterMs">,
  graph: WorkflowGraph,
  execution: ExecutionRecord,
  records: readonly NodeRecord[],
  variablesBytes?: number,
): ModeledCost {
  return modelExecutionCost(graph, execution, records, {
    tasks: ctx.tasks,
    fanIn: ctx.fanIn,
    // The deployed worker's memory (infra/lib/functions.ts): the engine is not told its own.
    workerMemoryGb: PRICES.lambdaMemoryGb,
    maxContinuations: ctx.maxContinuations,
    claimAfterMs: ctx.claimAfterMs,
    ...(variablesBytes === undefined ? {} : { variablesBytes }),
  }).cost;
}
