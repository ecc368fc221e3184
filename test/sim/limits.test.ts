/**
 * The simulation's concurrency-limit worlds (sim/limit-invariants.ts): workflows with `concurrency`
 * on some nodes, under the world's duplicate deliveries, crashes, stalls, cancellations and
 * redrives. No more than `limit` attempts of a key run at once, every execution ends (so every
 * waiter was granted), and a planted bug — slot writes taken at any version — is caught.
 */
import { describe, expect, it } from "vitest";
import { slotWritesAtAnyVersion } from "../../sim/planted.js";
import { formatResult } from "../../sim/report.js";
import { runWorld } from "../../sim/world.js";

describe("simulation with concurrency limits", () => {
  it("seeds 1–60 with limits in every world: no violation, and work waited for its slots", {
    timeout: 300_000,
  }, async () => {
    const totals = { limitedRuns: 0, slotWaits: 0, mostAtOnce: 0 };
    for (let seed = 1; seed <= 60; seed++) {
      const result = await runWorld({ seed, limits: "always" });
      expect(result.violations, formatResult(result, { traceLines: 20 })).toEqual([]);
      totals.limitedRuns += Number(result.stats.limitedRuns ?? 0);
      totals.slotWaits += Number(result.stats.slotWaits ?? 0);
      totals.mostAtOnce = Math.max(totals.mostAtOnce, Number(result.stats.mostAtOnce ?? 0));
    }
    // Not a vacuous pass: limited nodes ran, queued behind full limits, and ran side by side.
    expect(totals.limitedRuns).toBeGreaterThan(50);
    expect(totals.slotWaits).toBeGreaterThan(10);
    expect(totals.mostAtOnce).toBe(2);
  });

  // The race needs two takers of the last slot within one read-write: one world in a hundred or two.
  // The search starts at the first that has it on this engine (seed 187), and goes on from there.
  it("catches a planted bug: slot writes taken at any version (two takers of the last slot)", {
    timeout: 600_000,
  }, async () => {
    let caught: number | undefined;
    for (let seed = 187; seed <= 587 && caught === undefined; seed++) {
      const bugged = await runWorld({ seed, limits: "always", plant: slotWritesAtAnyVersion });
      if (!bugged.violations.some((v) => v.rule === "concurrency-limit")) continue;
      const clean = await runWorld({ seed, limits: "always" });
      if (clean.violations.length === 0) caught = seed;
    }
    expect(caught).toBeDefined();
  });

  // Found by the first campaign with limit worlds (an engine fault, not a limits one): a continuation
  // skipped its child (its `when`), the skip's cascade took a store fault, and the continuation's catch
  // sent the child's message instead of driving its propagation again — the copy found it SKIPPED and
  // did nothing, so its dependants were never decided (worker.ts).
  it("seed 1541: a skipped continuation's cut cascade is driven again", async () => {
    const result = await runWorld({ seed: 1541, vars: true, loops: true, limits: true });
    expect(result.violations, formatResult(result, { traceLines: 20 })).toEqual([]);
  });

  // Found by the campaign: a redelivered message of an attempt that had moved on queued a waiter no
  // attempt would claim, and an attempt whose waiter item was gone (handed a slot, then a copy of
  // its message found the limit full again) took its recorded place for a live one and was never
  // woken. Now a stale attempt queues nothing, and a place counts only while its item is there.
  it("seed 262: waiters of attempts that moved on, and places whose items are gone", async () => {
    const result = await runWorld({ seed: 262, vars: true, loops: true, limits: true });
    expect(result.violations, formatResult(result, { traceLines: 20 })).toEqual([]);
  });

  it("leaves every world as it was without limits (off by default)", async () => {
    for (let seed = 1; seed <= 10; seed++) {
      const off = await runWorld({ seed });
      const explicit = await runWorld({ seed, limits: false });
      expect(explicit.traceHash, `seed ${seed}`).toBe(off.traceHash);
      expect(off.workflows.some((w) => w.nodes.some((n) => "concurrency" in n))).toBe(false);
    }
  });
});
