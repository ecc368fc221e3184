/**
 * Fan-in rules: when a node with several dependencies may start. The engine learns which
 * dependencies completed and which failed or were cancelled (recorded arrivals, or the parents' own
 * records); these functions turn those counts into a decision.
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
 * "ready" once enough dependencies are done (even if others still run: a node with `any` starts
 * on the first completion); "unsatisfiable" once so many failed or were cancelled that the rest
 * could not make up the difference, so the engine cancels the node instead of waiting forever;
 * "skipped" when skips, not failures, leave it nothing to run: an `all` fan-in whose dependencies
 * all ended and were all skipped, or an `any`/`count:N` one that can no longer be met and saw no
 * failure (skips propagate, never failing or cancelling anything).
 *
 * `completed` counts the dependencies that are done (COMPLETED, or FAILED with `onError:
 * "continue"`), `failed` those failed for good or cancelled, `skipped` the SKIPPED ones.
 */
export function evaluateFanIn(
  fanIn: FanIn,
  parentCount: number,
  completed: number,
  failed: number,
  skipped = 0,
): FanInVerdict {
  if (fanIn.kind === "all") {
    if (failed > 0) return "unsatisfiable";
    if (completed + skipped < parentCount) return "waiting";
    return completed > 0 || parentCount === 0 ? "ready" : "skipped";
  }
  const required = requiredCompletions(fanIn, parentCount);
  if (completed >= required) return "ready";
  const open = Math.max(0, parentCount - completed - failed - skipped);
  if (completed + open >= required) return "waiting";
  return failed > 0 ? "unsatisfiable" : "skipped";
}

export type FanInVerdict = "ready" | "waiting" | "unsatisfiable" | "skipped";

/**
 * How a dependency's end counts for one dependant (domain/edges.ts edgeOutcome): "done" (it takes
 * it: a completion, or a failure its edge catches or `onError: "continue"` lets through), "skipped"
 * (a skip, or the path not taken), "bad" (a failure nobody catches, a cancellation), or "open".
 */
export type DependencyOutcome = "done" | "skipped" | "bad" | "open";

export interface ParentTally {
  /** Node indexes of done dependencies, ascending: the node's inputs when it is decided now. */
  ok: number[];
  bad: number[];
  skipped: number[];
}

/** The parents (node indexes) by how they ended, given each one's outcome. */
export function tallyParents(
  parents: readonly number[],
  outcomeOf: (parentIndex: number) => DependencyOutcome,
): ParentTally {
  const tally: ParentTally = { ok: [], bad: [], skipped: [] };
  for (const parent of parents) {
    const outcome = outcomeOf(parent);
    if (outcome === "done") tally.ok.push(parent);
    else if (outcome === "bad") tally.bad.push(parent);
    else if (outcome === "skipped") tally.skipped.push(parent);
  }
  const ascending = (a: number, b: number) => a - b;
  return {
    ok: tally.ok.sort(ascending),
    bad: tally.bad.sort(ascending),
    skipped: tally.skipped.sort(ascending),
  };
}

/** The verdict for a tally. */
export function verdictOf(fanIn: FanIn, parentCount: number, tally: ParentTally): FanInVerdict {
  return evaluateFanIn(fanIn, parentCount, tally.ok.length, tally.bad.length, tally.skipped.length);
}
