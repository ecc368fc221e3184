/**
 * What a node's dependencies gave it, read from their records: a completed one's output, a failed
 * one's error under `onError: "continue"` or through a catch edge (domain/edges.ts). Read by every kind of node that takes inputs (a handler,
 * an inline node, a waiting node's expressions, an external task), so it sits below all of them.
 */
import type { WorkflowGraph } from "../domain/graph.js";
import { NULL_PAYLOAD, type Payload } from "../domain/payload.js";
import type { ErrorInfo } from "../domain/records.js";
import type { EngineContext } from "./context.js";
import { readCompletedDeps } from "./reads.js";

/**
 * Outputs of the given dependencies (indexes, all completed before the node was dispatched), as
 * [node id, payload] in the order given: still payloads, resolved only where a handler needs values.
 */
export async function loadDeps(
  ctx: EngineContext,
  executionId: string,
  graph: WorkflowGraph,
  depIndexes: readonly number[],
): Promise<Array<[string, Payload]>> {
  if (depIndexes.length === 0) return [];
  const ids = depIndexes.map((i) => graph.nodes[i]!.id);
  const records = await readCompletedDeps(ctx, executionId, ids);
  return depIndexes.flatMap((index) => {
    const node = graph.nodes[index]!;
    const record = records.get(node.id);
    if (record?.status === "COMPLETED")
      return [[node.id, record.output ?? NULL_PAYLOAD] as [string, Payload]];
    // A failure its dependants go on from is seen as its error (a dependency given as an input
    // failed only so: under `onError: "continue"`, or caught by this node's catch edge); skipped
    // dependencies are absent.
    if (record?.status === "FAILED")
      return [
        [
          node.id,
          node.onError === "continue"
            ? continuedFailure(record.error)
            : caughtFailure(record.error, record.attempt),
        ] as [string, Payload],
      ];
    return [];
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
