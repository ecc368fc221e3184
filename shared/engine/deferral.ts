/**
 * When a deferred task type (e.g. `wait`) may start: asked when the node is queued. Its params
 * decide when it runs, so their expressions are evaluated now, over the scope its run will see
 * (execution input + its done dependencies' outputs), and parsed by the task type's schema before
 * `defer` gets them with the engine's clock.
 *
 * Params that cannot be evaluated, do not parse or that `defer` refuses queue the node at once,
 * with no not-before time: its run evaluates and parses them again and fails, terminally, with the
 * ExpressionError naming the param (prepare.ts), rather than the node waiting forever or claiming
 * it waited.
 */
import { TerminalError } from "../domain/errors.js";
import type { GraphNode, WorkflowGraph } from "../domain/graph.js";
import type { ExecutionRecord } from "../domain/records.js";
import * as z from "../domain/zod.js";
import type { EngineContext } from "./context.js";
import { evaluateInScope } from "./waiting.js";

export async function notBeforeOf(
  ctx: EngineContext,
  execution: ExecutionRecord,
  graph: WorkflowGraph,
  node: GraphNode,
  okDeps: readonly number[],
  now: number,
): Promise<number | undefined> {
  const task = ctx.tasks.get(node.type);
  if (!task?.defer) return undefined;
  let delayMs: number;
  try {
    const resolved = await evaluateInScope(ctx, execution, graph, node, okDeps, node.params, "params");
    const parsed = z.ownSafeParse(task.params, resolved);
    if (!parsed.success) return undefined;
    delayMs = task.defer(parsed.data, { now });
  } catch (error) {
    // Only the definition's fault is left to the run; a store or payload outage is retried as usual.
    if (error instanceof TerminalError) return undefined;
    throw error;
  }
  return Number.isFinite(delayMs) && delayMs > 0 ? now + delayMs : undefined;
}
