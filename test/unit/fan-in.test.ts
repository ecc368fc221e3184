import { describe, expect, it } from "vitest";
import { type FanIn, parseFanIn } from "../../shared/domain/definition.js";
import { evaluateFanIn, requiredCompletions } from "../../shared/domain/fan-in.js";

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
