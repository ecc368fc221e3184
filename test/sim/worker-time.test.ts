/**
 * The simulation's worker time: worlds draw their worker's function timeout, invocations get its
 * deadline (less the worker's margin) and are killed at the timeout, and the checker holds every
 * attempt to its invocation's deadline — known to bite, by a planted bug.
 */
import { describe, expect, it } from "vitest";
import { openFindingOf } from "../../sim/open-findings.js";
import { runWorld } from "../../sim/world.js";

describe("simulation: no attempt is given time past its invocation's deadline", () => {
  it("cuts attempts at the end of invocations and kills invocations past their timeout, with no violation", async () => {
    const totals = { runsCut: 0, workerTimeouts: 0, kills: 0 };
    const timeouts = new Set<number>();
    for (let seed = 1; seed <= 150; seed++) {
      const result = await runWorld({ seed });
      expect(
        result.violations.filter((v) => openFindingOf(v) === undefined),
        `seed ${seed}`,
      ).toEqual([]);
      totals.runsCut += result.stats.runsCut ?? 0;
      totals.workerTimeouts += result.stats.workerTimeouts ?? 0;
      totals.kills += result.stats.kills ?? 0;
      timeouts.add(result.stats.workerTimeoutSeconds ?? 0);
    }
    expect([...timeouts].sort((a, b) => a - b)).toEqual([12, 20, 60, 300]);
    expect(totals.runsCut).toBeGreaterThan(0);
    expect(totals.kills).toBeGreaterThan(0);
  });

  // Finding J: a worker read a cancelled execution, stale, as RUNNING, claimed an entry the cleanup
  // had not listed, continued to its child (no re-read) and crashed: the child stayed RUNNING. Fixed
  // by the cleanup cancelling ready nodes without a record, entries included. (A seed replays its
  // world only while the engine makes the same calls: re-find with --keep-going after a change.)
  it("seed 5714: no node is left RUNNING in a cancelled execution [finding J]", async () => {
    // Without maps: the world as it was when the finding was made.
    const result = await runWorld({ seed: 5714, maps: false, children: false });
    expect(result.violations).toEqual([]);
    expect(result.warnings).toEqual([]);
  });

  it("catches an engine given more time than its invocation has (planted)", async () => {
    const caught: number[] = [];
    for (let seed = 1; seed <= 30 && caught.length === 0; seed++) {
      const result = await runWorld({ seed, plantInvocationDeadline: (deadline) => deadline + 60_000 });
      if (result.violations.some((v) => v.rule === "deadline")) caught.push(seed);
    }
    expect(caught).not.toEqual([]);
  });
});
