/**
 * The `workflow` type end to end through the local runtime, on the embedded backend and on DynamoDB
 * + SQS (emulator): a parent waiting for its child, the links between them, a failed child retried
 * as a new child, cancellation reaching the child, the depth limit, and the registration warning.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalRuntime } from "../../local/runtime.js";
import { HISTORY } from "../../shared/engine/lifecycle.js";
import { BACKEND_KINDS } from "../support/backends.js";
import { PATIENT, waitForProgress } from "../support/progress.js";
import { type ApiClient, apiClient, nodeOf, startRuntime } from "../support/runtime.js";

describe.each(BACKEND_KINDS)("child workflows end to end (%s)", PATIENT, (kind) => {
  let runtime: LocalRuntime;
  let api: ApiClient;

  beforeAll(async () => {
    runtime = await startRuntime(kind, { concurrency: 4 });
    api = apiClient(runtime.url);
  });
  afterAll(async () => {
    await runtime?.stop();
  });

  const node = nodeOf;

  it("waits for a child execution and completes with its output; parent and child are linked", async () => {
    await api.register({
      name: `double-${kind}`,
      nodes: [{ id: "double", type: "pass", params: { value: "{% input.n * 2 %}" } }],
    });
    await api.register({
      name: `parent-${kind}`,
      nodes: [
        { id: "call", type: "workflow", params: { name: `double-${kind}`, input: { n: "{% input.n %}" } } },
        { id: "after", type: "pass", dependsOn: ["call"], params: { value: "{% deps.call.double + 1 %}" } },
      ],
    });
    const parentId = await api.start(`parent-${kind}`, { n: 20 });
    const parent = await api.waitForEnd(parentId);
    expect(parent.status).toBe("SUCCEEDED");
    expect(parent.output).toEqual({ after: 41 });
    const call = node(parent, "call");
    expect(call).toMatchObject({ status: "COMPLETED", output: { double: 40 } });
    const child = (await api.call("GET", `/executions/${call.childExecutionId}`)).body;
    expect(child).toMatchObject({ status: "SUCCEEDED", parent: { executionId: parentId, nodeId: "call" } });
  });

  it("retries a failed child as a new child, then fails with ChildWorkflowFailed", async () => {
    await api.register({
      name: `broken-${kind}`,
      nodes: [{ id: "boom", type: "fail", params: { message: "out of stock", retryable: false } }],
    });
    await api.register({
      name: `caller-${kind}`,
      nodes: [
        {
          id: "call",
          type: "workflow",
          params: { name: `broken-${kind}` },
          retry: { maxAttempts: 2, backoff: { initialSeconds: 0, jitter: "none" } },
        },
      ],
    });
    const parentId = await api.start(`caller-${kind}`);
    const parent = await api.waitForEnd(parentId);
    expect(parent.status).toBe("FAILED");
    expect(node(parent, "call")).toMatchObject({
      status: "FAILED",
      attempt: 2,
      error: { name: "ChildWorkflowFailed" },
    });
    expect(node(parent, "call").error.message).toContain("out of stock");
    const events = (await api.call("GET", `/executions/${parentId}/events?limit=100`)).body.events;
    const children = events
      .filter((e: { type: string }) => e.type === HISTORY.childStarted)
      .map((e: { detail: { childExecutionId: string } }) => e.detail.childExecutionId);
    expect(new Set(children).size).toBe(2);
  });

  it("cancelling the parent cancels the child", async () => {
    await api.register({
      name: `slow-${kind}`,
      nodes: [{ id: "nap", type: "sleep", params: { ms: 120_000 } }],
    });
    await api.register({
      name: `waits-${kind}`,
      nodes: [{ id: "call", type: "workflow", params: { name: `slow-${kind}` } }],
    });
    const parentId = await api.start(`waits-${kind}`);
    const childId = await waitForProgress("the child to start", async () => {
      const view = (await api.call("GET", `/executions/${parentId}`)).body;
      const id = node(view, "call")?.childExecutionId;
      return id ? { done: true, value: id as string } : { done: false, progress: node(view, "call")?.status };
    });
    expect((await api.call("POST", `/executions/${parentId}/cancel`, {})).status).toBe(202);
    expect((await api.waitForEnd(parentId)).status).toBe("CANCELLED");
    const child = await api.waitForEnd(childId);
    expect(child.status).toBe("CANCELLED");
  });

  it("refuses to nest deeper than 8: the deepest start fails with WorkflowDepthExceeded", async () => {
    await api.register({
      name: `recursive-${kind}`,
      nodes: [
        {
          id: "again",
          type: "workflow",
          params: { name: `recursive-${kind}` },
          retry: { maxAttempts: 1 },
        },
      ],
    });
    const topId = await api.start(`recursive-${kind}`);
    const top = await api.waitForEnd(topId);
    expect(top.status).toBe("FAILED");
    // Walk down the chain of children to the deepest: 8 levels below the top, it could not start one.
    let view = top;
    let depth = 0;
    while (node(view, "again")?.childExecutionId) {
      view = await api.waitForEnd(node(view, "again").childExecutionId);
      depth++;
    }
    expect(depth).toBe(8);
    expect(node(view, "again").error).toMatchObject({ name: "WorkflowDepthExceeded" });
  });

  it("maps over a workflow: one child execution per item, outputs in item order", async () => {
    await api.register({
      name: `square-${kind}`,
      nodes: [{ id: "sq", type: "pass", params: { value: "{% input * input %}" } }],
    });
    await api.register({
      name: `squares-${kind}`,
      nodes: [
        {
          id: "each",
          type: "map",
          params: { items: "{% input.numbers %}", workflow: { name: `square-${kind}` }, maxConcurrency: 3 },
        },
      ],
    });
    const view = await api.waitForEnd(await api.start(`squares-${kind}`, { numbers: [1, 2, 3, 4, 5, 6, 7] }));
    expect(view.status).toBe("SUCCEEDED");
    expect(view.output).toEqual({ each: [1, 4, 9, 16, 25, 36, 49].map((sq) => ({ sq })) });
  });

  it("warns, but registers, a workflow node naming a workflow that is not registered", async () => {
    const registered = await api.register({
      name: `forward-${kind}`,
      nodes: [{ id: "call", type: "workflow", params: { name: `not-yet-${kind}` } }],
    });
    expect(registered.warnings).toEqual([
      expect.objectContaining({ path: "nodes[0].params.name", code: "unknown_workflow" }),
    ]);
    const failed = await api.waitForEnd(await api.start(`forward-${kind}`));
    expect(node(failed, "call")).toMatchObject({ status: "FAILED", error: { name: "WorkflowNotFound" } });
  });
});
