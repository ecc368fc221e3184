/**
 * How a node is dispatched once it is ready:
 * - "direct": at most one parent, so its readiness is certain the moment that parent completes. No
 *   write queues it: the task message is its dispatch, and the claim creates its record
 *   (PENDING → RUNNING). Saves a write per node; duplicate messages are refused by the claim.
 * - "fanIn": several parents. Arrivals are recorded on its record, and the PENDING → QUEUED write
 *   that makes it ready is the dispatch (exactly once).
 * - "deferred": its task type defers it (e.g. `wait`): queued with a not-before time, so the sweeper
 *   can find a wait too long for an SQS delay.
 * - "inline": run inside the engine (e.g. `merge`), never sent.
 */
import type { GraphNode } from "../domain/graph.js";
import type { NodeStatus } from "../domain/records.js";
import type { NodeCondition } from "../ports.js";
import type { TaskRegistry } from "../tasks/task-type.js";

export type DispatchMode = "direct" | "fanIn" | "deferred" | "inline";

export function dispatchMode(tasks: TaskRegistry, node: GraphNode): DispatchMode {
  const task = tasks.get(node.type);
  if (task?.inline) return "inline";
  if (task?.defer) return "deferred";
  return node.parents.length <= 1 ? "direct" : "fanIn";
}

/** The dependencies a node's handler receives: recorded arrivals, or (direct) its only parent. */
export function depIndexesOf(
  mode: DispatchMode,
  node: GraphNode,
  okDeps: readonly number[],
): readonly number[] {
  return mode === "direct" ? node.parents : okDeps;
}

/**
 * The conditions under which work that never got (or lost) its claim may be written off — a
 * dead-lettered message, an unknown task type: the node is at the message's attempt in QUEUED or
 * RUNNING, or — the first attempt of a direct node, never claimed — still PENDING.
 */
export function unclaimedConditions(
  mode: DispatchMode,
  attempt: number,
  statuses: readonly NodeStatus[],
): NodeCondition[] {
  const queued: NodeCondition = { status: statuses, attempt };
  return mode === "direct" && attempt === 1 ? [{ status: ["PENDING"], attempt: 0 }, queued] : [queued];
}
