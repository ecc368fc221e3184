/**
 * Timer worlds (sim/timer-worlds.ts): far waits, whose message is a durable timer in the due index
 * that the sweeps send when it comes within SQS's reach, and sweeper outages (no scheduled sweep
 * for up to 90 minutes, the timers due meanwhile fired late, once, from the cursor) — under the
 * worlds' crashes (between arming and firing too), stalls, duplicate and forced sweeps. Each seed
 * must violate no invariant, the timers' own included (sim/timer-invariants.ts): no timer the
 * cursor passed goes unsent, none is sent later than the world's bound, no attempt is claimed
 * before its time.
 *
 * A seed replays one world only while the engine makes the same port calls: if an engine change
 * reshapes the worlds so that a seed no longer reaches its feature, pick another (the stats of each
 * seed name farWaits, timersArmed, sweepOutageMinutes, crashes, …).
 */
import { describe, expect, it } from "vitest";
import { timerCursorSkips } from "../../sim/planted.js";
import { formatResult } from "../../sim/report.js";
import { runWorld, type WorldOptions } from "../../sim/world.js";

const WORLDS: Array<{ seed: number; reaches: string[]; note: string }> = [
  {
    seed: 98,
    reaches: ["timersArmed", "sweepOutageMinutes", "crashes", "stalls"],
    note: "a far wait through a 90-minute sweeper outage, with crashes and stalls",
  },
  {
    seed: 95,
    reaches: ["timersArmed", "crashes", "externalTasks"],
    note: "far waits beside external workers, with crashes",
  },
  { seed: 28, reaches: ["farWaits", "timersArmed"], note: "far waits through the due index" },
];

describe("simulation with timer worlds", () => {
  for (const { seed, reaches, note } of WORLDS)
    it(`seed ${seed}: ${note} (${reaches.join(", ")}) — no invariant violated`, async () => {
      const result = await runWorld({ seed });
      const report = formatResult(result, { traceLines: 20 });
      expect(result.violations, report).toEqual([]);
      for (const stat of reaches) expect(result.stats[stat] ?? 0, `${stat}\n${report}`).toBeGreaterThan(0);
    });

  it("leaves the worlds without far waits or outages as they were (timers: false)", async () => {
    let same = 0;
    for (let seed = 1; seed <= 30; seed++) {
      const on = await runWorld({ seed });
      const off = await runWorld({ seed, timers: false });
      expect(off.stats.farWaits ?? 0).toBe(0);
      expect(off.stats.sweepOutageMinutes ?? 0).toBe(0);
      if ((on.stats.farWaits ?? 0) === 0 && (on.stats.sweepOutageMinutes ?? 0) === 0) {
        expect(on.traceHash, `seed ${seed}`).toBe(off.traceHash);
        same++;
      }
    }
    expect(same).toBeGreaterThan(0);
  });

  // The timer rules must bite: with a bug planted beneath the audit layer, some world must report
  // it, while the same world without the bug has no violation.
  async function firstCaught(rule: string, options: Omit<WorldOptions, "seed">): Promise<number | undefined> {
    for (let seed = 1; seed <= 200; seed++) {
      const bugged = await runWorld({ seed, ...options });
      if (!bugged.violations.some((v) => v.rule === rule)) continue;
      const { plant: _bug, ...clean } = options;
      const result = await runWorld({ seed, ...clean });
      if (result.violations.length === 0) return seed;
    }
    return undefined;
  }

  it("catches a planted bug: a sweep cursor that skips an hour past what it read", async () => {
    expect(await firstCaught("timer-lost", { plant: timerCursorSkips })).toBeDefined();
  });
});
