/**
 * Failure semantics, through the real engine on each backend: retries with backoff, terminal
 * errors, poison messages dead-lettered by the queue and redriven, node timeouts.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { HISTORY } from "../../shared/engine/lifecycle.js";
import { defineTask } from "../../shared/tasks/task-type.js";
import { BACKEND_KINDS, createBackend } from "../support/backends.js";
import { carriesClaim, interceptCalls, interceptTransitions, latch, sleep } from "../support/faults.js";
import { collectTask, countEvents, receiveAll, runToEnd, taskOf } from "../support/harness.js";
import { PATIENT } from "../support/progress.js";

/** Throws, on attempt n, an error named `names[n - 1]` (with `code` when the name is "Error:<code>"); succeeds after. */
const throwsNamed = defineTask({
  type: "throws-named",
  params: z.object({ names: z.array(z.string()) }).strict(),
  run: ({ params, context: { attempt } }) => {
    const name = params.names[attempt - 1];
    if (name === undefined) return { attempt };
    const [base, code] = name.split(":");
    throw Object.assign(new Error(`attempt ${attempt} failed`), { name: base }, code ? { code } : {});
  },
});

describe.each(BACKEND_KINDS)("retries and dead letters (%s)", PATIENT, (kind) => {
  it("retriers: the first that matches decides with its own attempts; an error none matches is not retried", async () => {
    const backend = await createBackend(kind, { tasks: [throwsNamed] });
    try {
      const { engine, store, consumer } = backend;
      const backoff = { initialSeconds: 0.05, jitter: "none" as const };
      await engine.registerWorkflow({
        name: "retriers",
        nodes: [
          // Throttled four times, then through: within the first retrier's 6 attempts.
          {
            id: "throttled",
            type: "throws-named",
            params: { names: ["Throttled", "Throttled", "Throttled", "Throttled"] },
            retry: [
              { errors: ["Throttled", "Error:ECONNRESET"], maxAttempts: 6, backoff },
              { errors: ["*"], maxAttempts: 2, backoff },
            ],
          },
          // Any other error gets the second retrier's 2 attempts in all.
          {
            id: "other",
            type: "throws-named",
            params: { names: ["Boom", "Boom", "Boom"] },
            retry: [
              { errors: ["Throttled"], maxAttempts: 6, backoff },
              { errors: ["*"], maxAttempts: 2, backoff },
            ],
            onError: "continue",
          },
          // An allow-list: a business error it does not list is not retried (and is a dead letter).
          {
            id: "business",
            type: "throws-named",
            params: { names: ["CardDeclined"] },
            retry: { retryOn: ["Throttled"], maxAttempts: 5, backoff },
            onError: "continue",
          },
          // The code of a Node error matches as a name does.
          {
            id: "reset",
            type: "throws-named",
            params: { names: ["Error:ECONNRESET"] },
            retry: [{ errors: ["ECONNRESET"], maxAttempts: 2, backoff }],
          },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "retriers" });
      expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED");
      const view = await engine.describeExecution(executionId);
      const byId = Object.fromEntries(view.nodes.map((n) => [n.id, n]));
      expect(byId.throttled).toMatchObject({ status: "COMPLETED", attempt: 5 });
      expect(byId.other).toMatchObject({ status: "FAILED", attempt: 2, error: { name: "Boom" } });
      expect(byId.business).toMatchObject({ status: "FAILED", attempt: 1, error: { name: "CardDeclined" } });
      expect(byId.reset).toMatchObject({ status: "COMPLETED", attempt: 2 });
      const history = await store.listHistory(executionId);
      const retried = (nodeId: string) =>
        history.filter((e) => e.type === HISTORY.nodeRetryScheduled && e.nodeId === nodeId).length;
      expect([retried("throttled"), retried("other"), retried("business"), retried("reset")]).toEqual([
        4, 1, 0, 1,
      ]);
      const failed = history.find((e) => e.type === HISTORY.nodeFailed && e.nodeId === "business");
      expect(failed?.detail?.error).toMatchObject({ name: "CardDeclined", retryable: false });
    } finally {
      await backend.cleanup();
    }
  });

  it("retries `fail` with times: 2 and succeeds on attempt 3, with delays that follow the policy", async () => {
    const backend = await createBackend(kind);
    try {
      const { engine, store, consumer } = backend;
      await engine.registerWorkflow({
        name: "flaky",
        nodes: [
          {
            id: "pay",
            type: "fail",
            params: { times: 2, message: "card network busy" },
            retry: {
              maxAttempts: 5,
              backoff: { initialSeconds: 0.2, multiplier: 3, maxSeconds: 10, jitter: "none" },
            },
          },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "flaky" });
      expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED");

      const view = await engine.describeExecution(executionId);
      expect(view.nodes[0]).toMatchObject({ status: "COMPLETED", attempt: 3, output: { attempt: 3 } });
      const history = await store.listHistory(executionId);
      const retries = history.filter((e) => e.type === HISTORY.nodeRetryScheduled);
      expect(retries.map((e) => [e.attempt, e.detail?.delayMs])).toEqual([
        [2, 200],
        [3, 600],
      ]);
      expect(retries[0]?.detail?.error).toMatchObject({
        name: "RetryableError",
        message: "card network busy",
      });
      // The retried attempt did not start before its delay had passed.
      const started = history.filter((e) => e.type === HISTORY.nodeStarted);
      expect(started.map((e) => e.attempt)).toEqual([1, 2, 3]);
      expect(started[1]!.at - retries[0]!.at).toBeGreaterThanOrEqual(200);
      expect(started[2]!.at - retries[1]!.at).toBeGreaterThanOrEqual(600);
    } finally {
      await backend.cleanup();
    }
  });

  it("fails a terminal error at once, with no retry, records a dead letter, and stops running work", async () => {
    const backend = await createBackend(kind, { leaseSeconds: 1 });
    try {
      const { engine, store, consumer } = backend;
      await engine.registerWorkflow({
        name: "terminal",
        nodes: [
          { id: "validate", type: "fail", params: { retryable: false, message: "order has no lines" } },
          { id: "ship", type: "noop", dependsOn: ["validate"] },
          { id: "other", type: "sleep", params: { ms: 60_000 } },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "terminal" });
      expect(await runToEnd(engine, consumer, store, executionId)).toBe("FAILED");

      const view = await engine.describeExecution(executionId);
      const byId = Object.fromEntries(view.nodes.map((n) => [n.id, n]));
      expect(byId.validate).toMatchObject({ status: "FAILED", attempt: 1, error: { name: "TerminalError" } });
      expect(byId.ship?.status).toBe("CANCELLED");
      expect(byId.other?.status).toBe("CANCELLED"); // was running: told to stop through its heartbeat
      expect(view.error?.message).toContain('node "validate" failed: order has no lines');
      const history = await store.listHistory(executionId);
      expect(countEvents(history, HISTORY.nodeRetryScheduled)).toBe(0);

      const { items } = await engine.listDeadLetters({ limit: 10 });
      expect(items).toHaveLength(1);
      expect(items[0]).toMatchObject({
        executionId,
        nodeId: "validate",
        attempt: 1,
        reason: "terminal",
        error: { name: "TerminalError", message: "order has no lines" },
      });
      expect(backend.events.map((e) => e.detailType)).toEqual(["Execution Started", "Execution Failed"]);
    } finally {
      await backend.cleanup();
    }
  });

  it("dead-letters a poison message after maxReceiveCount, fails the execution, and redrive finishes it keeping earlier outputs", async () => {
    let poisoned = true;
    const backend = await createBackend(kind, {
      maxReceiveCount: 3,
      // The claim of node "load" crashes the worker every time while the fault is on.
      wrapStore: (store) =>
        interceptTransitions(store, (call, proceed) =>
          poisoned && call.nodeId === "load" && carriesClaim(call)
            ? Promise.reject(new Error("worker crashed"))
            : proceed(),
        ),
    });
    try {
      const { engine, store, consumer, deadLetterConsumer } = backend;
      await engine.registerWorkflow({
        name: "etl",
        nodes: [
          { id: "extract", type: "pass", params: { value: { rows: 42 } } },
          { id: "load", type: "pass", dependsOn: ["extract"] },
          { id: "report", type: "pass", dependsOn: ["extract"], params: { value: "reported" } },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "etl", input: "in" });

      // Deliver until the queue gives up on the poison message (as the Lambda event source would).
      for (let round = 0; round < 40; round++) {
        const messages = await consumer.receive({
          maxMessages: 10,
          waitSeconds: 0,
          visibilityTimeoutSeconds: 1,
        });
        for (const message of messages) {
          try {
            await engine.handleTask(taskOf(message), { receiveCount: message.receiveCount });
            await consumer.delete([message.receiptHandle]);
          } catch {
            await consumer.changeVisibility(message.receiptHandle, 0);
          }
        }
        const [dead] = await receiveAll(deadLetterConsumer, 1, 200);
        if (dead) {
          await engine.recordDeadLetter(taskOf(dead), {
            messageId: dead.messageId,
            receiveCount: dead.receiveCount,
          });
          await deadLetterConsumer.delete([dead.receiptHandle]);
          break;
        }
        await sleep(50);
      }
      const failed = await engine.describeExecution(executionId);
      expect(failed.status).toBe("FAILED");
      const load = failed.nodes.find((n) => n.id === "load")!;
      expect(load.status).toBe("FAILED");
      expect(load.error?.name).toBe("DeadLettered");
      expect(failed.error?.message).toContain("dead-letter queue");
      const extractBefore = failed.nodes.find((n) => n.id === "extract")!;
      expect(extractBefore.status).toBe("COMPLETED");

      const { items } = await engine.listDeadLetters({ limit: 10 });
      expect(items).toEqual([expect.objectContaining({ executionId, nodeId: "load", reason: "poison" })]);

      // The cause is fixed; redrive sends the work back and revives the execution.
      poisoned = false;
      const result = await engine.redrive();
      expect(result).toEqual({ redriven: [items[0]!.id], skipped: [] });
      expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED");

      const done = await engine.describeExecution(executionId);
      expect(done.output).toEqual({ load: "in", report: "reported" });
      const extractAfter = done.nodes.find((n) => n.id === "extract")!;
      expect(extractAfter).toEqual(extractBefore); // kept: not run again
      expect(done.nodes.find((n) => n.id === "load")?.attempt).toBe(2);
      expect((await engine.listDeadLetters({ limit: 10 })).items).toEqual([]);
      const history = await store.listHistory(executionId);
      expect(countEvents(history, HISTORY.executionRedriven)).toBe(1);
      expect(countEvents(history, HISTORY.nodeCompleted, "extract")).toBe(1);
    } finally {
      await backend.cleanup();
    }
  });

  it("a dead-lettered message of a node that completed makes its execution due for the sweeper, which finishes the propagation; nothing is sent again meanwhile", async () => {
    let dying = true;
    const backend = await createBackend(kind, {
      maxReceiveCount: 2,
      sweep: { firstCheckMs: 0, graceMs: 200, idleMs: 1000 },
      // The worker dies right after "first" completes, and every redelivery's recovery dies reading
      // its dependant: its message is dead-lettered with "first" COMPLETED and "second" never sent.
      wrapStore: (store) =>
        interceptCalls(store, (method, args, proceed) => {
          if (!dying) return proceed();
          const [, nodeId, , patch] = args as [string, string, unknown, { status?: string } | undefined];
          if (method === "transitionNode" && nodeId === "first" && patch?.status === "COMPLETED")
            return (proceed() as Promise<unknown>).then(() => Promise.reject(new Error("worker died")));
          if ((method === "getNode" || method === "getNodes") && JSON.stringify(args).includes("second"))
            return Promise.reject(new Error("worker died"));
          return proceed();
        }),
    });
    try {
      const { engine, store, consumer, deadLetterConsumer } = backend;
      await engine.registerWorkflow({
        name: "cut-after-completion",
        nodes: [
          { id: "first", type: "pass", params: { value: 1 } },
          { id: "second", type: "pass", dependsOn: ["first"], params: { value: 2 } },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "cut-after-completion" });
      let dead: Awaited<ReturnType<typeof receiveAll>>[number] | undefined;
      for (let round = 0; round < 40 && !dead; round++) {
        for (const message of await consumer.receive({
          maxMessages: 10,
          waitSeconds: 0,
          visibilityTimeoutSeconds: 1,
        })) {
          try {
            await engine.handleTask(taskOf(message), { receiveCount: message.receiveCount });
            await consumer.delete([message.receiptHandle]);
          } catch {
            await consumer.changeVisibility(message.receiptHandle, 0);
          }
        }
        [dead] = await receiveAll(deadLetterConsumer, 1, 200);
      }
      expect(dead && taskOf(dead).nodeId).toBe("first");
      expect(await store.getNode(executionId, "first")).toMatchObject({ status: "COMPLETED" });
      await engine.recordDeadLetter(taskOf(dead!), {
        messageId: dead!.messageId,
        receiveCount: dead!.receiveCount,
      });
      await deadLetterConsumer.delete([dead!.receiptHandle]);

      // Nothing failed and nothing was sent: the execution waits for the sweeper's look, now.
      const due = await store.getExecution(executionId);
      expect(due).toMatchObject({ status: "RUNNING" });
      expect(due?.sweepAt).toBeLessThanOrEqual(Date.now());
      expect(await receiveAll(consumer, 1, 200)).toEqual([]);
      expect((await engine.listDeadLetters({ limit: 10 })).items).toEqual([]);

      dying = false;
      await engine.sweep();
      expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED");
      expect((await engine.describeExecution(executionId)).output).toEqual({ second: 2 });
      const history = await store.listHistory(executionId);
      expect(countEvents(history, HISTORY.nodeCompleted, "first")).toBe(1);
      expect(countEvents(history, HISTORY.nodeCompleted, "second")).toBe(1);
    } finally {
      await backend.cleanup();
    }
  });

  it("redrive runs a node whose message arrived after the execution failed (cancelled before its claim)", async () => {
    const backend = await createBackend(kind);
    try {
      const { engine, store, consumer } = backend;
      await engine.registerWorkflow({
        name: "late-child",
        nodes: [
          { id: "a", type: "pass", params: { value: 1 } },
          { id: "b", type: "pass", dependsOn: ["a"] },
          { id: "j", type: "pass", dependsOn: ["a", "b"], params: { value: "joined" } },
          {
            id: "flaky",
            type: "fail",
            params: { times: 1, retryable: false, message: "flaky" },
          },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "late-child" });
      const handle = async (nodeId: string) => {
        const messages = await receiveAll(consumer, 1);
        const message = messages.find((m) => taskOf(m).nodeId === nodeId);
        expect(message, `a message for ${nodeId}`).toBeDefined();
        for (const m of messages) if (m !== message) await consumer.changeVisibility(m.receiptHandle, 0);
        await engine.handleTask(taskOf(message!));
        await consumer.delete([message!.receiptHandle]);
      };
      // `a` completes and sends `b`; `flaky` fails the execution; then `b`'s message arrives.
      await handle("a");
      await handle("flaky");
      expect((await store.getExecution(executionId))?.status).toBe("FAILED");
      await handle("b");
      const before = await engine.describeExecution(executionId);
      expect(before.nodes.find((n) => n.id === "b")).toMatchObject({ status: "CANCELLED", attempt: 0 });

      const { items } = await engine.listDeadLetters({ limit: 10 });
      expect(await engine.redrive(items.map((i) => i.id))).toMatchObject({ skipped: [] });
      expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED");
      const after = await engine.describeExecution(executionId);
      expect(after.nodes.find((n) => n.id === "b")).toMatchObject({ status: "COMPLETED", attempt: 1 });
      expect(after.output).toMatchObject({ j: "joined" });
    } finally {
      await backend.cleanup();
    }
  });

  it("redrive gives an `any` join cancelled before its claim the inputs its completed parents give it now", async () => {
    const backend = await createBackend(kind, { tasks: [collectTask] });
    try {
      const { engine, store, consumer } = backend;
      await engine.registerWorkflow({
        name: "late-pick",
        nodes: [
          { id: "a", type: "pass", params: { value: 1 } },
          { id: "b", type: "pass", params: { value: 2 } },
          { id: "j", type: "collect", dependsOn: ["a", "b"], fanIn: "any" },
          { id: "flaky", type: "fail", params: { times: 1, retryable: false, message: "flaky" } },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "late-pick" });
      const handle = async (nodeId: string, waiting: number) => {
        const messages = await receiveAll(consumer, waiting);
        const message = messages.find((m) => taskOf(m).nodeId === nodeId);
        expect(message, `a message for ${nodeId}`).toBeDefined();
        for (const m of messages) if (m !== message) await consumer.changeVisibility(m.receiptHandle, 0);
        await engine.handleTask(taskOf(message!));
        await consumer.delete([message!.receiptHandle]);
      };
      // `a` completes and meets `j` (its message carries [a]); `flaky` fails the execution; then the
      // messages of `j` and `b` arrive: both cancelled before their claim, with no inputs recorded.
      await handle("a", 3);
      await handle("flaky", 3);
      await handle("j", 2);
      await handle("b", 1);
      expect(await store.getNode(executionId, "j")).toMatchObject({ status: "CANCELLED", okDeps: [] });

      const { items } = await engine.listDeadLetters({ limit: 10 });
      expect(await engine.redrive(items.map((i) => i.id))).toMatchObject({ skipped: [] });
      expect(await store.getNode(executionId, "j")).toMatchObject({ status: "QUEUED", okDeps: [0] });
      expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED");
      expect((await engine.describeExecution(executionId)).output).toMatchObject({ j: { a: 1 } });
    } finally {
      await backend.cleanup();
    }
  });

  it("finishes a redrive cut short after reviving the execution: the sweeper revives the node instead of failing it again, and the dead letter stays until then", async () => {
    const backend = await createBackend(kind, { sweep: { firstCheckMs: 0, graceMs: 200, idleMs: 1000 } });
    try {
      const { engine, store, consumer } = backend;
      await engine.registerWorkflow({
        name: "cut-short",
        nodes: [{ id: "once", type: "fail", params: { times: 1, retryable: false, message: "once" } }],
      });
      const { executionId } = await engine.createExecution({ workflow: "cut-short" });
      expect(await runToEnd(engine, consumer, store, executionId)).toBe("FAILED");
      const { items } = await engine.listDeadLetters({ limit: 10 });
      expect(items).toHaveLength(1);
      // The redrive's first step (as dead-letters.ts writes it), then a crash before the nodes.
      const revived = await store.transitionExecution(executionId, ["FAILED"], {
        status: "RUNNING",
        error: null,
        finishedAt: null,
        failedNode: null,
        sweepAt: Date.now(),
      });
      expect(revived.ok).toBe(true);
      expect((await engine.listDeadLetters({ limit: 10 })).items).toHaveLength(1); // kept

      await engine.sweep();
      expect((await store.getExecution(executionId))?.status).toBe("RUNNING");
      expect(await store.getNode(executionId, "once")).toMatchObject({ status: "QUEUED", attempt: 2 });
      expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED");
      expect((await engine.describeExecution(executionId)).output).toEqual({ once: { attempt: 2 } });
      // The dead letter the cut-short redrive left: redriving it now finds nothing to do, and removes it.
      expect(await engine.redrive([items[0]!.id])).toEqual({
        redriven: [],
        skipped: [
          { id: items[0]!.id, reason: "its execution has succeeded since; the dead letter is removed" },
        ],
      });
      expect((await engine.listDeadLetters({ limit: 10 })).items).toEqual([]);
    } finally {
      await backend.cleanup();
    }
  });

  it("refuses the cleanup of a worker that stalled across a redrive: the revived execution keeps its nodes and succeeds", async () => {
    // The worker that fails the execution stalls in its cleanup, just before cancelling `other`
    // (waiting for a retry); the operator redrives meanwhile; then the stalled cancellation lands.
    const stalled = latch();
    const reached = latch();
    let held = false;
    const backend = await createBackend(kind, {
      wrapStore: (store) =>
        interceptTransitions(store, (call, proceed) => {
          if (call.nodeId !== "other" || !call.condition.executionEnding || held) return proceed();
          held = true;
          reached.open();
          return stalled.promise.then(proceed);
        }),
    });
    try {
      const { engine, store, consumer } = backend;
      await engine.registerWorkflow({
        name: "zombie-cleanup",
        nodes: [
          { id: "once", type: "fail", params: { times: 1, retryable: false, message: "once" } },
          {
            id: "other",
            type: "fail",
            params: { times: 1, message: "busy" },
            retry: {
              maxAttempts: 3,
              backoff: { initialSeconds: 0.2, multiplier: 1, maxSeconds: 1, jitter: "none" },
            },
          },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "zombie-cleanup" });
      const messages = await receiveAll(consumer, 2);
      const messageOf = (nodeId: string) => messages.find((m) => taskOf(m).nodeId === nodeId)!;
      await engine.handleTask(taskOf(messageOf("other")));
      expect(await store.getNode(executionId, "other")).toMatchObject({ status: "QUEUED", attempt: 2 });

      const zombie = engine.handleTask(taskOf(messageOf("once")));
      await reached.promise;
      expect((await store.getExecution(executionId))?.status).toBe("FAILED");
      await consumer.delete(messages.map((m) => m.receiptHandle));
      const { items } = await engine.listDeadLetters({ limit: 10 });
      expect(await engine.redrive(items.map((i) => i.id))).toMatchObject({ skipped: [] });
      expect((await store.getExecution(executionId))?.status).toBe("RUNNING");

      stalled.open();
      await zombie;
      // Its cancellation belonged to the failed life: refused.
      expect(await store.getNode(executionId, "other")).toMatchObject({ status: "QUEUED", attempt: 2 });
      expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED");
      const view = await engine.describeExecution(executionId);
      expect(view.output).toEqual({ once: { attempt: 2 }, other: { attempt: 2 } });
    } finally {
      await backend.cleanup();
    }
  });

  it("cannot succeed while a redrive revives its nodes: a sink completed after the failure waits until the failed node is revived", async () => {
    // `k` (an `any` join of `hard` and `s`) runs while `hard` fails the execution; the cleanup's
    // request that `k` stop is stalled, so `k` completes — too late to end the failed execution.
    const release = latch();
    const stalled = latch();
    const reached = latch();
    const hold = defineTask({
      type: "hold",
      params: z.object({}).strict().optional(),
      run: async () => {
        await release.promise;
        return "k";
      },
    });
    const backend = await createBackend(kind, {
      tasks: [hold],
      sweep: { firstCheckMs: 0, graceMs: 200, idleMs: 1000 },
      wrapStore: (store) =>
        interceptTransitions(store, (call, proceed) => {
          if (call.nodeId !== "k" || call.patch.cancelRequested !== true) return proceed();
          reached.open();
          return stalled.promise.then(proceed);
        }),
    });
    try {
      const { engine, store, consumer } = backend;
      await engine.registerWorkflow({
        name: "late-sink",
        nodes: [
          { id: "hard", type: "fail", params: { times: 1, retryable: false, message: "hard" } },
          { id: "s", type: "pass", params: { value: "s" } },
          { id: "k", type: "hold", dependsOn: ["hard", "s"], fanIn: "any" },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "late-sink" });
      const entries = await receiveAll(consumer, 2);
      const entry = (nodeId: string) => taskOf(entries.find((m) => taskOf(m).nodeId === nodeId)!);
      await engine.handleTask(entry("s"));
      const [kMessage] = await receiveAll(consumer, 1);
      const kTask = taskOf(kMessage!);
      const running = engine.handleTask(kTask, { receiveCount: 1 });
      while ((await store.getNode(executionId, "k"))?.status !== "RUNNING") await sleep(10);
      const failing = engine.handleTask(entry("hard"));
      await reached.promise;
      expect((await store.getExecution(executionId))?.status).toBe("FAILED");
      release.open();
      await running;
      expect(await store.getNode(executionId, "k")).toMatchObject({ status: "COMPLETED" });
      await consumer.delete([...entries, kMessage!].map((m) => m.receiptHandle));

      // A redrive's first step (as dead-letters.ts writes it), then a crash before the nodes.
      const revived = await store.transitionExecution(executionId, ["FAILED"], {
        status: "RUNNING",
        error: null,
        finishedAt: null,
        failedNode: null,
        reviving: Date.now(),
        sweepAt: Date.now(),
      });
      expect(revived.ok).toBe(true);
      // `k`'s message comes back: its propagation finds the only sink done, but `hard` still FAILED.
      await engine.handleTask(kTask, { receiveCount: 2 });
      expect((await store.getExecution(executionId))?.status).toBe("RUNNING");

      await sleep(300); // past the grace period
      await engine.sweep({ force: true });
      // The sweeper revived `hard` first; then the completed sink could end the execution.
      expect((await store.getExecution(executionId))?.status).toBe("SUCCEEDED");
      const history = await store.listHistory(executionId);
      expect(countEvents(history, HISTORY.nodeRedriven, "hard")).toBe(1);
      expect((await store.getNode(executionId, "hard"))?.status).not.toBe("FAILED");
      expect((await engine.describeExecution(executionId)).output).toEqual({ k: "k" });
      stalled.open();
      await failing;
    } finally {
      await backend.cleanup();
    }
  });

  it("aborts a sleep longer than its node timeout and retries it by policy", async () => {
    const backend = await createBackend(kind);
    try {
      const { engine, store, consumer } = backend;
      await engine.registerWorkflow({
        name: "slow",
        nodes: [
          {
            id: "nap",
            type: "sleep",
            params: { ms: 60_000 },
            timeoutSeconds: 1,
            retry: { maxAttempts: 2, backoff: { initialSeconds: 0.1, jitter: "none" } },
          },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "slow" });
      expect(await runToEnd(engine, consumer, store, executionId)).toBe("FAILED");
      const history = await store.listHistory(executionId);
      const retry = history.find((e) => e.type === HISTORY.nodeRetryScheduled);
      expect(retry?.detail?.error).toMatchObject({ name: "TimeoutError" });
      const failed = history.find((e) => e.type === HISTORY.nodeFailed);
      expect(failed).toMatchObject({ attempt: 2, detail: { error: { name: "TimeoutError" } } });
      // Exhausted retries on a retryable error fail the node without a dead letter.
      expect((await engine.listDeadLetters({ limit: 10 })).items).toEqual([]);
    } finally {
      await backend.cleanup();
    }
  });
});
