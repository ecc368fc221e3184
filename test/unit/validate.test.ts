import { describe, expect, it } from "vitest";
import { LIMITS } from "../../shared/domain/definition.js";
import type { ProblemDetail } from "../../shared/domain/errors.js";
import { formatPath, validateDefinition } from "../../shared/domain/validate.js";
import { node, testTasks, workflow } from "./domain-fixtures.js";

const tasks = testTasks();

function problemsOf(raw: unknown): ProblemDetail[] {
  const result = validateDefinition(raw, tasks);
  if (result.ok) throw new Error("expected the definition to be rejected");
  return result.problems;
}

function only(raw: unknown, code: string): ProblemDetail {
  const problems = problemsOf(raw);
  expect(problems.map((p) => p.code)).toEqual([code]);
  return problems[0]!;
}

describe("validateDefinition: valid definitions", () => {
  it.each([
    ["a single node", workflow([node("a")])],
    ["a chain", workflow([node("a"), node("b", ["a"]), node("c", ["b"])])],
    ["a diamond", workflow([node("a"), node("b", ["a"]), node("c", ["a"]), node("d", ["b", "c"])])],
    ["fan-in all", workflow([node("a"), node("b"), node("m", ["a", "b"], { fanIn: "all" })])],
    ["fan-in any", workflow([node("a"), node("b"), node("m", ["a", "b"], { fanIn: "any" })])],
    [
      "fan-in count:N = N deps",
      workflow([node("a"), node("b"), node("m", ["a", "b"], { fanIn: "count:2" })]),
    ],
    [
      "fan-in count:1",
      workflow([node("a"), node("b"), node("c"), node("m", ["a", "b", "c"], { fanIn: "count:1" })]),
    ],
    ["all on an entry node", workflow([node("a", [], { fanIn: "all" })])],
    [
      "params that match the task type",
      workflow([
        node("a", undefined, { type: "echo", params: { value: 3 } }),
        node("b", ["a"], { type: "merge" }),
      ]),
    ],
  ])("accepts %s", (_label, definition) => {
    const result = validateDefinition(definition, tasks);
    expect(result).toMatchObject({ ok: true });
    if (result.ok) {
      expect(result.definition).toEqual(definition);
      expect(result.graph.nodes.map((n) => n.id)).toEqual(definition.nodes.map((n) => n.id));
    }
  });

  it("accepts the example from the design brief (with its task types registered)", () => {
    const definition = {
      name: "nightly-etl",
      defaults: { timeoutSeconds: 300, retry: { maxAttempts: 3 } },
      nodes: [
        { id: "extract-a", type: "noop", params: { method: "GET", url: "https://example.test/a" } },
        { id: "extract-b", type: "noop", params: { method: "GET", url: "https://example.test/b" } },
        { id: "extract-c", type: "echo", params: { value: 3 } },
        { id: "merge", type: "merge", dependsOn: ["extract-a", "extract-b", "extract-c"], fanIn: "count:2" },
        {
          id: "load",
          type: "noop",
          dependsOn: ["merge"],
          retry: {
            maxAttempts: 5,
            backoff: { initialSeconds: 2, maxSeconds: 120, multiplier: 2, jitter: "full" },
            nonRetryable: ["ValidationError"],
          },
          timeoutSeconds: 60,
        },
      ],
    };
    const result = validateDefinition(definition, tasks);
    expect(result.ok).toBe(true);
    if (result.ok) {
      expect(result.graph.entries).toEqual([0, 1, 2]);
      expect(result.graph.sinks).toEqual([4]);
    }
  });
});

describe("validateDefinition: schema problems", () => {
  it.each([null, 42, "text", [], undefined])("rejects a non-object (%j) at the root", (raw) => {
    const problems = problemsOf(raw);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ path: "", code: "invalid_schema" });
  });

  it("reports a bad workflow name with its path", () => {
    const problem = only(workflow([node("a")], { name: "not a name!" }), "invalid_schema");
    expect(problem.path).toBe("name");
    expect(problem.message).toContain("workflow name");
  });

  it("reports each unknown field on its own path, naming the node", () => {
    const problems = problemsOf({ ...workflow([{ ...node("a"), colour: "red" } as never]), extra: true });
    expect(problems).toEqual(
      expect.arrayContaining([
        { path: "extra", code: "unknown_field", message: expect.stringContaining('"extra"') },
        {
          path: "nodes[0].colour",
          code: "unknown_field",
          message: expect.stringMatching(/node "a".*"colour"/),
        },
      ]),
    );
    expect(problems).toHaveLength(2);
  });

  it("reports limits (too_big) as limit_exceeded", () => {
    const problem = only(
      workflow([node("a", undefined, { retry: { maxAttempts: 1000 } })]),
      "limit_exceeded",
    );
    expect(problem.path).toBe("nodes[0].retry.maxAttempts");
    expect(problem.message).toContain('node "a"');
  });

  it("reports an id longer than the limit", () => {
    const long = "x".repeat(LIMITS.maxIdLength + 1);
    const problem = only(workflow([node(long)]), "limit_exceeded");
    expect(problem.path).toBe("nodes[0].id");
  });

  it("reports too many nodes once, without graph analysis of the oversized list", () => {
    const nodes = Array.from({ length: LIMITS.maxNodes + 1 }, (_, i) => node(`n${i}`, ["ghost"]));
    const problems = problemsOf(workflow(nodes));
    expect(problems).toContainEqual(expect.objectContaining({ path: "nodes", code: "limit_exceeded" }));
    expect(problems.some((p) => p.code === "unknown_dependency")).toBe(false);
  });

  it("reports an empty node list", () => {
    expect(only(workflow([]), "invalid_schema").path).toBe("nodes");
  });

  it("reports nodes that is not an array without crashing", () => {
    expect(only({ name: "x", nodes: { a: 1 } }, "invalid_schema").path).toBe("nodes");
  });

  it("names a node by position when its id is unusable", () => {
    const problems = problemsOf(workflow([node("a"), { type: "noop", id: 7 } as never]));
    expect(problems).toEqual([
      expect.objectContaining({
        path: "nodes[1].id",
        code: "invalid_schema",
        message: expect.stringContaining("nodes[1]"),
      }),
    ]);
  });

  it("reports a definition larger than the byte limit", () => {
    const big = "é".repeat(LIMITS.maxDefinitionBytes / 2 + 10); // two bytes each in UTF-8
    const problem = only(workflow([node("a", undefined, { params: { big } })]), "definition_too_large");
    expect(problem.path).toBe("");
    expect(problem.message).toContain(String(LIMITS.maxDefinitionBytes));
  });

  it("does not let one malformed node hide graph problems elsewhere", () => {
    const problems = problemsOf(
      workflow([node("a", undefined, { retry: { maxAttempts: 0 } }), node("b", ["a"]), node("c", ["ghost"])]),
    );
    expect(problems.map((p) => [p.code, p.path])).toEqual(
      expect.arrayContaining([
        ["invalid_schema", "nodes[0].retry.maxAttempts"],
        ["unknown_dependency", "nodes[2].dependsOn[0]"],
      ]),
    );
    // "b" depends on the malformed "a", which still counts as a node: no spurious unknown dependency.
    expect(problems.filter((p) => p.code === "unknown_dependency")).toHaveLength(1);
  });
});

describe("validateDefinition: graph problems", () => {
  it("duplicate_id: each repeated occurrence, naming the id and both positions", () => {
    const problems = problemsOf(workflow([node("a"), node("b", ["a"]), node("a"), node("a")]));
    expect(problems).toEqual([
      {
        path: "nodes[2].id",
        code: "duplicate_id",
        message: expect.stringMatching(/"a".*nodes\[0\].*nodes\[2\]/),
      },
      {
        path: "nodes[3].id",
        code: "duplicate_id",
        message: expect.stringMatching(/"a".*nodes\[0\].*nodes\[3\]/),
      },
    ]);
  });

  it("unknown_dependency: path of the dependsOn entry, naming both nodes", () => {
    const problems = problemsOf(workflow([node("a"), node("b", ["a", "ghost"])]));
    // "b" still reaches "a"; the unknown dependency is the only problem worth reporting for it...
    expect(problems[0]).toEqual({
      path: "nodes[1].dependsOn[1]",
      code: "unknown_dependency",
      message: expect.stringMatching(/node "b".*"ghost"/),
    });
    // ...and "b" stays reachable through "a".
    expect(problems).toHaveLength(1);
  });

  it("self_dependency", () => {
    const problems = problemsOf(workflow([node("a"), node("b", ["a", "b"])]));
    expect(problems).toEqual([
      {
        path: "nodes[1].dependsOn[1]",
        code: "self_dependency",
        message: expect.stringContaining('node "b"'),
      },
    ]);
  });

  it("duplicate_dependency: the repeated entry only", () => {
    const problems = problemsOf(workflow([node("a"), node("b", ["a", "a"])]));
    expect(problems).toEqual([
      {
        path: "nodes[1].dependsOn[1]",
        code: "duplicate_dependency",
        message: expect.stringMatching(/node "b".*"a"/),
      },
    ]);
  });

  it("cycle: names the nodes in order, closing the loop", () => {
    // a depends on c, b on a, c on b: a → b → c → a in run order.
    const problems = problemsOf(
      workflow([node("s"), node("a", ["s", "c"]), node("b", ["a"]), node("c", ["b"])]),
    );
    expect(problems).toEqual([{ path: "nodes[1].dependsOn[1]", code: "cycle", message: expect.any(String) }]);
    expect(problems[0]!.message).toMatch(/^cycle: a → b → c → a/);
  });

  it("cycle: one problem per cycle, and nodes downstream of it are unreachable", () => {
    const problems = problemsOf(
      workflow([
        node("start"),
        node("a", ["b"]),
        node("b", ["a"]),
        node("x", ["start", "y"]),
        node("y", ["x"]),
        node("after", ["b"]),
      ]),
    );
    expect(problems.map((p) => [p.code, p.path])).toEqual([
      ["cycle", "nodes[1].dependsOn[0]"],
      ["cycle", "nodes[3].dependsOn[1]"],
      ["unreachable", "nodes[5].dependsOn"],
    ]);
    expect(problems[0]!.message).toMatch(/^cycle: a → b → a/);
    expect(problems[1]!.message).toMatch(/^cycle: x → y → x/);
    expect(problems[2]!.message).toMatch(/node "after".*"a", "b"/);
  });

  it("cycle: a strongly connected component with several loops is one problem naming all its nodes", () => {
    // a ⇄ b and a ⇄ c share "a".
    const problems = problemsOf(
      workflow([node("s"), node("a", ["s", "b", "c"]), node("b", ["a"]), node("c", ["a"])]),
    );
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ code: "cycle", path: "nodes[1].dependsOn[1]" });
    expect(problems[0]!.message).toMatch(/^cycle: a → b → a/);
    expect(problems[0]!.message).toContain("a, b, c");
  });

  it("no_entry_node (with the cycle that causes it)", () => {
    const problems = problemsOf(workflow([node("a", ["b"]), node("b", ["a"])]));
    expect(problems.map((p) => [p.code, p.path])).toEqual([
      ["cycle", "nodes[0].dependsOn[0]"],
      ["no_entry_node", "nodes"],
    ]);
    expect(problems[0]!.message).toMatch(/a → b → a/);
  });

  it("no_entry_node when every node depends on an unknown one", () => {
    const problems = problemsOf(workflow([node("a", ["ghost"])]));
    expect(problems.map((p) => p.code)).toEqual(["unknown_dependency", "no_entry_node"]);
  });

  it("unreachable: downstream of an unknown dependency, naming the blocked node and the cause", () => {
    const problems = problemsOf(workflow([node("a"), node("b", ["ghost"]), node("c", ["b"])]));
    expect(problems).toEqual([
      expect.objectContaining({ code: "unknown_dependency", path: "nodes[1].dependsOn[0]" }),
      { path: "nodes[1].dependsOn", code: "unreachable", message: expect.stringContaining('node "b"') },
      { path: "nodes[2].dependsOn", code: "unreachable", message: expect.stringMatching(/node "c".*"b"/) },
    ]);
  });

  it.each([
    ["count:N above the number of dependencies", node("m", ["a", "b"], { fanIn: "count:3" }), /count:3.*2/],
    ["any on an entry node", node("m", undefined, { fanIn: "any" }), /"any".*no dependencies/],
    ["count:1 on an entry node", node("m", [], { fanIn: "count:1" }), /"count:1".*no dependencies/],
  ])("fan_in_out_of_range: %s", (_label, fanInNode, pattern) => {
    const problem = only(workflow([node("a"), node("b"), fanInNode]), "fan_in_out_of_range");
    expect(problem.path).toBe("nodes[2].fanIn");
    expect(problem.message).toContain('node "m"');
    expect(problem.message).toMatch(pattern);
  });

  it("fan_in_out_of_range counts distinct dependencies", () => {
    const problems = problemsOf(workflow([node("a"), node("m", ["a", "a"], { fanIn: "count:2" })]));
    expect(problems.map((p) => p.code)).toEqual(["duplicate_dependency", "fan_in_out_of_range"]);
  });

  it("a malformed fanIn is a schema problem, not a range problem", () => {
    const problem = only(workflow([node("a"), node("m", ["a"], { fanIn: "count:0" })]), "invalid_schema");
    expect(problem.path).toBe("nodes[1].fanIn");
  });
});

describe("validateDefinition: task types and params", () => {
  it("unknown_task_type lists the known types", () => {
    const problem = only(workflow([node("a", undefined, { type: "teleport" })]), "unknown_task_type");
    expect(problem.path).toBe("nodes[0].type");
    expect(problem.message).toMatch(/node "a".*"teleport".*echo, merge, noop/);
  });

  it("invalid_params: one problem per zod issue, under nodes[i].params", () => {
    const problems = problemsOf(
      workflow([node("a"), node("e", ["a"], { type: "echo", params: { value: "three", extra: 1 } })]),
    );
    expect(problems).toEqual([
      {
        path: "nodes[1].params.value",
        code: "invalid_params",
        message: expect.stringMatching(/node "e".*echo/),
      },
      {
        path: "nodes[1].params.extra",
        code: "invalid_params",
        message: expect.stringMatching(/node "e".*"extra"/),
      },
    ]);
  });

  it("invalid_params: missing params are reported at nodes[i].params", () => {
    const problem = only(workflow([node("e", undefined, { type: "echo" })]), "invalid_params");
    expect(problem.path).toBe("nodes[0].params");
  });
});

describe("validateDefinition: every problem at once", () => {
  it("lists all the problems of a definition with many", () => {
    const raw = {
      name: "bad name",
      surprise: 1,
      nodes: [
        node("a"),
        node("a"),
        node("b", ["a", "a", "ghost", "b"], { fanIn: "count:9" }),
        node("c", ["d"], { type: "teleport" }),
        node("d", ["c"]),
        node("e", ["d"], { type: "echo", params: { value: "x" } }),
        node("f", undefined, { fanIn: "any", retry: { maxAttempts: 0 } }),
      ],
    };
    const found = problemsOf(raw).map((p) => `${p.code} ${p.path}`);
    expect(found.sort()).toEqual(
      [
        "invalid_schema name",
        "unknown_field surprise",
        "invalid_schema nodes[6].retry.maxAttempts",
        "duplicate_id nodes[1].id",
        "duplicate_dependency nodes[2].dependsOn[1]",
        "unknown_dependency nodes[2].dependsOn[2]",
        "self_dependency nodes[2].dependsOn[3]",
        "fan_in_out_of_range nodes[2].fanIn",
        "fan_in_out_of_range nodes[6].fanIn",
        "cycle nodes[3].dependsOn[0]",
        "unreachable nodes[5].dependsOn",
        "unknown_task_type nodes[3].type",
        "invalid_params nodes[5].params.value",
      ].sort(),
    );
  });
});

describe("formatPath", () => {
  it.each([
    [[], ""],
    [["name"], "name"],
    [["nodes", 3, "dependsOn", 1], "nodes[3].dependsOn[1]"],
    [["nodes", 0, "params", "a b"], 'nodes[0].params["a b"]'],
  ] as const)("%j → %s", (path, expected) => {
    expect(formatPath(path)).toBe(expected);
  });
});

describe("validateDefinition: retriers", () => {
  it("accepts a list of retriers and the retryOn allow-list", () => {
    const list = workflow([
      node("a", undefined, {
        retry: [
          { errors: ["Throttled"], maxAttempts: 10, backoff: { initialSeconds: 2 } },
          { errors: ["*"] },
        ],
      }),
      node("b", undefined, { retry: { retryOn: ["Timeout"], maxAttempts: 3 } }),
    ]);
    expect(validateDefinition(list, tasks)).toMatchObject({ ok: true });
  });

  it.each([
    [[], "nodes[0].retry", "at least one retrier"],
    [[{ errors: [] }], "nodes[0].retry[0].errors", "at least one error name"],
    [[{ maxAttempts: 2 }], "nodes[0].retry", "a list of retriers [{errors"],
    [[{ errors: ["A"], maxAttempts: 0 }], "nodes[0].retry[0].maxAttempts", ">=1"],
    [{ retryOn: [] }, "nodes[0].retry.retryOn", "at least one error name"],
    [5, "nodes[0].retry", "retry is an object"],
  ])("refuses retry %j, naming %s", (retry, path, message) => {
    const problems = problemsOf(workflow([node("a", undefined, { retry } as never)]));
    expect(problems.map((p) => p.path)).toEqual([path]);
    expect(problems[0]?.message).toContain(message);
  });

  it("a retrier takes no nonRetryable (the list says what is retried)", () => {
    const problem = only(
      workflow([node("a", undefined, { retry: [{ errors: ["A"], nonRetryable: ["B"] }] } as never)]),
      "unknown_field",
    );
    expect(problem.path).toBe("nodes[0].retry[0].nonRetryable");
  });
});
