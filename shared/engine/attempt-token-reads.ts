/**
 * What a token held outside the engine (domain/attempt-token.ts) names, read and checked: the
 * attempt must still be RUNNING under the token's lease, or the token is stale (409) and nothing
 * is written with it.
 */
import { decodeAttemptToken } from "../domain/attempt-token.js";
import { badRequest, conflict } from "../domain/errors.js";
import type { GraphNode, WorkflowGraph } from "../domain/graph.js";
import type { ExecutionRecord, Lease, NodeRecord } from "../domain/records.js";
import type { EngineContext } from "./context.js";

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
  kind: "task" | "callback",
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
  return { execution, graph, node, record, lease };
}
