/**
 * What a node's dependencies gave it, read from their records: a completed one's output, a failed
 * one's error under `onError: "continue"` or through a catch edge (domain/edges.ts). Read by every kind of node that takes inputs (a handler,
 * an inline node, a waiting node's expressions, an external task), so it sits below all of them.
 */
import { edgeOutcome } from "../domain/edges.js";
import { edgeFrom, type GraphNode, type WorkflowGraph } from "../domain/graph.js";
import { NULL_PAYLOAD, type Payload } from "../domain/payload.js";
import type { ErrorInfo } from "../domain/records.js";
import type { EngineContext } from "./context.js";
import { readCompletedDeps } from "./reads.js";

/**
 * Outputs of the given dependencies of `child` (indexes, all ended before it was dispatched), as
 * [node id, payload] in the order given: still payloads, resolved only where a handler needs values.
 * Only those it takes over its edge (domain/edges.ts) are given: a completion, or a failure under
 * `onError: "continue"` or caught by its catch edge (seen as the error); a skipped dependency, and a
 * path not taken (a completion on a catch edge, a failure another edge caught), are absent.
 */
export async function loadDeps(
  ctx: EngineContext,
  executionId: string,
  graph: WorkflowGraph,
  depIndexes: readonly number[],
  child: GraphNode,
): Promise<Array<[string, Payload]>> {
  if (depIndexes.length === 0) return [];
  const ids = depIndexes.map((i) => graph.nodes[i]!.id);
  const records = await readCompletedDeps(ctx, executionId, ids);
  return depIndexes.flatMap((index) => {
    const node = graph.nodes[index]!;
    const record = records.get(node.id);
    if (!record || edgeOutcome(record.status, record.error, node, edgeFrom(child, index)) !== "done")
      return [];
    if (record.status === "COMPLETED") return [[node.id, record.output ?? NULL_PAYLOAD] as [string, Payload]];
    const seen =
      node.onError === "continue"
        ? continuedFailure(record.error)
        : caughtFailure(record.error, record.attempt);
    return [[node.id, seen] as [string, Payload]];
  });
}

/** What a node whose catch edge took a dependency's failure sees as its output. */
export function caughtFailure(error: ErrorInfo | undefined, attempt: number): Payload {
  const { name, message, code } = error ?? { name: "Error", message: "failed" };
  return {
    json: JSON.stringify({ error: { name, message, ...(code === undefined ? {} : { code }), attempt } }),
  };
}

/** What dependants of a node failed under `onError: "continue"` see as its output. */
export function continuedFailure(error: ErrorInfo | undefined): Payload {
  const { name, message } = error ?? { name: "Error", message: "failed" };
  return { json: JSON.stringify({ error: { name, message } }) };
}
