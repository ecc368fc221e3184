/**
 * Worlds with `map` nodes (sim/dag.ts): items from literal arrays and expressions, 1–5 lanes or
 * one per item, passing, flaky and failing item tasks, tolerated and intolerable failures, empty
 * maps — under the worlds' crashes, stalls, duplicate deliveries and sweeps. Each seed replays one
 * world exactly (`npm run sim -- --seed S --trace`) and must violate no invariant but the open
 * findings (sim/open-findings.ts): each item ends once, no more than `lanes` items of a map attempt
 * run at once and each only after the one before it in its lane ended, an item claimed after its
 * map ended never runs, and a map ends and outputs as the reference decides (sim/invariants.ts).
 *
 * A seed replays one world only while the engine makes the same port calls: if an engine change
 * reshapes the worlds so that a seed no longer reaches its feature, pick another from
 * `npm run sim -- --runs 500` (the stats of each seed name mapsCompleted, mapsFailed, …).
 */
import { describe, expect, it } from "vitest";
import { openFindingOf } from "../../sim/open-findings.js";
import { mapOutputReversed, mapStartsTooMany } from "../../sim/planted.js";
import { formatResult } from "../../sim/report.js";
import { runWorld, type WorldOptions } from "../../sim/world.js";

const WORLDS: Array<{ seed: number; reaches: string[]; note: string }> = [
  {
    seed: 165,
    reaches: ["crashes", "mapItemsLost", "mapItemsTolerated"],
    note: "crashes lose item attempts; tolerated failures",
  },
  {
    seed: 121,
    // Its item attempts lost to crashes are now settled by the sweeper once their map failed.
    reaches: ["crashes", "mapsEmpty", "mapsFailed", "itemsClaimedAfterMapEnd"],
    note: "a map fails; items claimed after it failed are stopped; an empty map",
  },
  { seed: 209, reaches: ["mapItemsTolerated"], note: "a tolerated failure" },
  { seed: 29, reaches: ["mapsAtFullWidth", "itemsClaimedAfterMapEnd"], note: "every lane busy at once" },
  {
    seed: 195,
    reaches: ["crashes", "mapItemsLost", "mapsFailed"],
    note: "crashes lose items of failed maps",
  },
  { seed: 157, reaches: ["crashes", "mapsEmpty", "mapsFailed"], note: "empty maps and failed ones" },
];

describe("simulation with maps", () => {
  for (const { seed, reaches, note } of WORLDS)
    it(`seed ${seed}: ${note} (${reaches.join(", ")}) — no invariant violated`, async () => {
      // Without external workers: the worlds as they were when these seeds were picked.
      const result = await runWorld({ seed, externals: false });
      const report = formatResult(result, { traceLines: 20 });
      expect(
        result.violations.filter((v) => openFindingOf(v) === undefined),
        report,
      ).toEqual([]);
      for (const stat of reaches) expect(result.stats[stat] ?? 0, `${stat}\n${report}`).toBeGreaterThan(0);
    });

  it("leaves the worlds without maps as they were (--no-maps)", async () => {
    for (let seed = 1; seed <= 20; seed++) {
      const on = await runWorld({ seed });
      const off = await runWorld({ seed, maps: false });
      expect(off.workflows.some((w) => w.nodes.some((n) => n.type === "map"))).toBe(false);
      expect(off.stats.mapItems ?? 0).toBe(0);
      if (!on.workflows.some((w) => w.nodes.some((n) => n.type === "map")))
        expect(on.traceHash, `seed ${seed}`).toBe(off.traceHash);
    }
  });

  // Engine findings from the first map campaigns, fixed: their seeds are regressions.
  for (const { seed, finding } of [
    { seed: 64, finding: "K: a map whose `when` is false ran and completed" },
    { seed: 160, finding: "K: a map whose inputs were all skipped ran" },
    { seed: 41, finding: "L: an empty map's [] kept inline under a 1-byte threshold" },
    { seed: 155, finding: "M: an input's 1e400 passed through `$item` came out null" },
  ])
    it(`seed ${seed}: no invariant violated [finding ${finding}]`, async () => {
      const result = await runWorld({ seed, externals: false });
      expect(result.violations, formatResult(result, { traceLines: 20 })).toEqual([]);
    });

  // The map rules must bite: with a bug planted beneath the audit layer, some world must report it,
  // while the same world without the bug has no violation but open findings.
  async function firstCaught(rule: string, options: Omit<WorldOptions, "seed">): Promise<number | undefined> {
    for (let seed = 1; seed <= 200; seed++) {
      const bugged = await runWorld({ seed, ...options });
      if (!bugged.violations.some((v) => v.rule === rule && openFindingOf(v) === undefined)) continue;
      const { plant: _bug, ...clean } = options;
      const result = await runWorld({ seed, ...clean });
      if (result.violations.every((v) => openFindingOf(v) !== undefined)) return seed;
    }
    return undefined;
  }

  it("catches a planted bug: a map running more items at once than its lanes", async () => {
    expect(await firstCaught("map-concurrency", { plant: mapStartsTooMany })).toBeDefined();
  });

  it("catches a planted bug: a map's output out of item order", async () => {
    expect(await firstCaught("map-output", { plant: mapOutputReversed })).toBeDefined();
  });
});
