/**
 * End to end through the local runtime: HTTP → API Gateway v2 events → api handler → engine, and
 * queue → SQS batches → worker handler, on the embedded backend and on DynamoDB + SQS (emulator).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalRuntime } from "../../local/runtime.js";
import { BACKEND_KINDS } from "../support/backends.js";
import { PATIENT } from "../support/progress.js";
import { type ApiClient, apiClient, type JsonBody, startRuntime } from "../support/runtime.js";

const node = (view: { nodes: Array<{ id: string }> }, id: string): JsonBody =>
  view.nodes.find((n) => n.id === id);

describe.each(BACKEND_KINDS)("workflows end to end over HTTP (%s)", PATIENT, (kind) => {
  let runtime: LocalRuntime;
  let api: ApiClient;

  beforeAll(async () => {
    runtime = await startRuntime(kind, { concurrency: 4 });
    api = apiClient(runtime.url);
  });
  afterAll(async () => {
    await runtime?.stop();
  });

  async function run(definition: unknown, input?: unknown) {
    const registered = await api.call("POST", "/workflows", definition);
    expect([200, 201]).toContain(registered.status);
    const started = await api.call("POST", "/executions", {
      workflow: (definition as { name: string }).name,
      input,
    });
    expect(started.status).toBe(202);
    expect(started.body.status).toBe("RUNNING");
    return api.waitForEnd(started.body.executionId);
  }

  it("runs a chain A → B → C, each seeing its dependency's output", async () => {
    const view = await run(
      {
        name: `chain-${kind}`,
        nodes: [
          { id: "a", type: "pass", params: { value: { n: 1 } } },
          { id: "b", type: "merge", dependsOn: ["a"] },
          { id: "c", type: "merge", dependsOn: ["b"] },
        ],
      },
      { ignored: true },
    );
    expect(view.status).toBe("SUCCEEDED");
    expect(view.output).toEqual({ c: { b: { a: { n: 1 } } } });
    expect(view.nodes.map((n) => [n.id, n.status, n.attempt])).toEqual([
      ["a", "COMPLETED", 1],
      ["b", "COMPLETED", 1],
      ["c", "COMPLETED", 1],
    ]);
  });

  it("runs a diamond A → (B, C) → D where D sees both outputs", async () => {
    const view = await run(
      {
        name: `diamond-${kind}`,
        nodes: [
          { id: "a", type: "pass" },
          { id: "b", type: "pass", dependsOn: ["a"], params: { value: "from b" } },
          { id: "c", type: "pass", dependsOn: ["a"], params: { value: "from c" } },
          { id: "d", type: "merge", dependsOn: ["b", "c"] },
        ],
      },
      { order: 7 },
    );
    expect(view.status).toBe("SUCCEEDED");
    expect(node(view, "a").output).toEqual({ order: 7 });
    expect(view.output).toEqual({ d: { b: "from b", c: "from c" } });
  });

  it("starts an `any` fan-in on the first of three dependencies", async () => {
    const view = await run({
      name: `any-${kind}`,
      nodes: [
        { id: "fast", type: "pass", params: { value: "first" } },
        { id: "slow1", type: "sleep", params: { ms: 1500 } },
        { id: "slow2", type: "sleep", params: { ms: 1500 } },
        { id: "first", type: "merge", dependsOn: ["fast", "slow1", "slow2"], fanIn: "any" },
        // Sinks after the slow branches keep the execution open until they finish.
        { id: "tail1", type: "noop", dependsOn: ["slow1"] },
        { id: "tail2", type: "noop", dependsOn: ["slow2"] },
      ],
    });
    expect(view.status).toBe("SUCCEEDED");
    expect(node(view, "first").output).toEqual({ fast: "first" });
    // Causal, not timed: `first` finished before either slow dependency did.
    expect(Date.parse(node(view, "first").finishedAt)).toBeLessThanOrEqual(
      Date.parse(node(view, "slow1").finishedAt),
    );
    expect(Date.parse(node(view, "first").finishedAt)).toBeLessThanOrEqual(
      Date.parse(node(view, "slow2").finishedAt),
    );
  });

  it("starts a `count:2` fan-in of three before the slowest finishes", async () => {
    const view = await run({
      name: `count-${kind}`,
      nodes: [
        { id: "a", type: "pass", params: { value: "A" } },
        { id: "b", type: "pass", params: { value: "B" } },
        { id: "slow", type: "sleep", params: { ms: 1500 } },
        { id: "two", type: "merge", dependsOn: ["a", "b", "slow"], fanIn: "count:2" },
        { id: "after-slow", type: "noop", dependsOn: ["slow"] },
      ],
    });
    expect(view.status).toBe("SUCCEEDED");
    expect(node(view, "two").output).toEqual({ a: "A", b: "B" });
    expect(Date.parse(node(view, "two").startedAt)).toBeLessThan(Date.parse(node(view, "slow").finishedAt));
    expect(view.output).toEqual({ two: { a: "A", b: "B" }, "after-slow": null });
  });

  it("creates PENDING, triggers with input, and answers 409 to a second trigger", async () => {
    const name = `two-step-${kind}`;
    await api.call("POST", "/workflows", { name, nodes: [{ id: "echo", type: "pass" }] });
    const created = await api.call("POST", "/executions", { workflow: name, start: false });
    expect(created.status).toBe(202);
    expect(created.body.status).toBe("PENDING");
    const id = created.body.executionId;

    const pending = await api.call("GET", `/executions/${id}`);
    expect(pending.body.status).toBe("PENDING");
    expect(pending.body.nodes).toEqual([{ id: "echo", type: "pass", status: "PENDING", attempt: 0 }]);

    const triggered = await api.call("POST", `/executions/${id}/trigger`, { input: { late: "input" } });
    expect(triggered.status).toBe(202);
    const done = await api.waitForEnd(id);
    expect(done.status).toBe("SUCCEEDED");
    expect(done.output).toEqual({ echo: { late: "input" } });

    const again = await api.call("POST", `/executions/${id}/trigger`, {});
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe("Conflict");
    expect(again.body.error.message).toContain("SUCCEEDED");
  });

  it("returns the same execution for the same idempotencyKey and request; per workflow; 409 for another input", async () => {
    const name = `idem-${kind}`;
    const other = `idem-other-${kind}`;
    for (const workflow of [name, other])
      await api.call("POST", "/workflows", { name: workflow, nodes: [{ id: "only", type: "noop" }] });
    const key = `order-${Math.random()}`;
    const first = await api.call("POST", "/executions", { workflow: name, idempotencyKey: key, input: 1 });
    const second = await api.call("POST", "/executions", { workflow: name, idempotencyKey: key, input: 1 });
    expect(first.status).toBe(202);
    expect(second.status).toBe(200);
    expect(second.body.executionId).toBe(first.body.executionId);

    const conflict = await api.call("POST", "/executions", { workflow: name, idempotencyKey: key, input: 2 });
    expect(conflict.status).toBe(409);
    expect(conflict.body.error.code).toBe("IdempotencyKeyConflict");
    expect(conflict.body.error.message).toContain(first.body.executionId);

    const elsewhere = await api.call("POST", "/executions", {
      workflow: other,
      idempotencyKey: key,
      input: 2,
    });
    expect(elsewhere.status).toBe(202);
    expect(elsewhere.body.executionId).not.toBe(first.body.executionId);

    const view = await api.waitForEnd(first.body.executionId);
    expect(view.input).toBe(1);
    expect((await api.waitForEnd(elsewhere.body.executionId)).input).toBe(2);
    const listed = await api.call("GET", `/executions?workflow=${name}`);
    expect(listed.body.executions.map((e: { executionId: string }) => e.executionId)).toEqual([
      first.body.executionId,
    ]);
  });

  it("versions definitions by content: same content 200 with the same version, new content the next", async () => {
    const name = `versions-${kind}`;
    const v1 = { name, nodes: [{ id: "a", type: "noop" }] };
    const first = await api.call("POST", "/workflows", v1);
    const same = await api.call("POST", "/workflows", { nodes: v1.nodes, name }); // key order differs
    const next = await api.call("POST", "/workflows", { name, nodes: [{ id: "b", type: "noop" }] });
    expect(first.status).toBe(201);
    expect(same.status).toBe(200);
    expect(same.body).toEqual(first.body);
    expect(next.status).toBe(201);
    expect(next.body.version).toBe(first.body.version + 1);
    const latest = await api.call("GET", `/workflows/${name}`);
    expect(latest.body.version).toBe(next.body.version);
    const old = await api.call("GET", `/workflows/${name}?version=${first.body.version}`);
    expect(old.body.definition.nodes).toEqual(v1.nodes);
  });

  it("answers bad input with the right codes and changes nothing", async () => {
    const malformed = await api.raw("POST", "/workflows", '{"name": "x", ');
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe("InvalidJson");

    const invalid = await api.call("POST", "/workflows", {
      name: `broken-${kind}`,
      nodes: [
        { id: "a", type: "noop", dependsOn: ["b"] },
        { id: "b", type: "noop", dependsOn: ["a"] },
        { id: "c", type: "teleport", dependsOn: ["ghost"] },
        { id: "c", type: "sleep", params: { ms: "soon" } },
      ],
    });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error.code).toBe("InvalidDefinition");
    const codes = invalid.body.error.details.map((d: { code: string }) => d.code);
    for (const code of [
      "cycle",
      "unknown_task_type",
      "unknown_dependency",
      "duplicate_id",
      "invalid_params",
    ]) {
      expect(codes).toContain(code);
    }
    expect((await api.call("GET", `/workflows/broken-${kind}`)).status).toBe(404);

    const unknown = await api.call("GET", "/executions/does-not-exist");
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe("NotFound");

    const noWorkflow = await api.call("POST", "/executions", { workflow: "never-registered" });
    expect(noWorkflow.status).toBe(404);
    const badBody = await api.call("POST", "/executions", { workflow: 42, start: "yes" });
    expect(badBody.status).toBe(400);
    expect(badBody.body.error.details.length).toBeGreaterThanOrEqual(2);
  });
});
