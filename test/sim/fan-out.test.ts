/**
 * Worlds with a fan-out tree (sim/dag.ts fanOutTree: a map running its own workflow per item, and a
 * `workflow` node one level further) under a small fan-out budget (EngineOptions.fanOut: 2–10
 * descendants, 2–8 map items in flight), cancelled in some worlds — under the worlds' crashes,
 * stalls, duplicate deliveries and sweeps. Each seed must violate no invariant
 * (sim/fan-out-invariants.ts): never more descendants than the budget, counted exactly; never more
 * map items running at once under a root than the budget; every reservation given back once its
 * execution's end is settled; refusals only at the limit; a cancelled root leaves nothing running.
 * Planted bugs (sim/planted.ts) show that the checker notices a budget not counted, a release
 * forgotten and reservations not made.
 *
 * The worlds here draw a tree always (`fanOut: "always"`); the campaign draws one in 12 % of them.
 * A seed replays one world only while the engine makes the same port calls: if an engine change
 * reshapes the worlds so that a seed no longer reaches its feature, pick another.
 */
import { describe, expect, it } from "vitest";
import { descendantsUncounted, reservationsKept, reservationsUncounted } from "../../sim/planted.js";
import { formatResult } from "../../sim/report.js";
import { runWorld } from "../../sim/world.js";

const WORLDS: Array<{ seed: number; reaches: string[]; note: string }> = [
  {
    seed: 3,
    reaches: ["descendantsRefused", "reservationsRefused", "reservationsReleased"],
    note: "children refused at the descendants limit, maps refused their lanes",
  },
  { seed: 8, reaches: ["cancelledTrees", "reservationsRefused"], note: "a cancelled tree" },
  {
    seed: 7,
    reaches: ["descendantsRefused", "reservationsRefused", "mostItemsInFlight"],
    note: "both limits, items running in several maps at once",
  },
];

describe("simulation with fan-out trees", () => {
  for (const { seed, reaches, note } of WORLDS)
    it(`seed ${seed}: ${note} (${reaches.join(", ")}) — no invariant violated`, async () => {
      const result = await runWorld({ seed, fanOut: "always" });
      const report = formatResult(result, { traceLines: 20 });
      expect(result.end, report).toBe("finished");
      expect(result.violations, report).toEqual([]);
      for (const stat of reaches) expect(result.stats[stat] ?? 0, `${stat}\n${report}`).toBeGreaterThan(0);
    });

  // Engine findings of the first fan-out campaigns (worlds as the campaign draws them), fixed.
  for (const { seed, finding } of [
    { seed: 120, finding: "a succeeded execution's maps kept their reservation after a crash" },
    { seed: 147, finding: "an item claimed by a stale worker after its execution's cleanup" },
    { seed: 6896, finding: "a stopped map's stale start reserved after its execution's cleanup" },
    { seed: 3197, finding: "a sink told to stop in a failed life was cancelled after a redrive" },
  ])
    it(`seed ${seed}: no invariant violated [${finding}]`, async () => {
      const result = await runWorld({ seed, ...(seed < 200 ? { fanOut: "always" as const } : {}) });
      expect(result.violations, formatResult(result, { traceLines: 20 })).toEqual([]);
    });

  it("notices children not counted against their root: more descendants than the budget", async () => {
    const result = await runWorld({ seed: 3, fanOut: "always", plant: descendantsUncounted });
    const rules = result.violations.filter((v) => v.rule === "fan-out-descendants").map((v) => v.message);
    expect(
      rules.some((m) => /over the limit/.test(m)),
      rules.join("\n"),
    ).toBe(true);
  });

  it("notices a reservation never given back", async () => {
    const result = await runWorld({ seed: 3, fanOut: "always", plant: reservationsKept });
    const rules = result.violations.filter((v) => v.rule === "fan-out-released").map((v) => v.message);
    expect(
      rules.some((m) => /still holds/.test(m)),
      rules.join("\n"),
    ).toBe(true);
  });

  it("notices maps running their lanes without reserving them: more items in flight than the budget", async () => {
    const result = await runWorld({ seed: 17, fanOut: "always", plant: reservationsUncounted });
    expect(result.violations.map((v) => v.rule)).toContain("fan-out-in-flight");
  });

  it("leaves the worlds without a tree as they were (fanOut: false)", async () => {
    for (let seed = 1; seed <= 20; seed++) {
      const on = await runWorld({ seed });
      if (on.workflows.some((w) => w.name === "tree")) continue;
      const off = await runWorld({ seed, fanOut: false });
      expect(on.traceHash, `seed ${seed}`).toBe(off.traceHash);
    }
  });
});
