/**
 * Worlds with child executions (sim/dag.ts, `childLibrary`): `workflow` nodes calling small
 * workflows (one of which calls another), maps over a workflow (a child per item), and a workflow
 * that calls itself until its input reaches a bound or the depth limit refuses it — under the
 * worlds' crashes, stalls, duplicate deliveries, cancellations (of parents, and of children by
 * their id) and sweeps. Each seed replays one world (`npm run sim -- --seed S --trace`) and must
 * violate no invariant (sim/invariants.ts, checkChildren): one child per node attempt, linked one
 * level below its parent, never deeper than the limit; a node completes with its last attempt's
 * child's output (the reference's) only when that child succeeded, and fails with its child's end;
 * a child's input is what its parent's node mapped; a child is cancelled only when asked or when
 * its parent's node stopped waiting for it. A child an attempt started but never recorded (the
 * attempt was lost between the two) is cancelled by the sweeper (`orphansCancelled`).
 *
 * A seed replays one world only while the engine makes the same port calls: if an engine change
 * reshapes the worlds so that a seed no longer reaches its feature, pick another (the stats of each
 * seed name children, childrenOfItems, depthRefused, orphansCancelled, …).
 */
import { describe, expect, it } from "vitest";
import { childDepthLost, childOutputDropped } from "../../sim/planted.js";
import { formatResult } from "../../sim/report.js";
import { runWorld, type WorldOptions } from "../../sim/world.js";

const WORLDS: Array<{ seed: number; reaches: string[]; note: string }> = [
  {
    seed: 14,
    reaches: ["children", "orphanChildren", "orphansCancelled"],
    note: "an attempt lost after starting its child: the sweeper cancels the orphan",
  },
  {
    seed: 6,
    reaches: ["childrenOfItems", "childrenCancelled"],
    note: "a map over a workflow; children cancelled",
  },
  { seed: 676, reaches: ["depthRefused", "childrenFailed"], note: "a chain refused at the depth limit" },
  {
    seed: 981,
    reaches: ["depthRefused", "childrenFailed", "orphansCancelled"],
    note: "the depth limit, failures passed up the chain, orphans",
  },
];

describe("simulation with child executions", () => {
  for (const { seed, reaches, note } of WORLDS)
    it(`seed ${seed}: ${note} (${reaches.join(", ")}) — no invariant violated`, async () => {
      const result = await runWorld({ seed });
      const report = formatResult(result, { traceLines: 20 });
      expect(result.violations, report).toEqual([]);
      for (const stat of reaches) expect(result.stats[stat] ?? 0, `${stat}\n${report}`).toBeGreaterThan(0);
    });

  it("leaves the worlds without children as they were (children: false)", async () => {
    for (let seed = 1; seed <= 20; seed++) {
      const on = await runWorld({ seed });
      const off = await runWorld({ seed, children: false });
      expect(off.stats.children ?? 0).toBe(0);
      if (!on.workflows.some((w) => w.nodes.some((n) => n.type === "workflow")))
        expect(on.traceHash, `seed ${seed}`).toBe(off.traceHash);
    }
  });

  // The child rules must bite: with a bug planted beneath the audit layer, some world must report
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

  it("catches a planted bug: a workflow node that completes without its child's output", async () => {
    expect(await firstCaught("output", { plant: childOutputDropped })).toBeDefined();
  });

  it("catches a planted bug: children created at depth 1 whatever their parent's depth", async () => {
    expect(await firstCaught("child-depth", { plant: childDepthLost })).toBeDefined();
  });
});
