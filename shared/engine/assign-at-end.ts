/**
 * A node's `assign` where its completion does not come from an attempt of the engine's worker: a
 * map's last lane, a child execution's end, a callback's settlement, an external worker's report.
 * Its scope (input, dependencies) is read here, since the run that had it is long gone; nothing is
 * read for a node without `assign`.
 */
import { TerminalError } from "../domain/errors.js";
import type { GraphNode, WorkflowGraph } from "../domain/graph.js";
import type { Payload } from "../domain/payload.js";
import type { ExecutionRecord, NodeRecord } from "../domain/records.js";
import type { EngineContext } from "./context.js";
import { loadDeps } from "./dep-outputs.js";
import { depIndexesOf, dispatchMode } from "./dispatch-mode.js";
import { expressionScope } from "./prepare.js";
import { loadValues } from "./values.js";
import { applyAssign } from "./vars.js";

/**
 * Applies `node`'s assign from `output` before its completion is written. A refusal of the assign
 * (an expression, a limit, a secret-looking value) comes back for the caller to fail the attempt
 * with; a fault of the store is thrown (the message or the caller's request comes back).
 */
export async function assignAtEnd(
  ctx: EngineContext,
  execution: ExecutionRecord,
  graph: WorkflowGraph,
  node: GraphNode,
  record: NodeRecord,
  output: Payload,
): Promise<TerminalError | undefined> {
  if (node.assign === undefined) return undefined;
  try {
    const deps = await loadDeps(
      ctx,
      execution.executionId,
      graph,
      depIndexesOf(dispatchMode(ctx, node), node, record.okDeps),
      node,
    );
    await assignFrom(ctx, execution, node, record.attempt, deps, output);
    return undefined;
  } catch (error) {
    if (error instanceof TerminalError) return error;
    throw error;
  }
}

/**
 * Applies `node`'s assign from its dependencies' outputs (already at hand) and its own output: the
 * scope its expressions see (input, deps) plus `$output`. Refusals are thrown (TerminalError).
 */
export async function assignFrom(
  ctx: EngineContext,
  execution: ExecutionRecord,
  node: GraphNode,
  attempt: number,
  deps: ReadonlyArray<readonly [string, Payload]>,
  output: Payload,
): Promise<void> {
  const [input, values, value] = await Promise.all([
    ctx.payloads.load(execution.input),
    loadValues(ctx, deps),
    ctx.payloads.load(output),
  ]);
  await applyAssign(ctx, execution, node, attempt, expressionScope(execution, input, values), value);
}
