/**
 * The simulation's loop worlds (sim/loop-invariants.ts): workflows with `loop` nodes over a small
 * library workflow, under the world's duplicate deliveries, crashes, redeliveries, cancellations
 * and redrives. Iterations run 1..n, one child each, `while` decides the end, the output is the
 * last iteration's with the count; a planted miscount is caught.
 */
import { describe, expect, it } from "vitest";
import { loopCountsPauses } from "../../sim/planted.js";
import { formatResult } from "../../sim/report.js";
import { runWorld } from "../../sim/world.js";

describe("simulation with loop nodes", () => {
  it("seeds 1–40 with loops in every world: no violation, and the loops ran", async () => {
    const totals = { loopsCompleted: 0, loopIterations: 0, loopLimitExceeded: 0, loopsChildFailed: 0 };
    for (let seed = 1; seed <= 40; seed++) {
      const result = await runWorld({ seed, loops: "always" });
      expect(result.violations, formatResult(result, { traceLines: 20 })).toEqual([]);
      for (const key of Object.keys(totals) as Array<keyof typeof totals>)
        totals[key] += Number(result.stats[key] ?? 0);
    }
    // Not a vacuous pass: loops completed, used up their limit, and failed by an iteration.
    expect(totals.loopsCompleted).toBeGreaterThan(10);
    expect(totals.loopIterations).toBeGreaterThan(50);
    expect(totals.loopLimitExceeded).toBeGreaterThan(0);
    expect(totals.loopsChildFailed).toBeGreaterThan(0);
  });

  it("catches a planted bug: a loop of several iterations completes counting one fewer", async () => {
    let caught: number | undefined;
    for (let seed = 1; seed <= 60 && caught === undefined; seed++) {
      const bugged = await runWorld({ seed, loops: "always", plant: loopCountsPauses });
      if (!bugged.violations.some((v) => v.rule === "loop-end")) continue;
      const clean = await runWorld({ seed, loops: "always" });
      if (clean.violations.length === 0) caught = seed;
    }
    expect(caught).toBeDefined();
  });

  it("leaves every world as it was without loops (off by default)", async () => {
    for (let seed = 1; seed <= 10; seed++) {
      const off = await runWorld({ seed });
      const explicit = await runWorld({ seed, loops: false });
      expect(explicit.traceHash, `seed ${seed}`).toBe(off.traceHash);
      expect(off.workflows.some((w) => w.nodes.some((n) => n.type === "loop"))).toBe(false);
    }
  });
});
