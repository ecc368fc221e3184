/**
 * `npm run bench -- --timers` (bench/timers.ts) at tiny sizes: each measurement runs on today's
 * engine and yields figures, and the report names each table. The figures themselves are the
 * bench's to report (bench/results/timers-latest.md), not asserted here beyond what they must be.
 */
import { describe, expect, it } from "vitest";
import { measureTimers, renderTimers } from "../../bench/timers.js";
import { TIMER_LIMITS } from "../../shared/domain/timers.js";

const finite = (x: number) => expect(Number.isFinite(x), String(x)).toBe(true);

describe("bench: timers", () => {
  it("measures lateness, a sweep with nothing due, a day-long wait and a running map at tiny sizes", async () => {
    const result = await measureTimers({ quick: true });

    expect(result.lateness.map((l) => l.kind)).toEqual(["callback timeout", "wait"]);
    for (const l of result.lateness) {
      expect(l.count).toBe(3);
      for (const x of [l.p50Ms, l.p99Ms, l.maxMs]) finite(x);
      expect(l.p50Ms).toBeLessThanOrEqual(l.maxMs);
    }

    expect(result.sweepCost.map((p) => [p.running, p.after])).toEqual([
      [20, "30 s"],
      [20, "10 min"],
      [20, "20 min"],
      [20, "1 h"],
      [200, "30 s"],
      [200, "10 min"],
      [200, "20 min"],
      [200, "1 h"],
    ]);
    for (const p of result.sweepCost) {
      for (const x of [p.calls, p.readUnits, p.writeUnits, p.callsPerShard]) finite(x);
      // A sweep reads at least the due index, however the engine lays it out.
      expect(p.calls).toBeGreaterThan(0);
      expect(p.callsPerShard).toBe(p.calls / TIMER_LIMITS.shards);
    }

    const d = result.dayWait;
    expect(d.sweeps).toBe(61);
    for (const x of Object.values(d)) finite(x);
    expect(d.totalWriteUnits).toBeGreaterThan(d.emptyStoreSweepWriteUnits);
    expect(d.attributableWriteUnits).toBe(d.totalWriteUnits - d.emptyStoreSweepWriteUnits);
    expect(d.beyondNodeWork).toBe(d.attributableWriteUnits - d.noWaitWriteUnits);
    expect(d.noWaitWriteUnits).toBeGreaterThan(d.passOnlyWriteUnits);

    expect(result.map.map((m) => m.items)).toEqual([50, 200]);
    for (const m of result.map) {
      expect(m.sweeps).toBeGreaterThan(0);
      for (const x of [
        m.readCalls,
        m.readUnits,
        m.readUnitsPerSweep,
        m.maxSweepReadUnits,
        m.emptyStoreReadUnits,
        m.readUnitsBeyondEmpty,
      ])
        finite(x);
      expect(m.readUnitsBeyondEmpty).toBe(m.readUnits - m.emptyStoreReadUnits);
      expect(m.series.length).toBeGreaterThan(0);
    }
    expect(result.mapGrowth.itemsRatio).toBe(4);
    finite(result.mapGrowth.readsRatio);
    expect(["linear", "quadratic", "between"]).toContain(result.mapGrowth.verdict);

    const markdown = renderTimers(result).join("\n");
    for (const table of [
      "## Lateness locally",
      "## Sweep with nothing due",
      "## A day-long wait",
      "## A running map: the sweeper's reads",
    ])
      expect(markdown).toContain(table);
    expect(markdown).toContain("| callback timeout | 3 |");
    expect(markdown).toContain("| 200 | 10 min |");
    expect(markdown).toContain("**beyond its node work**");
  }, 120_000);
});
