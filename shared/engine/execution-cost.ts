/**
 * The modeled cost of a stored execution (GET /executions/{id}): its records read, and
 * modelExecutionCost (cost-model.ts) applied to them. Three reads beside the description's own.
 */
import type { ModeledCost } from "../domain/cost-model.js";
import { notFound } from "../domain/errors.js";
import { compileGraph } from "../domain/graph.js";
import { PRICES } from "../domain/prices.js";
import type { EnginePorts } from "../ports.js";
import type { TaskRegistry } from "../tasks/task-type.js";
import { DEFAULT_CLAIM_AFTER_SECONDS, DEFAULT_MAX_CONTINUATIONS } from "./context.js";
import { type CostSettings, modelExecutionCost } from "./cost-model.js";
import { DEFAULT_FAN_IN, type FanInSettings } from "./dispatch-mode.js";

/** What the cost needs of an engine (Engine's public fields). */
export interface CostSource {
  ports: Pick<EnginePorts, "store">;
  tasks: TaskRegistry;
  options: { fanIn?: Partial<FanInSettings>; maxContinuations?: number; claimAfterSeconds?: number };
}

export function costSettings(source: Pick<CostSource, "tasks" | "options">): CostSettings {
  return {
    tasks: source.tasks,
    fanIn: { ...DEFAULT_FAN_IN, ...source.options.fanIn },
    // The deployed worker's memory (infra/lib/functions.ts): the engine is not told its own.
    workerMemoryGb: PRICES.lambdaMemoryGb,
    maxContinuations: source.options.maxContinuations ?? DEFAULT_MAX_CONTINUATIONS,
    claimAfterMs: (source.options.claimAfterSeconds ?? DEFAULT_CLAIM_AFTER_SECONDS) * 1000,
  };
}

export async function executionCost(source: CostSource, executionId: string): Promise<ModeledCost> {
  const { store } = source.ports;
  const execution = await store.getExecution(executionId);
  if (!execution) throw notFound(`execution "${executionId}" does not exist`);
  const version = await store.getWorkflowVersion(execution.workflow, execution.version);
  if (!version)
    throw notFound(`workflow "${execution.workflow}" version ${execution.version} does not exist`);
  const nodes = await store.listNodes(executionId);
  return modelExecutionCost(compileGraph(version.definition), execution, nodes, costSettings(source)).cost;
}
