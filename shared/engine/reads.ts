/**
 * The worker's reads that may be eventually consistent, at half the read units of a strong read.
 *
 * An eventually consistent read returns some version the item had. Acting on a version that is
 * still the latest is the same as a strong read; acting on an earlier one is the same as having
 * read it strongly a moment earlier and stalled until now — a race every path already survives
 * (docs/guarantees.md). That holds only while the reader knows of no later write, so each read here
 * reads again, strongly, whenever what it saw contradicts what the reader knows:
 * - a task message is sent only for an execution that exists and has started, and a redrive may
 *   have revived a failed one: an execution seen missing or not RUNNING is read again;
 * - a node's dependencies ended before it was dispatched, and a completion or a skip is final for
 *   good (a failure may be redriven): one seen neither COMPLETED nor SKIPPED is read again.
 * Fan-in decisions, claims and the sweeper keep strong reads: they decide from what they read.
 */
import type { ExecutionRecord, NodeRecord } from "../domain/records.js";
import type { EngineContext } from "./context.js";

/** The execution as a worker starts a task: a copy not RUNNING (or none) is confirmed strongly. */
export async function readExecutionForTask(
  ctx: EngineContext,
  executionId: string,
): Promise<ExecutionRecord | undefined> {
  const seen = await ctx.store.getExecution(executionId, "eventual");
  if (seen?.status === "RUNNING") return seen;
  return ctx.store.getExecution(executionId);
}

const FINAL_FOR_GOOD = new Set<string | undefined>(["COMPLETED", "SKIPPED"]);

/** The records of ended dependencies: any seen neither COMPLETED nor SKIPPED (or missing) is read again strongly. */
export async function readCompletedDeps(
  ctx: EngineContext,
  executionId: string,
  nodeIds: readonly string[],
): Promise<Map<string, NodeRecord>> {
  const records = new Map(
    (await ctx.store.getNodes(executionId, nodeIds, "eventual")).map((r) => [r.nodeId, r]),
  );
  const lagging = nodeIds.filter((id) => !FINAL_FOR_GOOD.has(records.get(id)?.status));
  if (lagging.length > 0)
    for (const record of await ctx.store.getNodes(executionId, lagging)) records.set(record.nodeId, record);
  return records;
}
