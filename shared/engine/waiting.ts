/**
 * What the nodes that wait holding no worker share (a `map` for its items, a `workflow` node for its
 * child; docs/architecture.md): the write that makes a claimed attempt wait, the next check time its
 * lease stands for, and its params' expressions evaluated over its scope.
 */
import type { EvaluationOptions } from "../domain/expressions.js";
import { hasExpressions } from "../domain/expressions.js";
import type { GraphNode, WorkflowGraph } from "../domain/graph.js";
import type { Payload } from "../domain/payload.js";
import type { CompositeState, ExecutionRecord, HistoryEvent, Lease, NodeRecord } from "../domain/records.js";
import { mentionsVars } from "../domain/vars.js";
import type { Outcome } from "../ports.js";
import { assignAtEnd } from "./assign-at-end.js";
import { completeAttempt } from "./attempt-completion.js";
import type { EngineContext } from "./context.js";
import type { CompletionPropagation, FailAttempt } from "./contracts.js";
import { loadDeps } from "./dep-outputs.js";
import { depIndexesOf, dispatchMode } from "./dispatch-mode.js";
import { expressionScope } from "./prepare.js";
import { loadValues } from "./values.js";
import { readVariables } from "./vars.js";

/**
 * The lease of a waiting node: only the time of its next check — the sweeper's idle interval, or
 * sooner when the node knows (a callback's timeout).
 */
function checkTime(ctx: EngineContext, token: string, at?: number): Lease {
  return { token, expiresAt: Math.min(at ?? Number.POSITIVE_INFINITY, ctx.clock.now() + ctx.sweep.idleMs) };
}

/**
 * The claimed attempt waits for `state` (fenced on its lease, refused once told to stop): its first
 * wait, or the next thing it waits for (a loop's next iteration).
 */
export function startWaiting(
  ctx: EngineContext,
  executionId: string,
  nodeId: string,
  lease: Lease,
  state: CompositeState,
  event: HistoryEvent | undefined,
  checkAt?: number,
): Promise<Outcome<NodeRecord>> {
  return ctx.store.transitionNode(
    executionId,
    nodeId,
    { status: ["RUNNING"], leaseToken: lease.token, notCancelRequested: true },
    { composite: state, lease: checkTime(ctx, lease.token, checkAt) },
    event,
  );
}

/** A check found it not done: it waits until the next one. */
export async function checkLater(
  ctx: EngineContext,
  executionId: string,
  nodeId: string,
  lease: Lease,
  checkAt?: number,
  /** A change of its waiting state made with the same write (a callback's heartbeat). */
  state?: CompositeState,
): Promise<boolean> {
  const written = await ctx.store.transitionNode(
    executionId,
    nodeId,
    { status: ["RUNNING"], leaseToken: lease.token },
    { lease: checkTime(ctx, lease.token, checkAt), ...(state ? { composite: state } : {}) },
  );
  return written.ok;
}

/**
 * `value` (part of a node's params) with its expressions evaluated over the scope of `owner` — the
 * node itself, or a map item's map — whose inputs are `okDeps` as its record holds them.
 */
export async function evaluateInScope(
  ctx: EngineContext,
  execution: ExecutionRecord,
  graph: WorkflowGraph,
  owner: GraphNode,
  okDeps: readonly number[],
  value: unknown,
  path: string,
  options: Omit<EvaluationOptions, "now"> = {},
): Promise<unknown> {
  if (!hasExpressions(value)) return value;
  const deps = await loadDeps(
    ctx,
    execution.executionId,
    graph,
    depIndexesOf(dispatchMode(ctx, owner), owner, okDeps),
    owner,
  );
  const [input, values] = await Promise.all([ctx.payloads.load(execution.input), loadValues(ctx, deps)]);
  const scope = expressionScope(execution, input, values);
  if (mentionsVars(value)) scope.vars = await readVariables(ctx, execution.executionId);
  return ctx.expressions.resolve(value, scope, { ...options, now: () => ctx.clock.now() }, path);
}

/** One attempt of a waiting node, as it ends: the node, its record and the lease it holds. */
export interface WaitingAttempt {
  execution: ExecutionRecord;
  graph: WorkflowGraph;
  node: GraphNode;
  record: NodeRecord;
  lease: Lease;
}

/**
 * The waiting node completes with `output` (fenced on its lease, refused once told to stop), and its
 * dependants go on. `detail` goes on its NodeCompleted event (a map's counts, a child's id). Its
 * `assign`, if any, is applied first (assign-at-end.ts); refused, the attempt fails instead.
 */
export async function completeWaiting(
  ctx: EngineContext,
  propagation: CompletionPropagation,
  failAttempt: FailAttempt,
  attempt: WaitingAttempt,
  output: Payload,
  detail: Record<string, unknown>,
): Promise<void> {
  const { execution, graph, node, record, lease } = attempt;
  const refused = await assignAtEnd(ctx, execution, graph, node, record, output);
  if (refused) {
    await failAttempt(execution, graph, node, record, lease, refused);
    return;
  }
  await completeAttempt(ctx, propagation, execution, graph, node, record, lease, output, { detail });
}
