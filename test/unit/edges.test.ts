/** Catch edges (domain/edges.ts): how a parent's end counts for each child, and when a failure is caught. */
import { describe, expect, it } from "vitest";
import {
  dependencyIds,
  dependencyLabel,
  type Edge,
  edgeOf,
  edgeOutcome,
  failureGoesOn,
  isCaught,
  SUCCESS_EDGE,
} from "../../shared/domain/edges.js";
import { compileGraph, edgeFrom } from "../../shared/domain/graph.js";

const failure = (errors?: string[]): Edge => (errors ? { on: "failure", errors } : { on: "failure" });
const always: Edge = { on: "always" };
const declined = { name: "CardDeclined" };
const timeout = { name: "Error", code: "ETIMEDOUT" };

describe("edgeOutcome", () => {
  // `charge` has two children: `refund` on its CardDeclined failures, `ship` on its success.
  const charge = { onError: "fail" as const, catchEdges: [failure(["CardDeclined"])] };

  it("a completion: taken by success and always edges, the failure path skipped", () => {
    expect(edgeOutcome("COMPLETED", undefined, charge, SUCCESS_EDGE)).toBe("done");
    expect(edgeOutcome("COMPLETED", undefined, charge, always)).toBe("done");
    expect(edgeOutcome("COMPLETED", undefined, charge, failure(["CardDeclined"]))).toBe("skipped");
  });

  it("a caught failure: taken by the edge that matches it, every other path skipped", () => {
    expect(edgeOutcome("FAILED", declined, charge, failure(["CardDeclined"]))).toBe("done");
    expect(edgeOutcome("FAILED", declined, charge, SUCCESS_EDGE)).toBe("skipped");
    expect(edgeOutcome("FAILED", declined, charge, failure(["Other"]))).toBe("skipped");
  });

  it("a failure nobody catches is bad on every edge; a cancellation is bad; a skip skips", () => {
    for (const edge of [SUCCESS_EDGE, failure(["CardDeclined"]), always]) {
      expect(edgeOutcome("FAILED", timeout, charge, edge)).toBe(edge === always ? "done" : "bad");
      expect(edgeOutcome("CANCELLED", undefined, charge, edge)).toBe("bad");
      expect(edgeOutcome("SKIPPED", undefined, charge, edge)).toBe("skipped");
      expect(edgeOutcome("RUNNING", undefined, charge, edge)).toBe("open");
    }
  });

  it("errors match a name or a code; no errors match any failure", () => {
    expect(edgeOutcome("FAILED", timeout, { onError: "fail", catchEdges: [] }, failure(["ETIMEDOUT"]))).toBe(
      "done",
    );
    expect(edgeOutcome("FAILED", timeout, { onError: "fail", catchEdges: [] }, failure())).toBe("done");
  });
});

describe("isCaught and failureGoesOn", () => {
  it("a failure is caught when some child's catch edge takes it; onError continue goes on anyway", () => {
    const parent = { onError: "fail" as const, catchEdges: [failure(["CardDeclined"])] };
    expect(isCaught(parent, declined)).toBe(true);
    expect(isCaught(parent, timeout)).toBe(false);
    expect(failureGoesOn(parent, timeout)).toBe(false);
    expect(failureGoesOn({ onError: "continue", catchEdges: [] }, timeout)).toBe(true);
    expect(isCaught({ onError: "fail", catchEdges: [always] }, timeout)).toBe(true);
  });
});

describe("dependsOn entries", () => {
  it("names parents and edges; a plain id is a success edge", () => {
    const node = {
      dependsOn: [
        "a",
        { node: "b", on: "failure" as const, errors: ["X"] },
        { node: "c", on: "always" as const },
      ],
    };
    expect(dependencyIds(node)).toEqual(["a", "b", "c"]);
    expect(node.dependsOn.map(edgeOf)).toEqual([SUCCESS_EDGE, failure(["X"]), always]);
    expect(node.dependsOn.map(dependencyLabel)).toEqual(["a", "b (on failure: X)", "c (on always)"]);
  });

  it("the compiled graph keeps each child's edges and each parent's catch edges, and marks both paths skippable", () => {
    const graph = compileGraph({
      name: "saga",
      nodes: [
        { id: "charge", type: "noop" },
        { id: "ship", type: "noop", dependsOn: ["charge"] },
        { id: "refund", type: "noop", dependsOn: [{ node: "charge", on: "failure" }] },
        { id: "after", type: "noop", dependsOn: ["ship"] },
      ],
    });
    const [charge, ship, refund, after] = graph.nodes;
    expect(charge?.catchEdges).toEqual([failure()]);
    expect(edgeFrom(refund!, 0)).toEqual(failure());
    expect(edgeFrom(ship!, 0)).toBe(SUCCESS_EDGE);
    expect([charge, ship, refund, after].map((n) => n?.mayBeSkipped)).toEqual([false, true, true, true]);
  });
});
