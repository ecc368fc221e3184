import { describe, expect, it } from "vitest";
import { compileGraph, DEFAULT_RETRY, resolveRetry } from "../../shared/domain/graph.js";
import { node, workflow } from "./domain-fixtures.js";

describe("compileGraph", () => {
  it("compiles a chain", () => {
    const graph = compileGraph(workflow([node("a"), node("b", ["a"]), node("c", ["b"])]));
    expect(graph.entries).toEqual([0]);
    expect(graph.sinks).toEqual([2]);
    expect(graph.nodes.map((n) => [n.parents, n.children])).toEqual([
      [[], [1]],
      [[0], [2]],
      [[1], []],
    ]);
    expect(graph.byId.get("b")).toBe(graph.nodes[1]);
  });

  it("compiles a diamond, parents in dependsOn order and children ascending", () => {
    // Declared out of order on purpose: d lists c before b.
    const graph = compileGraph(
      workflow([node("a"), node("d", ["c", "b"]), node("b", ["a"]), node("c", ["a"]), node("e", ["a"])]),
    );
    const byId = (id: string) => graph.byId.get(id)!;
    expect(byId("d").parents).toEqual([3, 2]);
    expect(byId("a").children).toEqual([2, 3, 4]);
    expect(byId("b").children).toEqual([1]);
    expect(graph.entries).toEqual([0]);
    expect(graph.sinks).toEqual([1, 4]);
  });

  it("has several entries and sinks for independent branches", () => {
    const graph = compileGraph(workflow([node("a"), node("b"), node("c", ["a"]), node("d", ["b"])]));
    expect(graph.entries).toEqual([0, 1]);
    expect(graph.sinks).toEqual([2, 3]);
  });

  it("parses fan-in of each kind", () => {
    const graph = compileGraph(
      workflow([
        node("a"),
        node("b"),
        node("all", ["a", "b"]),
        node("any", ["a", "b"], { fanIn: "any" }),
        node("two", ["a", "b"], { fanIn: "count:2" }),
      ]),
    );
    expect(graph.nodes.map((n) => n.fanIn)).toEqual([
      { kind: "all" },
      { kind: "all" },
      { kind: "all" },
      { kind: "any" },
      { kind: "count", n: 2 },
    ]);
  });

  it("keeps type and params, and keeps the definition", () => {
    const definition = workflow([node("a", undefined, { type: "echo", params: { value: 1 } })]);
    const graph = compileGraph(definition);
    expect(graph.definition).toBe(definition);
    expect(graph.nodes[0]).toMatchObject({ index: 0, id: "a", type: "echo", params: { value: 1 } });
  });

  it("defaults timeouts: node, then workflow defaults, then 300", () => {
    const plain = compileGraph(workflow([node("a")]));
    expect(plain.nodes[0]!.timeoutSeconds).toBe(300);
    const withDefaults = compileGraph(
      workflow([node("a"), node("b", undefined, { timeoutSeconds: 5 })], {
        defaults: { timeoutSeconds: 42 },
      }),
    );
    expect(withDefaults.nodes.map((n) => n.timeoutSeconds)).toEqual([42, 5]);
  });

  it("uses the built-in retry policy when nothing is given", () => {
    const graph = compileGraph(workflow([node("a")]));
    expect(graph.nodes[0]!.retry).toEqual({
      retriers: [
        { errors: ["*"], maxAttempts: 3, initialSeconds: 1, maxSeconds: 300, multiplier: 2, jitter: "full" },
      ],
      nonRetryable: [],
      maxAttempts: 3,
    });
  });

  it("merges retry field by field: node over workflow defaults over built-ins", () => {
    const graph = compileGraph(
      workflow(
        [
          node("a"),
          node("b", undefined, {
            retry: { backoff: { maxSeconds: 10, jitter: "none" }, nonRetryable: ["Boom"] },
          }),
        ],
        {
          defaults: {
            retry: { maxAttempts: 7, backoff: { initialSeconds: 2, maxSeconds: 60 }, nonRetryable: ["X"] },
          },
        },
      ),
    );
    expect(graph.nodes[0]!.retry).toEqual({
      retriers: [
        { errors: ["*"], maxAttempts: 7, initialSeconds: 2, maxSeconds: 60, multiplier: 2, jitter: "full" },
      ],
      nonRetryable: ["X"],
      maxAttempts: 7,
    });
    expect(graph.nodes[1]!.retry).toEqual({
      retriers: [
        { errors: ["*"], maxAttempts: 7, initialSeconds: 2, maxSeconds: 10, multiplier: 2, jitter: "none" },
      ],
      nonRetryable: ["Boom"],
      maxAttempts: 7,
    });
  });

  it("gives the deployment's defaultMaxAttempts to nodes whose node and defaults name none", () => {
    const definition = workflow([node("plain"), node("own", undefined, { retry: { maxAttempts: 4 } })], {
      defaults: { retry: { backoff: { initialSeconds: 2 } } },
    });
    const graph = compileGraph(definition, { defaultMaxAttempts: 1 });
    expect(graph.nodes.map((n) => n.retry.maxAttempts)).toEqual([1, 4]);
    expect(graph.nodes[0]!.retry.retriers[0]?.initialSeconds).toBe(2);
    const withDefaults = compileGraph(workflow([node("a")], { defaults: { retry: { maxAttempts: 5 } } }), {
      defaultMaxAttempts: 1,
    });
    expect(withDefaults.nodes[0]!.retry.maxAttempts).toBe(5);
    expect(DEFAULT_RETRY.maxAttempts).toBe(3);
  });

  it("a retrier list is taken whole, each retrier's missing fields from the defaults' object form; retryOn is an allow-list", () => {
    const graph = compileGraph(
      workflow(
        [
          node("list", undefined, {
            retry: [
              { errors: ["Throttled"], maxAttempts: 10, backoff: { initialSeconds: 5 } },
              { errors: ["*"] },
            ],
          }),
          node("allow", undefined, { retry: { retryOn: ["Timeout"], maxAttempts: 4 } }),
          node("plain"),
        ],
        { defaults: { retry: { maxAttempts: 2, backoff: { maxSeconds: 30 } } } },
      ),
    );
    expect(graph.nodes[0]!.retry).toEqual({
      retriers: [
        {
          errors: ["Throttled"],
          maxAttempts: 10,
          initialSeconds: 5,
          maxSeconds: 30,
          multiplier: 2,
          jitter: "full",
        },
        { errors: ["*"], maxAttempts: 2, initialSeconds: 1, maxSeconds: 30, multiplier: 2, jitter: "full" },
      ],
      nonRetryable: [],
      maxAttempts: 10,
    });
    expect(graph.nodes[1]!.retry.retriers).toEqual([
      {
        errors: ["Timeout"],
        maxAttempts: 4,
        initialSeconds: 1,
        maxSeconds: 30,
        multiplier: 2,
        jitter: "full",
      },
    ]);
    expect(graph.nodes[2]!.retry.retriers[0]?.errors).toEqual(["*"]);
    // A defaults list applies to nodes with no retry of their own.
    const fromDefaults = compileGraph(
      workflow([node("a")], { defaults: { retry: [{ errors: ["Throttled"], maxAttempts: 6 }] } }),
    );
    expect(fromDefaults.nodes[0]!.retry.retriers.map((r) => [r.errors, r.maxAttempts])).toEqual([
      [["Throttled"], 6],
    ]);
  });

  it("resolveRetry never shares the nonRetryable array", () => {
    const resolved = resolveRetry(undefined, undefined);
    resolved.nonRetryable.push("Oops");
    expect(DEFAULT_RETRY.nonRetryable).toEqual([]);
    const own = ["A"];
    expect(resolveRetry(undefined, { nonRetryable: own }).nonRetryable).not.toBe(own);
  });
});
