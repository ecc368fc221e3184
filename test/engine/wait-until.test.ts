/**
 * `wait` with `seconds` or `until`, each a literal or an expression (issue 26): the params that
 * decide when the node runs are evaluated when it is queued, over its scope, so it waits what they
 * say — never ends at once claiming it waited, never stays PENDING — and a value that is not a
 * duration or a timestamp fails the node with a terminal ExpressionError naming the param.
 */
import { describe, expect, it } from "vitest";
import { validateDefinition } from "../../shared/domain/validate.js";
import { createTaskRegistry } from "../../shared/tasks/builtins.js";
import { createApiFixture, type ErrorBody } from "../api/helpers.js";
import { BACKEND_KINDS, type Backend, createBackend } from "../support/backends.js";
import { receiveAll, runToEnd } from "../support/harness.js";
import { PATIENT } from "../support/progress.js";

async function withBackend(kind: (typeof BACKEND_KINDS)[number], run: (backend: Backend) => Promise<void>) {
  const backend = await createBackend(kind);
  try {
    await run(backend);
  } finally {
    await backend.cleanup();
  }
}

describe.each(BACKEND_KINDS)("wait with expressions and until (%s)", PATIENT, (kind) => {
  it("queues a wait whose seconds are expressions (over the input, over a dependency) to run that long after", async () => {
    await withBackend(kind, async ({ engine, store, consumer }) => {
      await engine.registerWorkflow({
        name: "wait-expr-seconds",
        nodes: [
          { id: "first", type: "wait", params: { seconds: "{% input.delay %}" } },
          { id: "a", type: "pass", params: { value: 900 } },
          { id: "second", type: "wait", dependsOn: ["a"], params: { seconds: "{% deps.a %}" } },
        ],
      });
      const { executionId } = await engine.createExecution({
        workflow: "wait-expr-seconds",
        input: { delay: 600 },
      });
      const first = await store.getNode(executionId, "first");
      expect(first?.status).toBe("QUEUED");
      expect(first?.notBefore).toBe(first!.queuedAt! + 600_000);
      // Only `a` is deliverable now: the wait's message is delayed.
      const [message] = await receiveAll(consumer, 1);
      await engine.handleTask(JSON.parse(message!.body), { receiveCount: 1 });
      await consumer.delete([message!.receiptHandle]);
      const second = await store.getNode(executionId, "second");
      expect(second?.status).toBe("QUEUED");
      expect(second?.notBefore).toBe(second!.queuedAt! + 900_000);
      expect((await store.getExecution(executionId))?.status).toBe("RUNNING");
    });
  });

  it("queues a wait until a future time (literal or expression) to run at that time", async () => {
    await withBackend(kind, async ({ engine, store }) => {
      const until = new Date(Date.now() + 3_600_000).toISOString();
      await engine.registerWorkflow({
        name: "wait-until-future",
        nodes: [
          { id: "literal", type: "wait", params: { until } },
          { id: "expr", type: "wait", params: { until: "{% input.at %}" } },
        ],
      });
      const { executionId } = await engine.createExecution({
        workflow: "wait-until-future",
        input: { at: until },
      });
      for (const id of ["literal", "expr"]) {
        const node = await store.getNode(executionId, id);
        expect(node?.status).toBe("QUEUED");
        expect(node?.notBefore).toBe(Date.parse(until));
      }
    });
  });

  it("runs a wait until a past time at once, saying what it waited for", async () => {
    await withBackend(kind, async ({ engine, store, consumer }) => {
      await engine.registerWorkflow({
        name: "wait-until-past",
        nodes: [
          { id: "w", type: "wait", params: { until: "{% input.at %}" } },
          { id: "zero", type: "wait", params: { seconds: 0 } },
        ],
      });
      const at = "2020-01-01T00:00:00Z";
      const { executionId } = await engine.createExecution({ workflow: "wait-until-past", input: { at } });
      expect((await store.getNode(executionId, "w"))?.notBefore).toBeUndefined();
      expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED");
      const view = await engine.describeExecution(executionId);
      expect(view.nodes.find((n) => n.id === "w")?.output).toEqual({ waitedUntil: at });
      expect(view.nodes.find((n) => n.id === "zero")?.output).toEqual({ waitedSeconds: 0 });
    });
  });

  it.each([
    ["seconds", "{% 'soon' %}"],
    ["seconds", "{% -5 %}"],
    ["until", "{% 'yesterday' %}"],
    ["until", "{% '2999-01-01T00:00:00Z' %}"],
  ])(
    "fails a wait whose %s evaluates to %s with a terminal ExpressionError naming it",
    async (param, expression) => {
      await withBackend(kind, async ({ engine, store, consumer }) => {
        await engine.registerWorkflow({
          name: "wait-bad-value",
          nodes: [{ id: "w", type: "wait", params: { [param]: expression } }],
        });
        const { executionId } = await engine.createExecution({ workflow: "wait-bad-value" });
        expect(await runToEnd(engine, consumer, store, executionId)).toBe("FAILED");
        const node = await store.getNode(executionId, "w");
        expect(node?.status).toBe("FAILED");
        expect(node?.attempt).toBe(1);
        expect(node?.error?.name).toBe("ExpressionError");
        expect(node?.error?.message).toContain(`params.${param}`);
      });
    },
  );
});

describe("wait's params at registration", () => {
  const tasks = createTaskRegistry();
  const definition = (params: unknown) => ({ name: "w", nodes: [{ id: "w", type: "wait", params }] });

  it("accepts seconds or until, literal or expression", () => {
    for (const params of [
      { seconds: 5 },
      { seconds: "{% input.delay %}" },
      { until: "2030-01-01T00:00:00Z" },
      { until: "2030-01-01T00:00:00+02:00" },
      { until: "{% input.at %}" },
    ])
      expect(validateDefinition(definition(params), tasks).ok, JSON.stringify(params)).toBe(true);
  });

  it.each([
    [{ until: "yesterday" }, "params.until"],
    [{ seconds: "soon" }, "params.seconds"],
    [{ seconds: 5, until: "2030-01-01T00:00:00Z" }, "params"],
    [{}, "params"],
  ])("refuses %j, naming %s", (params, path) => {
    const result = validateDefinition(definition(params), tasks);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems).toEqual([
      expect.objectContaining({ path: `nodes[0].${path}`, code: "invalid_params" }),
    ]);
  });
});

describe("callback's timing params at registration", () => {
  const tasks = createTaskRegistry();
  const definition = (params: unknown) => ({ name: "c", nodes: [{ id: "c", type: "callback", params }] });

  it("accepts expressions for timeoutSeconds and heartbeatSeconds", () => {
    const result = validateDefinition(
      definition({ timeoutSeconds: "{% input.t %}", heartbeatSeconds: "{% input.h %}" }),
      tasks,
    );
    expect(result.ok, JSON.stringify(result)).toBe(true);
  });

  it.each([
    [{ timeoutSeconds: 0 }, "params.timeoutSeconds"],
    [{ timeoutSeconds: "soon" }, "params.timeoutSeconds"],
    [{ timeoutSeconds: 60, heartbeatSeconds: -1 }, "params.heartbeatSeconds"],
  ])("refuses %j, naming %s", (params, path) => {
    const result = validateDefinition(definition(params), tasks);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems).toEqual([
      expect.objectContaining({ path: `nodes[0].${path}`, code: "invalid_params" }),
    ]);
  });
});

describe("POST /workflows with wait's params", () => {
  it.each([
    [{ until: "yesterday" }, "nodes[0].params.until"],
    [{ seconds: 5, until: "2030-01-01T00:00:00Z" }, "nodes[0].params"],
  ])("answers 400 for %j naming %s, and registers nothing", async (params, path) => {
    const api = createApiFixture();
    const answer = await api.call({
      method: "POST",
      path: "/workflows",
      body: { name: "bad-wait", nodes: [{ id: "w", type: "wait", params }] },
    });
    expect(answer.status).toBe(400);
    const { error } = answer.body as ErrorBody;
    expect(error.code).toBe("InvalidDefinition");
    expect(error.details).toEqual([expect.objectContaining({ path, code: "invalid_params" })]);
    expect((await api.call({ method: "GET", path: "/workflows/bad-wait" })).status).toBe(404);
  });
});
