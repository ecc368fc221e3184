import { describe, expect, it } from "vitest";
import { type FanIn, parseFanIn } from "../../shared/domain/definition.js";
import { edgeOutcome, SUCCESS_EDGE } from "../../shared/domain/edges.js";
import { evaluateFanIn, requiredCompletions, tallyParents } from "../../shared/domain/fan-in.js";

const all: FanIn = { kind: "all" };
const any: FanIn = { kind: "any" };
const count = (n: number): FanIn => ({ kind: "count", n });

describe("requiredCompletions", () => {
  it.each([
    [all, 4, 4],
    [all, 1, 1],
    [any, 4, 1],
    [count(2), 4, 2],
    [count(4), 4, 4],
  ])("%j with %i parents needs %i", (fanIn, parents, expected) => {
    expect(requiredCompletions(fanIn, parents)).toBe(expected);
  });

  it("an entry node (no parents, all) needs nothing", () => {
    expect(requiredCompletions(parseFanIn(undefined), 0)).toBe(0);
    expect(evaluateFanIn(all, 0, 0, 0)).toBe("ready");
  });
});

describe("evaluateFanIn", () => {
  // [fanIn, parents, completed, failed, expected]
  it.each([
    [all, 3, 0, 0, "waiting"],
    [all, 3, 2, 0, "waiting"],
    [all, 3, 3, 0, "ready"],
    [all, 3, 2, 1, "unsatisfiable"],
    [all, 3, 0, 1, "unsatisfiable"],
    [any, 3, 0, 0, "waiting"],
    [any, 3, 1, 0, "ready"],
    [any, 3, 1, 2, "ready"],
    [any, 3, 0, 2, "waiting"],
    [any, 3, 0, 3, "unsatisfiable"],
    [count(2), 4, 1, 0, "waiting"],
    [count(2), 4, 2, 0, "ready"],
    [count(2), 4, 2, 2, "ready"],
    [count(2), 4, 1, 2, "waiting"],
    [count(2), 4, 1, 3, "unsatisfiable"],
    [count(2), 4, 0, 3, "unsatisfiable"],
    [count(3), 3, 0, 1, "unsatisfiable"],
    [count(1), 2, 0, 1, "waiting"],
  ] as const)(
    "%j, %i parents, %i completed, %i failed → %s",
    (fanIn, parents, completed, failed, expected) => {
      expect(evaluateFanIn(fanIn, parents, completed, failed)).toBe(expected);
    },
  );

  it("stays ready once ready, whatever fails afterwards", () => {
    for (let failed = 0; failed <= 3; failed++) expect(evaluateFanIn(count(2), 5, 2, failed)).toBe("ready");
  });
});

describe("evaluateFanIn with skips (every fan-in kind)", () => {
  // [fanIn, parents, completed (done), failed, skipped, expected]
  it.each([
    // all: met once every dependency ended, with at least one done; all skipped → skipped
    [all, 3, 1, 0, 1, "waiting"],
    [all, 3, 2, 0, 1, "ready"],
    [all, 3, 1, 0, 2, "ready"],
    [all, 3, 0, 0, 3, "skipped"],
    [all, 3, 0, 0, 2, "waiting"],
    [all, 3, 0, 1, 2, "unsatisfiable"],
    [all, 1, 0, 0, 1, "skipped"],
    // any: the first done; skipped when every dependency was skipped
    [any, 3, 0, 0, 2, "waiting"],
    [any, 3, 1, 0, 2, "ready"],
    [any, 3, 0, 0, 3, "skipped"],
    [any, 3, 0, 1, 2, "unsatisfiable"],
    // count:N: skipped as soon as skips leave too few to meet it; a failure among them cancels
    [count(2), 4, 1, 0, 2, "waiting"],
    [count(2), 4, 1, 0, 3, "skipped"],
    [count(2), 4, 0, 0, 3, "skipped"],
    [count(2), 4, 2, 0, 2, "ready"],
    [count(2), 4, 0, 1, 2, "unsatisfiable"],
    [count(3), 3, 2, 0, 1, "skipped"],
  ] as const)(
    "%j, %i parents, %i done, %i failed, %i skipped → %s",
    (fanIn, parents, completed, failed, skipped, expected) => {
      expect(evaluateFanIn(fanIn, parents, completed, failed, skipped)).toBe(expected);
    },
  );

  it("counts a failure under onError continue as done, and only a default one as bad (a success edge)", () => {
    const under = (onError: "continue" | "fail") => ({ onError, catchEdges: [] });
    const boom = { name: "Boom" };
    expect(edgeOutcome("FAILED", boom, under("continue"), SUCCESS_EDGE)).toBe("done");
    expect(edgeOutcome("FAILED", boom, under("fail"), SUCCESS_EDGE)).toBe("bad");
    expect(edgeOutcome("CANCELLED", undefined, under("continue"), SUCCESS_EDGE)).toBe("bad");
    expect(edgeOutcome("SKIPPED", undefined, under("fail"), SUCCESS_EDGE)).toBe("skipped");
    expect(edgeOutcome("COMPLETED", undefined, under("fail"), SUCCESS_EDGE)).toBe("done");
    expect(edgeOutcome(undefined, undefined, under("fail"), SUCCESS_EDGE)).toBe("open");
    expect(edgeOutcome("RUNNING", undefined, under("continue"), SUCCESS_EDGE)).toBe("open");
  });

  it("tallies parents by outcome, each list ascending", () => {
    const outcomes = ["skipped", "done", "bad", "open", "done"] as const;
    expect(tallyParents([4, 3, 2, 1, 0], (p) => outcomes[p]!)).toEqual({
      ok: [1, 4],
      bad: [2],
      skipped: [0],
    });
  });

  it("never turns a skip into a failure: a verdict without a failed dependency is never unsatisfiable", () => {
    for (const fanIn of [all, any, count(1), count(2), count(3)])
      for (let done = 0; done <= 3; done++)
        for (let skipped = 0; done + skipped <= 3; skipped++)
          expect(evaluateFanIn(fanIn, 3, done, 0, skipped)).not.toBe("unsatisfiable");
  });
});
