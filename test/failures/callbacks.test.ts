/**
 * The `callback` type through the real engine on each backend (engine/callbacks.ts): a waiting
 * node settled by its token exactly once, its token published and shown, heartbeats, failures by
 * the caller, and timeouts retried by policy with a new token.
 */
import { describe, expect, it } from "vitest";
import { hasCode } from "../../shared/domain/errors.js";
import type { Engine } from "../../shared/engine/engine.js";
import { BACKEND_KINDS, type Backend, createBackend } from "../support/backends.js";
import { taskOf } from "../support/harness.js";
import { PATIENT, waitForProgress } from "../support/progress.js";

const fastSweep = { firstCheckMs: 0, graceMs: 200, idleMs: 1000 };

async function deliver(backend: Backend): Promise<void> {
  for (;;) {
    const batch = await backend.consumer.receive({
      maxMessages: 10,
      waitSeconds: 0,
      visibilityTimeoutSeconds: 30,
    });
    if (batch.length === 0) return;
    for (const message of batch) {
      await backend.engine.handleTask(taskOf(message), { receiveCount: message.receiveCount });
      await backend.consumer.delete([message.receiptHandle]);
    }
  }
}

/** The token GET /executions/{id} shows for the waiting callback node, once it waits. */
async function tokenOf(backend: Backend, executionId: string, nodeId: string, attempt = 1): Promise<string> {
  return waitForProgress(`node ${nodeId} to wait (attempt ${attempt})`, async () => {
    await deliver(backend);
    await backend.engine.sweep({ force: true });
    const node = (await backend.engine.describeExecution(executionId)).nodes.find((n) => n.id === nodeId);
    return node?.callbackToken && node.attempt === attempt
      ? { done: true, value: node.callbackToken }
      : { done: false, progress: `${node?.status} #${node?.attempt}` };
  });
}

async function settled(engine: Engine, backend: Backend, executionId: string) {
  return waitForProgress("the execution to end", async () => {
    await deliver(backend);
    const view = await engine.describeExecution(executionId);
    return ["SUCCEEDED", "FAILED", "CANCELLED"].includes(view.status)
      ? { done: true, value: view }
      : { done: false, progress: view.status };
  });
}

describe.each(BACKEND_KINDS)("callbacks (%s)", PATIENT, (kind) => {
  async function withBackend(run: (backend: Backend) => Promise<void>) {
    const backend = await createBackend(kind, { sweep: fastSweep });
    try {
      await run(backend);
    } finally {
      await backend.cleanup();
    }
  }

  it("completes the node with the approval's output; a second approval answers 409", async () => {
    await withBackend(async (backend) => {
      const { engine } = backend;
      await engine.registerWorkflow({
        name: "approval",
        nodes: [
          { id: "approve", type: "callback", params: { timeoutSeconds: 3600 } },
          { id: "ship", type: "pass", dependsOn: ["approve"], params: { value: "{% deps.approve.by %}" } },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "approval" });
      const token = await tokenOf(backend, executionId, "approve");
      // Published too, with the token, whatever the definition's `events` say.
      const published = backend.events.find((e) => e.detailType === "Node Waiting For Callback");
      expect(published?.detail).toMatchObject({ executionId, nodeId: "approve", callbackToken: token });
      await engine.heartbeatCallback(token);
      await engine.completeCallback(token, { by: "ana" });
      await expect(engine.completeCallback(token, { by: "bob" })).rejects.toSatisfy((e) =>
        hasCode(e, "Conflict"),
      );
      await expect(engine.failCallback(token, { name: "Rejected", message: "no" })).rejects.toSatisfy((e) =>
        hasCode(e, "Conflict"),
      );
      const view = await settled(engine, backend, executionId);
      expect(view.status).toBe("SUCCEEDED");
      expect(view.output).toEqual({ ship: "ana" });
      expect(view.nodes.find((n) => n.id === "approve")?.callbackToken).toBeUndefined();
    });
  });

  it("a rejection fails the node for good; a malformed token is a 400, a task's token is refused", async () => {
    await withBackend(async (backend) => {
      const { engine } = backend;
      await engine.registerWorkflow({
        name: "rejected",
        nodes: [
          { id: "approve", type: "callback", params: { timeoutSeconds: 3600 }, retry: { maxAttempts: 3 } },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "rejected" });
      const token = await tokenOf(backend, executionId, "approve");
      await expect(engine.completeCallback("nonsense", {})).rejects.toSatisfy((e) =>
        hasCode(e, "BadRequest"),
      );
      await engine.failCallback(token, { name: "Rejected", message: "not this time" });
      const view = await settled(engine, backend, executionId);
      expect(view.status).toBe("FAILED");
      expect(view.nodes[0]).toMatchObject({ status: "FAILED", attempt: 1, error: { name: "Rejected" } });
    });
  });

  it("refuses a callback's token on the task routes and a task's on the callback routes (WrongTokenKind), changing nothing", async () => {
    await withBackend(async (backend) => {
      const { engine, store } = backend;
      await engine.registerWorkflow({
        name: "two-kinds",
        nodes: [
          { id: "approve", type: "callback", params: { timeoutSeconds: 3600 } },
          { id: "gpu", type: "transcode", runsOn: { pool: "render" }, heartbeatSeconds: 5 },
        ],
      });
      const { workerId } = await engine.registerWorker({
        workerId: `w-${kind}`,
        pool: "render",
        executors: [],
        capabilities: {},
        labels: [],
        maxParallel: 1,
      });
      const { executionId } = await engine.createExecution({ workflow: "two-kinds" });
      const token = await tokenOf(backend, executionId, "approve");
      const task = await waitForProgress("the external task to be taken", async () => {
        await deliver(backend);
        const taken = await engine.pollTask(workerId, { waitSeconds: 0 });
        return taken ? { done: true, value: taken } : { done: false, progress: "not offered yet" };
      });
      const before = {
        approve: await store.getNode(executionId, "approve"),
        gpu: await store.getNode(executionId, "gpu"),
        history: (await engine.listEvents(executionId, { limit: 1000 })).events.length,
      };
      const refused = (route: string, kind: string, use: string) => (error: unknown) =>
        hasCode(error, "WrongTokenKind") &&
        error.message.includes(`this is a ${kind} token`) &&
        error.message.includes(route) &&
        error.message.includes(use);
      const error = { name: "Rejected", message: "no" };
      // A callback's token on /tasks/*: before, the heartbeat failed the waiting callback early
      // (the node's timeout, not the callback's) and complete/fail settled it.
      await expect(engine.heartbeatTask(token)).rejects.toSatisfy(
        refused("/tasks/heartbeat", "callback", "POST /callbacks/heartbeat"),
      );
      await expect(engine.completeTask(token, { by: "mallory" })).rejects.toSatisfy(
        refused("/tasks/complete", "callback", "POST /callbacks/complete"),
      );
      await expect(engine.failTask(token, error)).rejects.toSatisfy(
        refused("/tasks/fail", "callback", "POST /callbacks/fail"),
      );
      // A task's token on /callbacks/*.
      await expect(engine.heartbeatCallback(task.taskToken)).rejects.toSatisfy(
        refused("/callbacks/heartbeat", "task", "POST /tasks/heartbeat"),
      );
      await expect(engine.completeCallback(task.taskToken, {})).rejects.toSatisfy(
        refused("/callbacks/complete", "task", "POST /tasks/complete"),
      );
      await expect(engine.failCallback(task.taskToken, error)).rejects.toSatisfy(
        refused("/callbacks/fail", "task", "POST /tasks/fail"),
      );
      // Nothing changed: both attempts as they were (status, lease, version), no history added.
      expect(await store.getNode(executionId, "approve")).toEqual(before.approve);
      expect(await store.getNode(executionId, "gpu")).toEqual(before.gpu);
      expect((await engine.listEvents(executionId, { limit: 1000 })).events.length).toBe(before.history);
      // Each token still works where it belongs.
      expect(await engine.heartbeatTask(task.taskToken)).toEqual({ cancelRequested: false });
      await engine.completeTask(task.taskToken, { frames: 24 });
      await engine.heartbeatCallback(token);
      await engine.completeCallback(token, { by: "ana" });
      const view = await settled(engine, backend, executionId);
      expect(view.status).toBe("SUCCEEDED");
      expect(view.nodes.find((n) => n.id === "approve")).toMatchObject({ attempt: 1, output: { by: "ana" } });
      expect(view.nodes.find((n) => n.id === "gpu")).toMatchObject({ attempt: 1, output: { frames: 24 } });
    });
  });

  it("times out per its retry policy: a new wait with a new token, then CallbackTimedOut", async () => {
    await withBackend(async (backend) => {
      const { engine } = backend;
      await engine.registerWorkflow({
        name: "forgotten",
        nodes: [
          {
            id: "approve",
            type: "callback",
            params: { timeoutSeconds: 1 },
            retry: { maxAttempts: 2, backoff: { initialSeconds: 0 } },
          },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "forgotten" });
      const first = await tokenOf(backend, executionId, "approve", 1);
      const second = await tokenOf(backend, executionId, "approve", 2);
      expect(second).not.toBe(first);
      await expect(engine.completeCallback(first, "too late")).rejects.toSatisfy((e) =>
        hasCode(e, "Conflict"),
      );
      const view = await waitForProgress("the second timeout", async () => {
        // The callback's own message at its deadline times it out (engine/callbacks.ts).
        await deliver(backend);
        await engine.sweep({ force: true });
        const v = await engine.describeExecution(executionId);
        return v.status === "FAILED" ? { done: true, value: v } : { done: false, progress: v.status };
      });
      expect(view.nodes[0]).toMatchObject({
        status: "FAILED",
        attempt: 2,
        error: { name: "CallbackTimedOut" },
      });
    });
  });

  it("a callback that asks for heartbeats times out without them, even long before its timeout", async () => {
    await withBackend(async (backend) => {
      const { engine } = backend;
      await engine.registerWorkflow({
        name: "silent",
        nodes: [
          {
            id: "approve",
            type: "callback",
            params: { timeoutSeconds: 3600, heartbeatSeconds: 1 },
            retry: { maxAttempts: 1 },
          },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "silent" });
      await tokenOf(backend, executionId, "approve");
      const view = await waitForProgress("the missed heartbeat", async () => {
        // The callback's own message at its deadline times it out (engine/callbacks.ts).
        await deliver(backend);
        await engine.sweep({ force: true });
        const v = await engine.describeExecution(executionId);
        return v.status === "FAILED" ? { done: true, value: v } : { done: false, progress: v.status };
      });
      expect(view.nodes[0]?.error).toMatchObject({ name: "CallbackTimedOut" });
      expect(view.nodes[0]?.error?.message).toContain("heartbeat");
    });
  });
  it("takes timeoutSeconds and heartbeatSeconds from expressions, evaluated when it starts waiting", async () => {
    await withBackend(async (backend) => {
      const { engine, store } = backend;
      await engine.registerWorkflow({
        name: "computed-timeout",
        nodes: [
          {
            id: "approve",
            type: "callback",
            params: { timeoutSeconds: "{% input.timeout %}", heartbeatSeconds: "{% input.timeout * 2 %}" },
            retry: { maxAttempts: 1 },
          },
        ],
      });
      const { executionId } = await engine.createExecution({
        workflow: "computed-timeout",
        input: { timeout: 1 },
      });
      await tokenOf(backend, executionId, "approve");
      const state = (await store.getNode(executionId, "approve"))?.composite;
      expect(state).toMatchObject({ kind: "callback", heartbeatSeconds: 2 });
      if (state?.kind !== "callback") throw new Error("not waiting for its callback");
      expect(state.deadline - state.heartbeatAt).toBe(1000);
      const view = await waitForProgress("the computed timeout", async () => {
        await deliver(backend);
        await engine.sweep({ force: true });
        const v = await engine.describeExecution(executionId);
        return v.status === "FAILED" ? { done: true, value: v } : { done: false, progress: v.status };
      });
      expect(view.nodes[0]?.error).toMatchObject({ name: "CallbackTimedOut" });
    });
  });

  it.each([
    ["timeoutSeconds", { timeoutSeconds: "{% 'soon' %}" }],
    ["timeoutSeconds", { timeoutSeconds: "{% 0 %}" }],
    ["heartbeatSeconds", { timeoutSeconds: 3600, heartbeatSeconds: "{% 'often' %}" }],
  ])(
    "fails a callback whose %s evaluates to nonsense with a terminal ExpressionError naming it",
    async (param, params) => {
      await withBackend(async (backend) => {
        const { engine } = backend;
        await engine.registerWorkflow({
          name: "nonsense-timeout",
          nodes: [{ id: "approve", type: "callback", params, retry: { maxAttempts: 3 } }],
        });
        const { executionId } = await engine.createExecution({ workflow: "nonsense-timeout" });
        const view = await settled(engine, backend, executionId);
        expect(view.status).toBe("FAILED");
        expect(view.nodes[0]).toMatchObject({
          status: "FAILED",
          attempt: 1,
          error: { name: "ExpressionError" },
        });
        expect(view.nodes[0]?.error?.message).toContain(`params.${param}`);
      });
    },
  );
});
