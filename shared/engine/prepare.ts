/**
 * What a claimed attempt resolves before its handler may run: the execution input, the
 * dependencies' outputs, whether there is anything to run at all, and the params with their
 * expressions evaluated (domain/expressions.ts). It runs inside the attempt (attempt.ts), so it
 * is bounded by the attempt's deadline and an error here ends the attempt like a handler's.
 *
 * There is nothing to run when the node's `when` is not true, or when the node may be skipped and
 * none of its inputs was done: its dependencies were all skipped, which an `all` fan-in decided
 * by arrival shards (dispatch-mode.ts) cannot tell from completions before this point.
 */
import { TerminalError } from "../domain/errors.js";
import { ExpressionError, type ExpressionScope, hasExpressions } from "../domain/expressions.js";
import type { GraphNode } from "../domain/graph.js";
import type { Payload } from "../domain/payload.js";
import type { ExecutionRecord } from "../domain/records.js";
import { mentionsVars } from "../domain/vars.js";
import * as z from "../domain/zod.js";
import type { TaskType } from "../tasks/task-type.js";
import type { EngineContext } from "./context.js";
import { loadValues } from "./values.js";
import { readVariables } from "./vars.js";

export type PreparedRun =
  | { input: unknown; params: unknown; deps: Record<string, unknown> }
  | { skip: string };

export async function prepareRun(
  ctx: EngineContext,
  execution: ExecutionRecord,
  node: GraphNode,
  /** Undefined for an external node whose type only its workers know: its params are theirs to check. */
  task: TaskType | undefined,
  deps: ReadonlyArray<readonly [string, Payload]>,
  bindings?: Record<string, unknown>,
): Promise<PreparedRun> {
  if (nothingDone(node, deps)) return { skip: NOTHING_DONE };
  const [input, values] = await Promise.all([ctx.payloads.load(execution.input), loadValues(ctx, deps)]);
  const scope = expressionScope(execution, input, values);
  // Read only for expressions that mention them (no await otherwise: the simulation's schedules stay).
  if (mentionsVars(node.when, node.params)) scope.vars = await readVariables(ctx, execution.executionId);
  // The onFailure handler's params may refer to the execution's error.
  if (node.onFailureHandler && execution.error)
    scope.error = { name: execution.error.name, message: execution.error.message };
  const options = { now: () => ctx.clock.now(), ...(bindings ? { bindings } : {}) };
  if (node.when !== undefined && !(await ctx.expressions.condition(node.when, scope, options)))
    return { skip: WHEN_FALSE };
  if (!hasExpressions(node.params))
    // Parsed, so a schema's defaults and transforms reach the handler (validated at submit already).
    return { input, deps: values, params: task ? z.ownParse(task.params, node.params) : node.params };
  const resolved = await ctx.expressions.resolve(node.params, scope, options, "params");
  return { input, deps: values, params: parseResolved(node, task, resolved) };
}

const NOTHING_DONE = "every dependency was skipped";
const WHEN_FALSE = "its when condition was not true";

/** Only a node that may be skipped can be left without a done input (v1 nodes never are). */
function nothingDone(node: GraphNode, deps: ReadonlyArray<unknown>): boolean {
  return node.mayBeSkipped && node.parents.length > 0 && deps.length === 0;
}

/**
 * Why a node run inside the engine (inline, e.g. merge) has nothing to run, or undefined. Its
 * dependencies' values are loaded only when a `when` needs them (merge passes them by reference).
 */
export async function skipReason(
  ctx: EngineContext,
  execution: ExecutionRecord,
  node: GraphNode,
  deps: ReadonlyArray<readonly [string, Payload]>,
): Promise<string | undefined> {
  if (nothingDone(node, deps)) return NOTHING_DONE;
  if (node.when === undefined) return undefined;
  const [input, values] = await Promise.all([ctx.payloads.load(execution.input), loadValues(ctx, deps)]);
  const scope = expressionScope(execution, input, values);
  if (mentionsVars(node.when)) scope.vars = await readVariables(ctx, execution.executionId);
  return (await ctx.expressions.condition(node.when, scope, { now: () => ctx.clock.now() }))
    ? undefined
    : WHEN_FALSE;
}

export function expressionScope(
  execution: ExecutionRecord,
  input: unknown,
  deps: Record<string, unknown>,
): ExpressionScope {
  return {
    input,
    deps,
    execution: { id: execution.executionId, workflow: execution.workflow, version: execution.version },
  };
}

/**
 * Params known only now (their expressions evaluated) are checked against the task type's schema
 * here: a mismatch is the definition's, so it is terminal. Issues name paths, never values.
 */
function parseResolved(node: GraphNode, task: TaskType | undefined, resolved: unknown): unknown {
  if (!task) return resolved;
  const parsed = z.ownSafeParse(task.params, resolved);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues
    .slice(0, 5)
    .map((issue) => `${["params", ...issue.path.map(String)].join(".")}: ${issue.message}`)
    .join("; ");
  // Params that decide when a node runs (deferral.ts) were wrong since it was queued: the
  // expression gave what its place cannot take.
  if (task.defer)
    throw new ExpressionError(`the params of node "${node.id}", once evaluated, are invalid: ${issues}`, {
      path: ["params", ...(parsed.error.issues[0]?.path.map(String) ?? [])].join("."),
    });
  throw new TerminalError(
    `the params of node "${node.id}", once their expressions were evaluated, are invalid: ${issues}`,
    { code: "InvalidParams" },
  );
}
