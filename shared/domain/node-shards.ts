/**
 * How many partitions an execution's nodes span (ExecutionRecord.nodeShards): decided from its
 * graph when the execution is created, and never changed after, so every key of its nodes, map
 * items and arrival shards can be derived from it alone (shared/adapters/dynamo/keys.ts).
 *
 * A store gives one partition about 1,000 write units and 3,000 read units a second. One node costs
 * its partition about 2.4 write units (a claim and a completion, its arrivals, its share of the
 * execution's writes) and one map item about 3.0 (a claim, a completion, its lane's records): one
 * partition carries about 420 nodes/s or 330 map items/s (`npm run bench -- --capacity`,
 * bench/results/capacity-latest.md). NODE_SHARDS = 16 partitions carry about 16 × 1,000 / 2.4 ≈
 * 6,600 nodes/s and 16 × 1,000 / 3.0 ≈ 5,300 map items/s in one execution (the goal: 5,000 of
 * each), with reads far from their limit (1.6 and 2.1 read units each: 16 × 3,000 / 2.1 ≈ 23,000/s).
 *
 * Spreading costs the reads of a whole execution: a listing of its nodes is one Query per
 * partition (each at least one read unit). So a small execution keeps one partition, exactly the
 * keys, reads and costs of before: a graph of at most SMALL_GRAPH_NODES nodes with no `map` node
 * (whose items are records of the execution, up to 100,000 of them) never nears a partition's limit.
 */
import type { WorkflowGraph } from "./graph.js";

/** Partitions of a wide execution's nodes (the arithmetic above). */
export const NODE_SHARDS = 16;

/**
 * The most nodes (of the DAG: `definition.nodes`, not its `onFailure` handler, which runs once) a
 * graph without a `map` node has and still keeps its execution on one partition.
 */
export const SMALL_GRAPH_NODES = 64;

/** The partitions an execution of `graph` spreads its nodes over: 1 or NODE_SHARDS. */
export function nodeShardsOf(graph: Pick<WorkflowGraph, "nodes">): number {
  const small = graph.nodes.length <= SMALL_GRAPH_NODES && !graph.nodes.some((node) => node.type === "map");
  return small ? 1 : NODE_SHARDS;
}
