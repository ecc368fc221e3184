/**
 * Fan-in rules: when a node with several dependencies may start. The engine learns which
 * dependencies completed and which failed or were cancelled (recorded arrivals, or the parents' own
 * records); these functions turn those counts into a decision.
 */
import type { FanIn } from "./definition.js";
import type { NodeStatus } from "./records.js";

/** How many dependencies must complete before the node is ready. */
export function requiredCompletions(fanIn: FanIn, parentCount: number): number {
  switch (fanIn.kind) {
    case "all":
      return parentCount;
    case "any":
      return 1;
    case "count":
      return fanIn.n;
  }
}

/**
 * "ready" once enough dependencies completed (even if others still run: a node with `any` starts
 * on the first completion); "unsatisfiable" once so many failed or were cancelled that the rest
 * could not make up the difference, so the engine cancels the node instead of waiting forever.
 */
export function evaluateFanIn(
  fanIn: FanIn,
  parentCount: number,
  completed: number,
  failed: number,
): "ready" | "waiting" | "unsatisfiable" {
  const required = requiredCompletions(fanIn, parentCount);
  if (completed >= required) return "ready";
  const remaining = Math.max(0, parentCount - completed - failed);
  return completed + remaining < required ? "unsatisfiable" : "waiting";
}

/**
 * Which of `parents` (node indexes) completed and which failed or were cancelled, given each one's
 * status (undefined: no record yet, so PENDING).
 */
export function tallyParents(
  parents: readonly number[],
  statusOf: (parentIndex: number) => NodeStatus | undefined,
): { ok: number[]; bad: number[] } {
  const ok: number[] = [];
  const bad: number[] = [];
  for (const parent of parents) {
    const status = statusOf(parent);
    if (status === "COMPLETED") ok.push(parent);
    else if (status === "FAILED" || status === "CANCELLED") bad.push(parent);
  }
  return { ok: ok.sort((a, b) => a - b), bad: bad.sort((a, b) => a - b) };
}
