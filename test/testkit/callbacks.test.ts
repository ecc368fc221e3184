/**
 * Callbacks settled from the test: the token of a waiting node, completing and failing it, and the
 * clear error of a run that would otherwise only end by the callback's timeout.
 */
import { afterAll, describe, expect, it } from "vitest";
import { createTestRuntime, ExecutionWaitingError, type WorkflowDefinition } from "../../sdk/testing.js";

const weft = await createTestRuntime();
afterAll(() => weft.close());

const approval: WorkflowDefinition = {
  name: "approval",
  nodes: [
    { id: "request", type: "pass", params: { value: { amount: 120 } } },
    {
      id: "approve",
      type: "callback",
      dependsOn: ["request"],
      params: { timeoutSeconds: 3600 },
      retry: { maxAttempts: 1 },
    },
    {
      id: "record",
      type: "pass",
      dependsOn: ["approve"],
      params: { value: { approvedBy: "{% deps.approve.by %}" } },
    },
  ],
};

describe("callbacks", () => {
  it("completes a waiting callback from the test", async () => {
    const id = await weft.start(approval);
    const token = await weft.callbacks.waitFor(id, "approve");
    expect(token).toMatch(/^wt1\./);
    // The same token is on the node while it waits.
    expect((await weft.execution(id)).nodes.approve).toMatchObject({
      status: "RUNNING",
      callbackToken: token,
    });

    await weft.callbacks.complete(token, { by: "grace" });
    const run = await weft.runToEnd(id);
    expect(run.status).toBe("SUCCEEDED");
    expect(run.nodes.approve?.output).toEqual({ by: "grace" });
    expect(run.output).toEqual({ record: { approvedBy: "grace" } });
  });

  it("fails a waiting callback from the test", async () => {
    const id = await weft.start(approval);
    const token = await weft.callbacks.waitFor(id);
    await weft.callbacks.fail(token, { name: "Rejected", message: "over budget" });
    const run = await weft.runToEnd(id);
    expect(run.status).toBe("FAILED");
    expect(run.nodes.approve?.error).toMatchObject({ name: "Rejected", message: "over budget" });
  });

  it("says what the execution waits on instead of letting the timeout fire", async () => {
    const id = await weft.start(approval);
    const error = await weft.runToEnd(id).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExecutionWaitingError);
    const waiting = error as ExecutionWaitingError;
    expect(waiting.message).toContain(`execution ${id}`);
    expect(waiting.message).toContain('node "approve" (callback, RUNNING, attempt 1) waits for its callback');
    expect(waiting.run.status).toBe("RUNNING");
    const approve = waiting.waiting.find((node) => node.nodeId === "approve");
    expect(approve?.callbackToken).toBe(waiting.run.nodes.approve?.callbackToken);

    // Settled late, it still goes on.
    await weft.callbacks.complete(approve?.callbackToken ?? "", { by: "ada" });
    expect((await weft.runToEnd(id)).output).toEqual({ record: { approvedBy: "ada" } });
  });

  it("times the callback out when the test lets the time pass", async () => {
    const id = await weft.start(approval);
    await weft.callbacks.waitFor(id, "approve");
    await weft.clock.advance(3600_000 + 60_000);
    const run = await weft.runToEnd(id);
    expect(run.status).toBe("FAILED");
    expect(run.nodes.approve?.error).toMatchObject({ name: "CallbackTimedOut" });
  });

  it("refuses a token twice", async () => {
    const id = await weft.start(approval);
    const token = await weft.callbacks.waitFor(id, "approve");
    await weft.callbacks.complete(token, { by: "once" });
    await expect(weft.callbacks.complete(token, { by: "twice" })).rejects.toThrow();
    expect((await weft.runToEnd(id)).status).toBe("SUCCEEDED");
  });

  it("finds a callback waiting in a child execution", async () => {
    await weft.register({
      name: "ask-a-person",
      nodes: [{ id: "ask", type: "callback", params: { timeoutSeconds: 600 } }],
    });
    const id = await weft.start({
      name: "delegating",
      nodes: [{ id: "delegate", type: "workflow", params: { name: "ask-a-person" } }],
    });
    const token = await weft.callbacks.waitFor(id, "ask");
    const error = await weft.runToEnd(id).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExecutionWaitingError);
    expect((error as Error).message).toMatch(/node "ask" of child execution \S+ \(callback, RUNNING/);
    await weft.callbacks.complete(token, { answer: 42 });
    expect((await weft.runToEnd(id)).output).toEqual({ delegate: { ask: { answer: 42 } } });
  });

  it("says so when the execution ends before the callback waits", async () => {
    const id = await weft.start({ name: "no-callback", nodes: [{ id: "only", type: "pass" }] });
    await expect(weft.callbacks.waitFor(id, "approve")).rejects.toThrow(
      /ended SUCCEEDED before node "approve" waited for its callback/,
    );
  });
});
