/** Validation of the v2 additions: expressions in params and `when`, `onError`, `onFailure`. */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { LIMITS } from "../../shared/domain/definition.js";
import type { ProblemDetail } from "../../shared/domain/errors.js";
import {
  type DeploymentLimits,
  isUnderExpression,
  type TaskCatalog,
  validateDefinition,
} from "../../shared/domain/validate.js";
import type { TaskType } from "../../shared/tasks/task-type.js";

/** Task types with params worth checking: `call` has a refinement that throws on a non-URL. */
const callParams = z
  .object({
    method: z.enum(["GET", "POST"]),
    url: z.url().superRefine((value, ctx) => {
      // Throws on text that is not a URL, as http's registration schema does.
      if (new URL(value).hostname === "localhost") ctx.addIssue({ code: "custom", message: "no localhost" });
    }),
    retries: z.number().int().max(5).optional(),
    headers: z.record(z.string(), z.string()).optional(),
    body: z.object({ id: z.string(), count: z.number() }).strict().optional(),
  })
  .strict();

const schemas: Record<string, z.ZodType> = {
  noop: z.unknown(),
  call: callParams,
  alert: z.object({ channel: z.string().min(1), text: z.string() }).strict(),
};

const tasks: TaskCatalog = {
  get: (type) => (schemas[type] ? { params: schemas[type] } : undefined),
  names: () => Object.keys(schemas),
};

const workerLimits: DeploymentLimits = { nodeTimeout: { maxSeconds: 295, workerTimeoutSeconds: 300 } };

function problemsOf(raw: unknown, limits: DeploymentLimits = {}): ProblemDetail[] {
  const result = validateDefinition(raw, tasks, limits);
  if (result.ok) throw new Error("expected the definition to be rejected");
  return result.problems;
}

function only(raw: unknown, code: string, limits: DeploymentLimits = {}): ProblemDetail {
  const problems = problemsOf(raw, limits);
  expect(problems.map((p) => p.code)).toEqual([code]);
  return problems[0]!;
}

const call = (params: Record<string, unknown>) => ({ method: "GET", url: "https://api.test/x", ...params });

describe("validateDefinition (v2): a valid definition", () => {
  it("accepts expressions, when, onError and onFailure", () => {
    const definition = {
      name: "orders",
      onFailure: {
        type: "alert",
        params: {
          channel: "ops",
          text: "{% 'order ' & input.id & ' failed: ' & error.message & ' after ' & $string(deps.fetch.status) %}",
        },
        retry: { maxAttempts: 2 },
        timeoutSeconds: 30,
      },
      nodes: [
        {
          id: "fetch",
          type: "call",
          params: call({
            url: "{% 'https://api.test/orders/' & input.id %}",
            retries: "{% input.retries %}",
          }),
        },
        {
          id: "fetch-b",
          type: "call",
          onError: "continue",
          params: call({ headers: { "x-order": "{% input.id %}" } }),
        },
        {
          id: "post",
          type: "call",
          dependsOn: ["fetch", "fetch-b"],
          when: "{% deps.fetch.status = 200 and $exists(deps.`fetch-b`) %}",
          onError: "fail",
          params: call({
            method: "POST",
            body: { id: "{% input.id %}", count: "{% deps.`fetch-b`.rows %}" },
          }),
        },
      ],
    };
    const result = validateDefinition(definition, tasks, workerLimits);
    expect(result).toMatchObject({ ok: true });
    if (result.ok) expect(result.definition).toEqual(definition);
  });
});

describe("validateDefinition (v2): expressions", () => {
  it("a syntax error in params names the node, the path and the position", () => {
    const problem = only(
      {
        name: "w",
        nodes: [
          { id: "a", type: "noop" },
          { id: "b", type: "noop", params: { x: [1, "{% input. %}"] } },
        ],
      },
      "invalid_expression",
    );
    expect(problem).toEqual({
      path: "nodes[1].params.x[1]",
      code: "invalid_expression",
      message:
        'node "b", params.x[1] (at position 10): invalid expression {% input. %}: Unexpected end of expression (S0207)',
    });
  });

  it("a syntax error in when", () => {
    const problem = only(
      { name: "w", nodes: [{ id: "a", type: "noop", when: "{% input.ok = %}" }] },
      "invalid_expression",
    );
    expect(problem.path).toBe("nodes[0].when");
    expect(problem.message).toMatch(
      /^node "a", when \(at position \d+\): invalid expression \{% input\.ok = %\}: /,
    );
  });

  it("an unknown dependency in params or when, naming the node's dependencies", () => {
    const problems = problemsOf({
      name: "w",
      nodes: [
        { id: "a", type: "noop" },
        { id: "z", type: "noop" },
        {
          id: "b",
          type: "noop",
          dependsOn: ["a"],
          when: "{% deps.z.ok %}",
          params: { v: "{% deps.a.x & deps.q %}" },
        },
      ],
    });
    expect(problems).toEqual([
      {
        path: "nodes[2].params.v",
        code: "unknown_dependency",
        message:
          'node "b", params.v (at position 20): deps.q names "q", but deps holds only the outputs of "a" here',
      },
      {
        path: "nodes[2].when",
        code: "unknown_dependency",
        message:
          'node "b", when (at position 9): deps.z names "z", but deps holds only the outputs of "a" here',
      },
    ]);
  });

  it("$item and $index outside a map are unknown variables", () => {
    const problems = problemsOf({
      name: "w",
      nodes: [{ id: "a", type: "noop", params: { v: "{% $item.id %}" } }],
    });
    expect(problems).toEqual([
      {
        path: "nodes[0].params.v",
        code: "unknown_variable",
        message: 'node "a", params.v (at position 8): $item is only defined in the item params of a map',
      },
    ]);
  });

  it("error is only in scope in onFailure params", () => {
    const problem = only(
      { name: "w", nodes: [{ id: "a", type: "noop", params: { v: "{% error.message %}" } }] },
      "unknown_variable",
    );
    expect(problem.path).toBe("nodes[0].params.v");
    expect(problem.message).toContain("onFailure");
  });

  it("drops a schema issue under an expression but keeps a sibling's", () => {
    const problems = problemsOf({
      name: "w",
      nodes: [
        {
          id: "a",
          type: "call",
          params: call({
            retries: "{% input.retries %}",
            headers: "{% input.headers %}",
            body: { id: "{% input.id %}", count: "three" },
          }),
        },
      ],
    });
    expect(problems).toEqual([
      {
        path: "nodes[0].params.body.count",
        code: "invalid_params",
        message: expect.stringMatching(/^node "a", params\.body\.count \(task type "call"\): /),
      },
    ]);
  });

  it("still reports a field the task type does not know, even when its value is an expression", () => {
    const problem = only(
      { name: "w", nodes: [{ id: "a", type: "call", params: call({ extra: "{% input.x %}" }) }] },
      "invalid_params",
    );
    expect(problem).toEqual({
      path: "nodes[0].params.extra",
      code: "invalid_params",
      message: 'node "a", params.extra (task type "call"): unknown field "extra"',
    });
  });

  it("still reports a missing required field next to expressions", () => {
    const problem = only(
      { name: "w", nodes: [{ id: "a", type: "call", params: { url: "{% input.url %}" } }] },
      "invalid_params",
    );
    expect(problem.path).toBe("nodes[0].params.method");
  });

  it("copes with a refinement that throws on an expression's text (new URL)", () => {
    const result = validateDefinition(
      { name: "w", nodes: [{ id: "a", type: "call", params: call({ url: "{% input.url %}" }) }] },
      tasks,
    );
    expect(result.ok).toBe(true);
    const problem = only(
      { name: "w", nodes: [{ id: "a", type: "call", params: call({ url: "{% input.url %}", retries: 9 }) }] },
      "invalid_params",
    );
    expect(problem.path).toBe("nodes[0].params.retries");
  });

  it("params that are one expression are only known at run time", () => {
    const result = validateDefinition(
      { name: "w", nodes: [{ id: "a", type: "call", params: "{% input.call %}" }] },
      tasks,
    );
    expect(result.ok).toBe(true);
  });

  it("refuses an expression in params longer than the format's limit", () => {
    const long = `{% '${"x".repeat(LIMITS.maxExpressionLength)}' %}`;
    const problem = only(
      { name: "w", nodes: [{ id: "a", type: "noop", params: { v: long } }] },
      "limit_exceeded",
    );
    expect(problem.path).toBe("nodes[0].params.v");
    expect(problem.message).toContain(`at most ${LIMITS.maxExpressionLength} characters`);
  });

  it("leaves strings that are not wholly {% %} alone", () => {
    const result = validateDefinition(
      { name: "w", nodes: [{ id: "a", type: "noop", params: { v: "see {% deps.nope %}", w: "{% x" } }] },
      tasks,
    );
    expect(result.ok).toBe(true);
  });
});

describe("validateDefinition (v2): when and onError as written", () => {
  it("a when that is not {% %} says how to write it", () => {
    for (const when of ["input.ready = true", true]) {
      const problem = only({ name: "w", nodes: [{ id: "a", type: "noop", when }] }, "invalid_schema");
      expect(problem).toEqual({
        path: "nodes[0].when",
        code: "invalid_schema",
        message:
          'node "a", field when: must be a JSONata expression written as the whole string "{% … %}", e.g. "{% input.ready = true %}"',
      });
    }
  });

  it("a misspelt onError names the field and the values it takes", () => {
    const problem = only(
      { name: "w", nodes: [{ id: "a", type: "noop", onError: "contine" }] },
      "invalid_schema",
    );
    expect(problem.path).toBe("nodes[0].onError");
    expect(problem.message).toMatch(/^node "a", field onError: /);
    expect(problem.message).toContain('"fail"');
    expect(problem.message).toContain('"continue"');
  });

  it("a misspelt field name is an unknown field", () => {
    const problem = only(
      { name: "w", nodes: [{ id: "a", type: "noop", onErorr: "continue" }] },
      "unknown_field",
    );
    expect(problem).toMatchObject({ path: "nodes[0].onErorr", message: 'node "a": unknown field "onErorr"' });
  });
});

describe("validateDefinition (v2): onFailure", () => {
  it("an unknown task type, with the known ones", () => {
    const problem = only(
      { name: "w", onFailure: { type: "pager" }, nodes: [{ id: "a", type: "noop" }] },
      "unknown_task_type",
    );
    expect(problem).toEqual({
      path: "onFailure.type",
      code: "unknown_task_type",
      message: 'onFailure has unknown task type "pager"; known types: noop, call, alert',
    });
  });

  it("its params are checked against the task type, with the expression rule", () => {
    const problems = problemsOf({
      name: "w",
      onFailure: { type: "alert", params: { channel: "", text: "{% error.message %}", extra: 1 } },
      nodes: [{ id: "a", type: "noop" }],
    });
    expect(problems.map((p) => [p.path, p.code])).toEqual([
      ["onFailure.params.channel", "invalid_params"],
      ["onFailure.params.extra", "invalid_params"],
    ]);
    expect(problems[1]!.message).toBe('onFailure, params.extra (task type "alert"): unknown field "extra"');
  });

  it("its expressions see every node's output and the error, and nothing else", () => {
    const problems = problemsOf({
      name: "w",
      onFailure: {
        type: "alert",
        params: { channel: "{% deps.b.channel %}", text: "{% deps.nope & error.message & $item %}" },
      },
      nodes: [
        { id: "a", type: "noop" },
        { id: "b", type: "noop", dependsOn: ["a"] },
      ],
    });
    expect(problems.map((p) => [p.path, p.code])).toEqual([
      ["onFailure.params.text", "unknown_dependency"],
      ["onFailure.params.text", "unknown_variable"],
    ]);
    expect(problems[0]!.message).toContain('deps holds only the outputs of "a", "b"');
  });

  it("its timeout is checked against the worker's limit", () => {
    const problem = only(
      {
        name: "w",
        onFailure: { type: "alert", params: { channel: "c", text: "t" }, timeoutSeconds: 296 },
        nodes: [{ id: "a", type: "noop" }],
      },
      "timeout_exceeds_worker",
      workerLimits,
    );
    expect(problem.path).toBe("onFailure.timeoutSeconds");
    expect(problem.message).toMatch(
      /^onFailure has timeoutSeconds 296, but the worker gives a node at most 295 s/,
    );
    const within = validateDefinition(
      {
        name: "w",
        onFailure: { type: "alert", params: { channel: "c", text: "t" }, timeoutSeconds: 295 },
        nodes: [{ id: "a", type: "noop" }],
      },
      tasks,
      workerLimits,
    );
    expect(within.ok).toBe(true);
  });

  it("a malformed onFailure is a schema problem, without crashing the other checks", () => {
    const problems = problemsOf({ name: "w", onFailure: "alert", nodes: [{ id: "a", type: "noop" }] });
    expect(problems.map((p) => [p.path, p.code])).toEqual([["onFailure", "invalid_schema"]]);
    const unknown = problemsOf({
      name: "w",
      onFailure: { type: "alert", params: { channel: "c", text: "t" }, when: "{% true %}" },
      nodes: [{ id: "a", type: "noop" }],
    });
    expect(unknown.map((p) => [p.path, p.code])).toEqual([["onFailure.when", "unknown_field"]]);
  });
});

describe("validateDefinition (v2): every problem at once", () => {
  it("reports v1 and v2 problems together", () => {
    const problems = problemsOf(
      {
        name: "w",
        onFailure: { type: "pager", timeoutSeconds: 600, params: { to: "{% deps.ghost %}" } },
        nodes: [
          { id: "a", type: "call", onError: "ignore", params: call({ url: "{% input.url %}", retries: 99 }) },
          { id: "b", type: "nope", dependsOn: ["a", "missing"], when: "{% deps.a.ok and %}" },
          { id: "c", type: "noop", dependsOn: ["a"], timeoutSeconds: 600, params: { v: "{% $index %}" } },
        ],
      },
      workerLimits,
    );
    expect(problems.map((p) => [p.path, p.code])).toEqual([
      ["nodes[2].timeoutSeconds", "timeout_exceeds_worker"],
      ["onFailure.timeoutSeconds", "timeout_exceeds_worker"],
      ["nodes[0].onError", "invalid_schema"],
      ["nodes[1].dependsOn[1]", "unknown_dependency"],
      ["nodes[0].params.retries", "invalid_params"],
      ["nodes[1].type", "unknown_task_type"],
      ["nodes[1].when", "invalid_expression"],
      ["nodes[2].params.v", "unknown_variable"],
      ["onFailure.type", "unknown_task_type"],
      ["onFailure.params.to", "unknown_dependency"],
    ]);
  });
});

describe("isUnderExpression", () => {
  it.each([
    [["url"], [["url"]], true],
    [["body", "count"], [["body"]], true],
    [["body"], [["body", "count"]], false],
    [["headers", "x"], [["url"], ["headers", "y"]], false],
    [[], [[]], true],
    [["items", 0], [["items", 1]], false],
    [["items", 1, "id"], [["items", 1]], true],
  ] as const)("%j under %j is %s", (path, expressionPaths, expected) => {
    expect(isUnderExpression(path, expressionPaths)).toBe(expected);
  });
});

describe("validateDefinition (v2): rules expressions cannot get around", () => {
  it("refuses an expression as an http credential header, like plain text", async () => {
    const { createTaskRegistry } = await import("../../shared/tasks/builtins.js");
    const { defaultHttpTask } = await import("../../shared/tasks/http.js");
    const result = validateDefinition(
      {
        name: "w",
        nodes: [
          {
            id: "a",
            type: "http",
            params: {
              method: "GET",
              url: "https://api.example.com/x",
              headers: { Authorization: "{% input.token %}", "X-Trace": "{% execution.id %}" },
            },
          },
        ],
      },
      createTaskRegistry([defaultHttpTask as TaskType<unknown>]),
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems).toEqual([
      expect.objectContaining({
        path: "nodes[0].params.headers.Authorization",
        message: expect.stringContaining("plain-text credential"),
      }),
    ]);
  });
});

describe("validateDefinition (v2): map and workflow nodes", () => {
  const registry = async () => (await import("../../shared/tasks/builtins.js")).createTaskRegistry();
  const withMap = (params: Record<string, unknown>) => ({
    name: "w",
    nodes: [
      { id: "list", type: "pass" },
      { id: "each", type: "map", dependsOn: ["list"], params: { items: "{% deps.list %}", ...params } },
    ],
  });

  it("accepts a map whose task params use $item and $index, and a workflow node", async () => {
    const result = validateDefinition(
      {
        name: "w",
        nodes: [
          { id: "list", type: "pass" },
          {
            id: "each",
            type: "map",
            dependsOn: ["list"],
            params: {
              items: "{% deps.list.files %}",
              task: { type: "pass", params: { value: "{% $item.name & $index & deps.list.tag %}" } },
              maxConcurrency: 20,
              toleratedFailurePercentage: 10,
            },
          },
          {
            id: "child",
            type: "workflow",
            dependsOn: ["each"],
            params: { name: "other", input: "{% deps.each %}" },
          },
        ],
      },
      await registry(),
    );
    expect(result.ok, JSON.stringify(result)).toBe(true);
  });

  it("refuses a map's unknown task type, and task types that cannot run per item", async () => {
    const tasks = await registry();
    for (const [type, code] of [
      ["nope", "unknown_task_type"],
      ["merge", "invalid_params"],
      ["wait", "invalid_params"],
      ["map", "invalid_params"],
    ] as const) {
      const result = validateDefinition(withMap({ task: { type } }), tasks);
      expect(result.ok).toBe(false);
      if (result.ok) continue;
      expect(result.problems).toEqual([expect.objectContaining({ path: "nodes[1].params.task.type", code })]);
    }
  });

  it("checks a map task's params against its type, and refuses expressions where the map reads its settings", async () => {
    const result = validateDefinition(
      withMap({
        task: { type: "pass", params: { value: "{% $item %}", extra: 1 } },
        maxConcurrency: "{% 4 %}",
      }),
      await registry(),
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems.map((p) => p.path).sort()).toEqual([
      "nodes[1].params.maxConcurrency",
      "nodes[1].params.task.params.extra",
    ]);
  });

  it("refuses $item in a map's items (it is only in scope per item), and a map without a task", async () => {
    const tasks = await registry();
    const item = validateDefinition(withMap({ items: "{% $item %}", task: { type: "noop" } }), tasks);
    expect(item.ok).toBe(false);
    if (!item.ok)
      expect(item.problems).toEqual([
        expect.objectContaining({ path: "nodes[1].params.items", code: "unknown_variable" }),
      ]);
    const bare = validateDefinition(withMap({}), tasks);
    expect(bare.ok).toBe(false);
    if (!bare.ok) expect(bare.problems.map((p) => p.path)).toContain("nodes[1].params.task");
  });

  it("refuses a workflow node without a workflow name", async () => {
    const result = validateDefinition(
      { name: "w", nodes: [{ id: "child", type: "workflow", params: { input: 1 } }] },
      await registry(),
    );
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.problems.map((p) => p.path)).toEqual(["nodes[0].params.name"]);
  });
});
