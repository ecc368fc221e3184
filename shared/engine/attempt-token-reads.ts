/**
 * What a token held outside the engine (domain/attempt-token.ts) names, read and checked: the
 * attempt must still be RUNNING under the token's lease, or the token is stale (409) and nothing
 * is written with it; and the token must be of the kind the route takes — a task token (a node
 * placed with `runsOn`) on /tasks/*, a callback token (a `callback` node) on /callbacks/* — or it
 * is refused with 409 WrongTokenKind, naming its kind and its routes, and nothing is written.
 *
 * The kind is not written in the token: the node it names decides it, from the definition already
 * read here (the validator keeps `runsOn` off a callback), so it costs no read and cannot be forged
 * by editing the token.
 */
import { decodeAttemptToken } from "../domain/attempt-token.js";
import { badRequest, conflict, RequestError } from "../domain/errors.js";
import type { GraphNode, WorkflowGraph } from "../domain/graph.js";
import type { ExecutionRecord, Lease, NodeRecord } from "../domain/records.js";
import { API_ROUTES } from "../http/contract.js";
import type { TaskRegistry } from "../tasks/task-type.js";
import type { EngineContext } from "./context.js";

export type TokenKind = "task" | "callback";
/** What the token is used for: the last segment of its route. */
export type TokenUse = "heartbeat" | "complete" | "fail";

const ROUTES: Record<TokenKind, Record<TokenUse, string>> = {
  task: {
    heartbeat: API_ROUTES.heartbeatTask.path,
    complete: API_ROUTES.completeTask.path,
    fail: API_ROUTES.failTask.path,
  },
  callback: {
    heartbeat: API_ROUTES.heartbeatCallback.path,
    complete: API_ROUTES.completeCallback.path,
    fail: API_ROUTES.failCallback.path,
  },
};

/** The kind of token a node's attempts are given, or undefined for a node whose attempts get none. */
export function tokenKindOf(tasks: TaskRegistry, node: GraphNode): TokenKind | undefined {
  if (tasks.get(node.type)?.composite === "callback") return "callback";
  if (node.runsOn !== undefined) return "task";
  return undefined;
}

export interface HeldAttempt {
  execution: ExecutionRecord;
  graph: WorkflowGraph;
  node: GraphNode;
  record: NodeRecord;
  lease: Lease;
}

export async function readAttempt(
  ctx: EngineContext,
  token: string,
  kind: TokenKind,
  use: TokenUse,
): Promise<HeldAttempt> {
  const named = decodeAttemptToken(token);
  if (!named)
    throw badRequest(`${kind === "task" ? "taskToken" : "token"} is not a ${kind} token this API gave`);
  const stale = () =>
    conflict(
      `the ${kind} token is stale: attempt ${named.attempt} of node "${named.nodeId}" is over, or held by another`,
    );
  const [execution, record] = await Promise.all([
    ctx.store.getExecution(named.executionId),
    ctx.store.getNode(named.executionId, named.nodeId),
  ]);
  if (!execution || !record) throw stale();
  const lease = record.lease;
  if (record.status !== "RUNNING" || record.attempt !== named.attempt || lease?.token !== named.leaseToken)
    throw stale();
  const graph = await ctx.graphs.get(execution.workflow, execution.version);
  const node = graph.byId.get(named.nodeId);
  if (!node) throw stale();
  const actual = tokenKindOf(ctx.tasks, node);
  if (actual !== kind) throw wrongKind(kind, actual, use);
  return { execution, graph, node, record, lease };
}

function wrongKind(expected: TokenKind, actual: TokenKind | undefined, use: TokenUse): RequestError {
  const route = ROUTES[expected][use];
  if (actual === undefined)
    return new RequestError(
      "WrongTokenKind",
      `this token is neither a task's nor a callback's: ${route} takes a ${expected} token`,
    );
  return new RequestError(
    "WrongTokenKind",
    `this is a ${actual} token, and ${route} takes a ${expected} token: use POST ${ROUTES[actual][use]}`,
  );
}
