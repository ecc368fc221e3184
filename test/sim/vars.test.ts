/**
 * The simulation's vars worlds (sim/vars-invariants.ts): workflows with `vars` nodes incrementing
 * one counter, under the world's duplicate deliveries, crashes, redeliveries and redrives. An
 * increment counts once; a planted bug that loses the record of applied nodes is caught.
 */
import { describe, expect, it } from "vitest";
import type { Store } from "../../shared/ports.js";
import { forgetAppliedVariables } from "../../sim/planted.js";
import { formatResult } from "../../sim/report.js";
import { COUNTER } from "../../sim/vars-invariants.js";
import { runWorld } from "../../sim/world.js";

/** The counters the world's executions ended with, summed. */
async function countedIn(store: Store): Promise<number> {
  let total = 0;
  for (const execution of (await store.listExecutions({ limit: 200 })).items) {
    const item = await store.getVariables(execution.executionId);
    if (item) total += Number((JSON.parse(item.document) as Record<string, unknown>)[COUNTER] ?? 0);
  }
  return total;
}

describe("simulation with execution variables", () => {
  it("seeds 1–60 with incr nodes in every world: each increment counts once", async () => {
    let counted = 0;
    for (let seed = 1; seed <= 60; seed++) {
      const result = await runWorld({
        seed,
        vars: "always",
        inspect: async (store) => {
          counted += await countedIn(store);
        },
      });
      expect(result.violations, formatResult(result, { traceLines: 20 })).toEqual([]);
    }
    // The worlds did increment (not a vacuous pass).
    expect(counted).toBeGreaterThan(100);
  });

  it("catches a planted bug: the record of applied nodes lost, so a node run twice counts twice", async () => {
    let caught: number | undefined;
    for (let seed = 1; seed <= 200 && caught === undefined; seed++) {
      const bugged = await runWorld({ seed, vars: "always", plant: forgetAppliedVariables });
      if (!bugged.violations.some((v) => v.rule === "vars-once")) continue;
      const clean = await runWorld({ seed, vars: "always" });
      if (clean.violations.length === 0) caught = seed;
    }
    expect(caught).toBeDefined();
  });

  it("leaves every world as it was without vars (off by default)", async () => {
    for (let seed = 1; seed <= 10; seed++) {
      const off = await runWorld({ seed });
      const explicit = await runWorld({ seed, vars: false });
      expect(explicit.traceHash, `seed ${seed}`).toBe(off.traceHash);
      expect(off.workflows.some((w) => w.nodes.some((n) => n.type === "vars"))).toBe(false);
    }
  });

  // Found by the campaign with `--vars --loops`: two runs of one inline `vars` node raced; the winner
  // died at its sink count and the loser — decided in a redelivery's recovery pass — was refused and
  // returned without driving the propagation: the execution stayed RUNNING with every node ended.
  // A refused inline completion in a recovery pass now drives it (runInline, engine/propagation.ts).
  it("seed 7683 (vars and loops): a refused inline completion after a redelivery still ends the execution", async () => {
    const result = await runWorld({ seed: 7683, vars: true, loops: true });
    expect(result.violations, formatResult(result, { traceLines: 20 })).toEqual([]);
  });
});
