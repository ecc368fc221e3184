/**
 * Worlds with flow control (sim/dag.ts): nodes with a `when`, failures under `onError:
 * "continue"`, `when`s that give a non-boolean (ExpressionError), `{% %}` params and `onFailure`
 * handlers. Each seed is
 * one whose workflows reach what it is listed for; it replays one world exactly (`npm run sim --
 * --seed S --trace`) and must violate no invariant — skips as the reference decides them, a
 * skipped node's handler never run, skips and continued failures never failing an execution,
 * dependants seeing a continued failure's {error} (sim/invariants.ts).
 *
 * A seed replays one world only while the engine makes the same port calls: if an engine change
 * reshapes the worlds so that a seed no longer reaches its feature, pick another from
 * `npm run sim -- --runs 500` (the stats of each seed name nodesSkipped, nodesContinued, …).
 */
import { describe, expect, it } from "vitest";
import { openFindingOf } from "../../sim/open-findings.js";
import { formatResult } from "../../sim/report.js";
import { runWorld } from "../../sim/world.js";

const WORLDS: Array<{ seed: number; reaches: string[] }> = [
  { seed: 4, reaches: ["nodesSkipped", "nodesContinued", "paramsMapped"] },
  {
    seed: 25,
    reaches: ["nodesSkipped", "skippedByWhen", "nodesContinued", "expressionErrors", "paramsMapped"],
  },
  { seed: 33, reaches: ["expressionErrors", "paramsMapped"] },
  { seed: 56, reaches: ["nodesContinued", "expressionErrors", "paramsMapped"] },
  { seed: 155, reaches: ["expressionErrors", "onFailureRuns"] },
  // an onFailure handler mapping {% error.name %} and the workflow's name
  { seed: 96, reaches: ["onFailureRuns"] },
  // Where the first campaigns found the checker wrong, not the engine:
  // - an `any`/`count:N` join made unmeetable by a skip, a parent then cancelled after the
  //   execution succeeded: SKIPPED was the end timing gave it, and its dependants' skips follow;
  { seed: 932, reaches: ["nodesSkipped"] },
  { seed: 7545, reaches: ["nodesSkipped"] },
  // - a node whose `when` is false, whose only attempt was lost (its lease expired) before it
  //   could record the skip: it fails for good (LeaseExpired) without its handler running, and its
  //   dependants see that error (under onError "continue", picked again after the timers reshaped
  //   the worlds; 2318: it fails the execution);
  { seed: 9004, reaches: ["nodesContinued"] },
  { seed: 2318, reaches: ["nodesSkipped"] },
  // - an onFailure handler whose message was dead-lettered, or whose attempts expired.
  { seed: 5005, reaches: ["onFailureRuns"] },
  // (6233 was one until the first heartbeat pulled the sweep time before its claim; picked again.)
  { seed: 6022, reaches: ["onFailureRuns"] },
];

describe("simulation with flow control", () => {
  for (const { seed, reaches } of WORLDS)
    it(`seed ${seed}: ${reaches.join(", ")} — no invariant violated`, async () => {
      // Without maps or catch edges: the worlds as they were when these seeds were picked.
      const result = await runWorld({
        seed,
        maps: false,
        children: false,
        externals: false,
        catchEdges: false,
      });
      const report = formatResult(result, { traceLines: 20 });
      expect(
        result.violations.filter((v) => openFindingOf(v) === undefined),
        report,
      ).toEqual([]);
      for (const stat of reaches) expect(result.stats[stat] ?? 0, `${stat}\n${report}`).toBeGreaterThan(0);
    });

  it("skips and continued failures leave the worlds without flow control as they were", async () => {
    // The same seed without flow control: no skip, no continued failure, no expression.
    const result = await runWorld({
      seed: 25,
      flowControl: false,
      maps: false,
      children: false,
      externals: false,
    });
    expect(result.violations, formatResult(result)).toEqual([]);
    for (const stat of [
      "nodesSkipped",
      "nodesContinued",
      "expressionErrors",
      "paramsMapped",
      "onFailureRuns",
    ])
      expect(result.stats[stat] ?? 0, stat).toBe(0);
  });
});
