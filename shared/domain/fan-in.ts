/**
 * Fan-in rules: when a node with several dependencies may start. The engine keeps, per node, the
 * set of dependencies that completed and the set that failed or were cancelled; these functions
 * turn those counts into a decision.
 */
import type { FanIn } from "./definition.js";

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
