/**
 * Leases, fencing, the sweeper, cancellation and durable waits, through the real engine on each
 * backend. "Killing" a worker means claiming a node as a worker would and never finishing it.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { NodeRecord } from "../../shared/domain/records.js";
import { Engine } from "../../shared/engine/engine.js";
import { HISTORY } from "../../shared/engine/lifecycle.js";
import type { Store } from "../../shared/ports.js";
import { defineTask } from "../../shared/tasks/task-type.js";
import { BACKEND_KINDS, type Backend, createBackend } from "../support/backends.js";
import { interceptTransitions, isHeartbeat, latch, sleep } from "../support/faults.js";
import { collectTask, countEvents, passParents, receiveAll, runToEnd, taskOf } from "../support/harness.js";
import { PATIENT, waitForProgress } from "../support/progress.js";

const fastSweep = { firstCheckMs: 0, graceMs: 200, idleMs: 1000 };

/** Claims a queued node the way a worker does, then "dies": the lease is never renewed. */
/**
 * Registers `workflow` with one node `nap` (a 5-minute sleep), starts it, and has its handler run
 * until the test ends it: the execution, and the running handler's promise, once `nap` is RUNNING.
 */
async function startNap(
  backend: Pick<Backend, "engine" | "store" | "consumer">,
  workflow: { name: string; timeoutSeconds?: number },
): Promise<{ executionId: string; running: Promise<unknown> }> {
  const { engine, store, consumer } = backend;
  await engine.registerWorkflow({
    ...workflow,
    nodes: [{ id: "nap", type: "sleep", params: { ms: 5 * 60_000 } }],
  });
  const { executionId } = await engine.createExecution({ workflow: workflow.name });
  const [message] = await receiveAll(consumer, 1);
  const running = engine.handleTask(taskOf(message!));
  await waitForProgress("nap to run", async () => {
    const status = (await store.getNode(executionId, "nap"))?.status;
    return status === "RUNNING" ? { done: true, value: undefined } : { done: false, progress: status };
  });
  return { executionId, running };
}

async function claimAndDie(
  store: Awaited<ReturnType<typeof createBackend>>["store"],
  executionId: string,
  nodeId: string,
  leaseMs: number,
) {
  const now = Date.now();
  const claim = await store.transitionNode(
    executionId,
    nodeId,
    // An entry node is claimed straight from PENDING (its message was its dispatch).
    { status: ["PENDING"], attempt: 0 },
    {
      status: "RUNNING",
      attempt: 1,
      lease: { token: `dead-${nodeId}`, expiresAt: now + leaseMs },
      startedAt: now,
    },
  );
  expect(claim.ok).toBe(true);
}

/**
 * Starts an execution the sweeper looks at. An unkeyed start of direct entries sends its messages
 * first and is never in the sweeper's index (executions.ts): SQS redelivers what a dead worker left,
 * and the DLQ poller puts back in the index what SQS gave up on. These tests delete the messages
 * themselves — a loss SQS does not cause — to exercise the sweeper's own recovery, which a keyed
 * start (written first, with a first look) still relies on.
 */
function startWatched(engine: Engine, workflow: string) {
  return engine.createExecution({ workflow, idempotencyKey: `watched-${workflow}` });
}

/** `nap`'s record once it ended CANCELLED (its attempt gone after being told to stop). */
function napCancelled(store: Store, executionId: string): Promise<NodeRecord> {
  return waitForProgress("nap to end", async () => {
    const record = await store.getNode(executionId, "nap");
    return record?.status === "CANCELLED"
      ? { done: true, value: record }
      : { done: false, progress: record?.status };
  });
}

/** The `nap` → `next` execution ended CANCELLED, both nodes with it, and no completion accepted; its history. */
async function expectCancelledUncompleted(
  engine: Engine,
  store: Awaited<ReturnType<typeof createBackend>>["store"],
  executionId: string,
) {
  const view = await engine.describeExecution(executionId);
  expect(view.status).toBe("CANCELLED");
  expect(view.nodes.map((n) => [n.id, n.status])).toEqual([
    ["nap", "CANCELLED"],
    ["next", "CANCELLED"],
  ]);
  const history = await store.listHistory(executionId);
  expect(countEvents(history, HISTORY.nodeCompleted)).toBe(0);
  return history;
}

describe.each(BACKEND_KINDS)("leases, sweeper, cancellation, waits (%s)", PATIENT, (kind) => {
  it("recovers a killed worker's node through the sweeper once its lease expires", async () => {
    const backend = await createBackend(kind, { sweep: fastSweep });
    try {
      const { engine, store, consumer } = backend;
      await engine.registerWorkflow({
        name: "killed",
        nodes: [
          { id: "work", type: "pass", params: { value: "done" }, retry: { backoff: { initialSeconds: 0 } } },
        ],
      });
      const { executionId } = await startWatched(engine, "killed");
      const [message] = await receiveAll(consumer, 1);
      await claimAndDie(store, executionId, "work", 300);
      await consumer.delete([message!.receiptHandle]); // the message is gone too: only the sweeper can help

      await sleep(400);
      const report = await engine.sweep();
      expect(report).toMatchObject({ skipped: false, recoveredLeases: 1 });
      expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED");
      const view = await engine.describeExecution(executionId);
      expect(view.nodes[0]).toMatchObject({ status: "COMPLETED", attempt: 2, output: "done" });
      const history = await store.listHistory(executionId);
      const retry = history.find((e) => e.type === HISTORY.nodeRetryScheduled);
      expect(retry?.detail?.error).toMatchObject({ name: "LeaseExpired" });
    } finally {
      await backend.cleanup();
    }
  });

  it("recovers a killed worker's node through SQS redelivery once its lease expires", async () => {
    const backend = await createBackend(kind);
    try {
      const { engine, store, consumer } = backend;
      await engine.registerWorkflow({
        name: "redelivered",
        nodes: [
          { id: "work", type: "pass", params: { value: 7 }, retry: { backoff: { initialSeconds: 0 } } },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "redelivered" });
      const [message] = await receiveAll(consumer, 1);
      await claimAndDie(store, executionId, "work", 300);
      await sleep(400);
      // The message was never deleted: its visibility timeout ends and it comes back.
      await consumer.changeVisibility(message!.receiptHandle, 0);
      expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED");
      const view = await engine.describeExecution(executionId);
      expect(view.nodes[0]).toMatchObject({ status: "COMPLETED", attempt: 2, output: 7 });
    } finally {
      await backend.cleanup();
    }
  });

  it("refuses every write of a zombie attempt whose lease was taken over", async () => {
    const release = latch();
    const heartbeatsPaused = { on: true };
    const tokens: string[] = [];
    const hold = defineTask({
      type: "hold",
      params: z.object({}).strict().optional(),
      run: async ({ context }) => {
        if (context.attempt === 1) {
          await release.promise; // a long GC pause, or a network partition
          throw new Error("zombie gives up"); // tries to fail the node too
        }
        return { attempt: context.attempt };
      },
    });
    const backend = await createBackend(kind, {
      leaseSeconds: 1,
      // Claimed before it runs: the zombie must hold a lease to lose.
      claimAfterSeconds: 0,
      sweep: fastSweep,
      tasks: [hold],
      wrapStore: (store) =>
        interceptTransitions(store, async (call, proceed) => {
          if (call.patch.status === "RUNNING" && call.patch.lease) tokens.push(call.patch.lease.token);
          // Attempt 1's heartbeats stall (the worker is frozen) until the pause ends.
          if (isHeartbeat(call.patch) && call.condition.leaseToken === tokens[0]) {
            while (heartbeatsPaused.on) await sleep(20);
          }
          return proceed();
        }),
    });
    try {
      const { engine, store, consumer } = backend;
      await engine.registerWorkflow({
        name: "zombie",
        nodes: [{ id: "z", type: "hold", retry: { maxAttempts: 3, backoff: { initialSeconds: 0 } } }],
      });
      const { executionId } = await startWatched(engine, "zombie");
      const [first] = await receiveAll(consumer, 1);
      const zombie = engine.handleTask(taskOf(first!)); // attempt 1 runs, and freezes
      await consumer.delete([first!.receiptHandle]);
      await sleep(1300); // its lease expires

      expect((await engine.sweep()).recoveredLeases).toBe(1);
      expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED"); // attempt 2

      heartbeatsPaused.on = false;
      release.open();
      await zombie; // the zombie wakes: its heartbeat and its failure are refused

      const node = await store.getNode(executionId, "z");
      expect(node).toMatchObject({ status: "COMPLETED", attempt: 2, output: { json: '{"attempt":2}' } });
      const zombieToken = tokens[0]!;
      const completion = await store.transitionNode(
        executionId,
        "z",
        { status: ["RUNNING"], leaseToken: zombieToken },
        { status: "COMPLETED", output: { json: JSON.stringify("zombie") }, lease: null },
      );
      expect(completion.ok).toBe(false);
      const heartbeat = await store.transitionNode(
        executionId,
        "z",
        { status: ["RUNNING"], leaseToken: zombieToken },
        { lease: { token: zombieToken, expiresAt: Date.now() + 60_000 } },
      );
      expect(heartbeat.ok).toBe(false);
      const history = await store.listHistory(executionId);
      expect(countEvents(history, HISTORY.nodeCompleted, "z")).toBe(1);
      expect(countEvents(history, HISTORY.nodeFailed, "z")).toBe(0);
      expect((await engine.describeExecution(executionId)).status).toBe("SUCCEEDED");
    } finally {
      await backend.cleanup();
    }
  });

  it("sends a join whose message was lost once, not once per parent, after the grace period", async () => {
    const backend = await createBackend(kind, { sweep: fastSweep, fanIn: { shardSize: 2 } });
    try {
      const { engine, store, consumer } = backend;
      const parents = passParents(6);
      await engine.registerWorkflow({
        name: "lost-join",
        nodes: [
          ...parents,
          { id: "j", type: "pass", dependsOn: parents.map((p) => p.id), params: { value: "j" } },
        ],
      });
      const { executionId } = await startWatched(engine, "lost-join");
      const entries = await receiveAll(consumer, 6);
      for (const m of entries) await engine.handleTask(taskOf(m));
      await consumer.delete(entries.map((m) => m.receiptHandle));
      // The join's message is lost (as if its sender crashed before sending it).
      const sent = await receiveAll(consumer, 1);
      expect(sent.map((m) => taskOf(m).nodeId)).toEqual(["j"]);
      await consumer.delete(sent.map((m) => m.receiptHandle));
      expect((await store.getNode(executionId, "j"))?.status ?? "PENDING").toBe("PENDING");

      await sleep(300); // past the grace period
      expect(await engine.sweep()).toMatchObject({ resent: 1, reDriven: 0 });
      const resent = await receiveAll(consumer, 2, 300);
      // The resend carries the execution's trace, as every task message does.
      expect(resent.map((m) => taskOf(m))).toEqual([
        { executionId, nodeId: "j", attempt: 1, trace: expect.stringMatching(/^00-[0-9a-f]{32}-/) },
      ]);
      await consumer.changeVisibility(resent[0]!.receiptHandle, 0);
      expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED");
      expect((await engine.describeExecution(executionId)).output).toEqual({ j: "j" });
    } finally {
      await backend.cleanup();
    }
  });

  it("sends a `count:2` join whose messages were lost once, with the dependencies that met it", async () => {
    const backend = await createBackend(kind, { sweep: fastSweep, tasks: [collectTask] });
    try {
      const { engine, store, consumer } = backend;
      const parents = passParents(3);
      await engine.registerWorkflow({
        name: "lost-pick",
        nodes: [
          ...parents,
          { id: "j", type: "collect", dependsOn: parents.map((p) => p.id), fanIn: "count:2" },
        ],
      });
      const { executionId } = await startWatched(engine, "lost-pick");
      const entries = await receiveAll(consumer, 3);
      for (const m of entries) await engine.handleTask(taskOf(m));
      await consumer.delete(entries.map((m) => m.receiptHandle));
      // Its deciders' messages are lost (p1 met it, p2 found it unclaimed and sent one too).
      const sent = await receiveAll(consumer, 2);
      expect(sent.map((m) => taskOf(m).deps)).toEqual([
        [0, 1],
        [0, 1, 2],
      ]);
      await consumer.delete(sent.map((m) => m.receiptHandle));

      await sleep(300); // past the grace period
      expect(await engine.sweep()).toMatchObject({ resent: 1, reDriven: 0 });
      const resent = await receiveAll(consumer, 2, 300);
      expect(resent.map((m) => taskOf(m))).toEqual([
        { executionId, nodeId: "j", attempt: 1, deps: [0, 1, 2], trace: expect.stringMatching(/^00-/) },
      ]);
      await consumer.changeVisibility(resent[0]!.receiptHandle, 0);
      expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED");
      expect((await engine.describeExecution(executionId)).output).toEqual({ j: { p0: 0, p1: 1, p2: 2 } });
    } finally {
      await backend.cleanup();
    }
  });

  it("lets two sweepers at once over the same expired leases re-dispatch each node once", async () => {
    const backend = await createBackend(kind, { sweep: fastSweep });
    try {
      const { engine, store, consumer } = backend;
      await engine.registerWorkflow({
        name: "three",
        nodes: ["a", "b", "c"].map((id) => ({ id, type: "noop", retry: { backoff: { initialSeconds: 0 } } })),
      });
      const { executionId } = await startWatched(engine, "three");
      const messages = await receiveAll(consumer, 3);
      for (const id of ["a", "b", "c"]) await claimAndDie(store, executionId, id, 200);
      await consumer.delete(messages.map((m) => m.receiptHandle));
      await sleep(300);

      // Same store and queue, two engines (two sweeper instances); once with the sweeper lease, once forced.
      const other = new Engine(engine.ports, engine.tasks, engine.options);
      const [one, two] = await Promise.all([engine.sweep(), other.sweep()]);
      expect([one.skipped, two.skipped].sort()).toEqual([false, true]);
      const [three, four] = await Promise.all([engine.sweep({ force: true }), other.sweep({ force: true })]);
      expect(
        one.recoveredLeases + two.recoveredLeases + three.recoveredLeases + four.recoveredLeases,
      ).toBeGreaterThanOrEqual(3);

      const redispatched = await receiveAll(consumer, 4, 1500);
      expect(redispatched.map((m) => taskOf(m).nodeId).sort()).toEqual(["a", "b", "c"]);
      for (const m of redispatched) expect(taskOf(m).attempt).toBe(2);
      const history = await store.listHistory(executionId);
      for (const id of ["a", "b", "c"]) expect(countEvents(history, HISTORY.nodeRetryScheduled, id)).toBe(1);
      await Promise.all(redispatched.map((m) => engine.handleTask(taskOf(m))));
      expect((await engine.describeExecution(executionId)).status).toBe("SUCCEEDED");
    } finally {
      await backend.cleanup();
    }
  });

  it("cancels an execution with a running sleep of minutes: it stops within a few heartbeats", async () => {
    const backend = await createBackend(kind, { leaseSeconds: 0.6 });
    try {
      const { engine, store, consumer } = backend;
      await engine.registerWorkflow({
        name: "long",
        nodes: [
          { id: "nap", type: "sleep", params: { ms: 5 * 60_000 } },
          { id: "after-nap", type: "noop", dependsOn: ["nap"] },
          { id: "later", type: "wait", params: { seconds: 600 } },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "long" });
      const messages = await receiveAll(consumer, 1);
      const napMessage = messages.find((m) => taskOf(m).nodeId === "nap")!;
      const running = engine.handleTask(taskOf(napMessage));
      // Wait for the claim (progress, not a fixed delay: the machine may be busy).
      while ((await store.getNode(executionId, "nap"))?.status !== "RUNNING") await sleep(20);

      const cancelled = await engine.cancelExecution(executionId, "customer changed their mind");
      expect(cancelled.status).toBe("CANCELLED");
      await running; // the heartbeat carried the cancellation to the sleeping handler

      const view = await engine.describeExecution(executionId);
      expect(view.status).toBe("CANCELLED");
      expect(view.error).toEqual({ name: "Cancelled", message: "customer changed their mind" });
      const byId = Object.fromEntries(view.nodes.map((n) => [n.id, n.status]));
      expect(byId).toEqual({ nap: "CANCELLED", "after-nap": "CANCELLED", later: "CANCELLED" });
      expect(backend.events.map((e) => e.detailType)).toContain("Execution Cancelled");
      await expect(engine.cancelExecution(executionId)).rejects.toMatchObject({ code: "Conflict" });
    } finally {
      await backend.cleanup();
    }
  });

  it("does not let a node told to stop complete, even when it finishes before its next heartbeat", async () => {
    // 60 s lease: no heartbeat happens during the test. Claimed before it runs: a lazy claim is the
    // next test's.
    const backend = await createBackend(kind, { claimAfterSeconds: 0 });
    try {
      const { engine, store, consumer } = backend;
      await engine.registerWorkflow({
        name: "short-nap",
        nodes: [
          { id: "nap", type: "sleep", params: { ms: 2000 } },
          { id: "next", type: "noop", dependsOn: ["nap"] },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "short-nap" });
      const [message] = await receiveAll(consumer, 1);
      const running = engine.handleTask(taskOf(message!));
      // Cancel once it runs (its claim, not a fixed delay: the machine may be busy), before it ends.
      while ((await store.getNode(executionId, "nap"))?.status !== "RUNNING") await sleep(20);
      await engine.cancelExecution(executionId);
      await running; // the sleep ends normally, but the completion is refused and recorded as cancelled

      const history = await expectCancelledUncompleted(engine, store, executionId);
      // Never dispatched: written CANCELLED by the cleanup, so its history says so.
      expect(await store.getNode(executionId, "next")).toMatchObject({ status: "CANCELLED", attempt: 0 });
      expect(countEvents(history, HISTORY.nodeCancelled, "next")).toBe(1);
    } finally {
      await backend.cleanup();
    }
  });

  it("refuses the carried claim of an unclaimed first attempt whose execution was cancelled as it ran", async () => {
    const started = latch();
    const release = latch();
    const held = defineTask({
      type: "held",
      params: z.object({}).strict().optional(),
      run: async () => {
        started.open();
        await release.promise;
        return "finished anyway";
      },
    });
    // The default claimAfterSeconds (5): the attempt runs unclaimed, its record still PENDING.
    const backend = await createBackend(kind, { tasks: [held] });
    try {
      const { engine, store, consumer } = backend;
      await engine.registerWorkflow({
        name: "lazy-nap",
        nodes: [
          { id: "nap", type: "held" },
          { id: "next", type: "noop", dependsOn: ["nap"] },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "lazy-nap" });
      const [message] = await receiveAll(consumer, 1);
      const running = engine.handleTask(taskOf(message!));
      await started.promise;
      expect((await store.getNode(executionId, "nap"))?.status ?? "PENDING").toBe("PENDING");
      await engine.cancelExecution(executionId);
      release.open();
      await running; // its ending carries its claim, refused: the node is no longer PENDING

      const history = await expectCancelledUncompleted(engine, store, executionId);
      expect(countEvents(history, HISTORY.nodeStarted)).toBe(0);
    } finally {
      await backend.cleanup();
    }
  });

  it("completes a `wait` of a few seconds without holding a worker", async () => {
    const backend = await createBackend(kind);
    try {
      const { engine, store, consumer } = backend;
      await engine.registerWorkflow({
        name: "timer",
        nodes: [
          { id: "pause", type: "wait", params: { seconds: 2 } },
          { id: "resume", type: "pass", dependsOn: ["pause"], params: { value: "after the wait" } },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "timer" });
      const during = await store.getNode(executionId, "pause");
      expect(during?.status).toBe("QUEUED"); // waiting in the queue: no lease, no worker
      expect(during?.lease).toBeUndefined();
      expect(during!.notBefore! - during!.queuedAt!).toBe(2000);
      // Nothing is deliverable while it waits: SQS holds the message back.
      expect(
        await consumer.receive({ maxMessages: 10, waitSeconds: 0, visibilityTimeoutSeconds: 30 }),
      ).toEqual([]);

      expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED");
      const history = await store.listHistory(executionId);
      const queued = history.find((e) => e.type === HISTORY.nodeQueued && e.nodeId === "pause")!;
      const started = history.find((e) => e.type === HISTORY.nodeStarted && e.nodeId === "pause")!;
      expect(started.at - queued.at).toBeGreaterThanOrEqual(2000);
      expect((await engine.describeExecution(executionId)).output).toEqual({ resume: "after the wait" });
    } finally {
      await backend.cleanup();
    }
  });

  it("cancels a child execution whose parent's attempt died before it recorded the child", async () => {
    // The worker creates the child, then dies before its waiting write (the write that records the
    // child): the attempt's lease expires, a new attempt starts a child of its own, and nobody
    // would ever read the first child's end. The sweeper cancels it.
    const crashed = { done: false };
    const backend = await createBackend(kind, {
      leaseSeconds: 1,
      sweep: fastSweep,
      wrapStore: (store) =>
        interceptTransitions(store, async (call, proceed) => {
          if (call.patch.composite?.kind === "workflow" && !crashed.done) {
            crashed.done = true;
            throw new Error("the worker dies before it records its child");
          }
          return proceed();
        }),
    });
    try {
      const { engine, store, consumer } = backend;
      await engine.registerWorkflow({
        name: "slow-child",
        nodes: [{ id: "nap", type: "wait", params: { seconds: 600 } }],
      });
      await engine.registerWorkflow({
        name: "orphan-parent",
        nodes: [
          {
            id: "call",
            type: "workflow",
            params: { name: "slow-child" },
            retry: { backoff: { initialSeconds: 0 } },
          },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "orphan-parent" });
      const [message] = await receiveAll(consumer, 1);
      await expect(engine.handleTask(taskOf(message!))).rejects.toThrow("dies before it records");
      const diedAt = Date.now();
      let redelivered = false;
      const [orphan] = (await store.listExecutions({ workflow: "slow-child", limit: 10 })).items;
      expect(orphan).toMatchObject({
        status: "RUNNING",
        parent: { executionId, nodeId: "call", attempt: 1 },
      });

      // Its message comes back once the lease expired (SQS redelivers a message its handler did not
      // delete): attempt 2 starts its own child; the sweeper cancels the orphan.
      const second = await waitForProgress("attempt 2's child", async () => {
        if (!redelivered && Date.now() > diedAt + 1100) {
          await engine.handleTask(taskOf(message!), { receiveCount: 2 });
          await consumer.delete([message!.receiptHandle]);
          redelivered = true;
        }
        await engine.sweep({ force: true });
        for (const m of await consumer.receive({
          maxMessages: 10,
          waitSeconds: 0,
          visibilityTimeoutSeconds: 60,
        })) {
          await engine.handleTask(taskOf(m));
          await consumer.delete([m.receiptHandle]);
        }
        const view = await engine.describeExecution(executionId);
        const id = view.nodes[0]?.childExecutionId;
        return id && id !== orphan!.executionId
          ? { done: true, value: id }
          : { done: false, progress: view.nodes[0]?.attempt };
      });
      const cancelled = await waitForProgress("the orphan's cancellation", async () => {
        await engine.sweep({ force: true });
        const record = await store.getExecution(orphan!.executionId);
        return record?.status === "CANCELLED"
          ? { done: true, value: record }
          : { done: false, progress: record?.status };
      });
      expect(cancelled.error?.message).toContain('node "call"');
      expect(cancelled.error?.message).toContain("no longer waits for it");
      expect((await store.getExecution(second))?.status).toBe("RUNNING");
      await engine.cancelExecution(executionId);
    } finally {
      await backend.cleanup();
    }
  });

  it("fails an execution that passes its timeout", async () => {
    const backend = await createBackend(kind, { sweep: fastSweep });
    try {
      const { engine, store } = backend;
      await engine.registerWorkflow({
        name: "deadline",
        timeoutSeconds: 1,
        nodes: [{ id: "forever", type: "wait", params: { seconds: 3600 } }],
      });
      const { executionId } = await engine.createExecution({ workflow: "deadline" });
      await sleep(1100);
      expect((await engine.sweep()).timedOut).toBe(1);
      const view = await engine.describeExecution(executionId);
      expect(view.status).toBe("FAILED");
      expect(view.error?.name).toBe("ExecutionTimedOut");
      expect(view.nodes[0]?.status).toBe("CANCELLED");
      expect((await store.listDueExecutions(Date.now(), 10)).length).toBe(0);
    } finally {
      await backend.cleanup();
    }
  });

  it("fails an execution still running a node at its deadline with ExecutionTimedOut, and stops that node", async () => {
    // A short lease: the running handler's heartbeats carry the stop to it within a second.
    const backend = await createBackend(kind, { sweep: fastSweep, leaseSeconds: 0.6 });
    try {
      const { engine, store, consumer } = backend;
      const { executionId, running } = await startNap(backend, {
        name: "deadline-running",
        timeoutSeconds: 1,
      });
      // Its `$deadline` message, delayed to the deadline, fails the execution (no sweep needed).
      const failed = await waitForProgress("the execution's deadline", async () => {
        for (const m of await consumer.receive({
          maxMessages: 10,
          waitSeconds: 0,
          visibilityTimeoutSeconds: 60,
        })) {
          await engine.handleTask(taskOf(m));
          await consumer.delete([m.receiptHandle]);
        }
        const record = await store.getExecution(executionId);
        return record?.status === "FAILED"
          ? { done: true, value: record }
          : { done: false, progress: Date.now() };
      });
      expect(failed.error?.name).toBe("ExecutionTimedOut");
      // The running handler is told to stop (its signal fires) and returns long before its 5 minutes.
      await running;
      expect((await napCancelled(store, executionId)).cancelRequested).toBe(true);
    } finally {
      await backend.cleanup();
    }
  });

  it("tells a running node to stop when its listing showed an expired lease that a heartbeat had renewed", async () => {
    // Every listing answers from before the latest heartbeat: the running node's lease looks
    // expired, so the cleanup tries to cancel it as a dead worker's, and the store refuses (the
    // lease is live). The node must then be told to stop like any live one; before the fix it was
    // left running, unasked, however often the cleanup looked again.
    const staleListings = (store: Store): Store =>
      new Proxy(store, {
        get(target, property, receiver) {
          if (property === "listNodes")
            return async (executionId: string) =>
              (await target.listNodes(executionId)).map((node) =>
                node.status === "RUNNING" && node.lease
                  ? { ...node, lease: { ...node.lease, expiresAt: 0 } }
                  : node,
              );
          const value = Reflect.get(target, property, receiver);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
    const backend = await createBackend(kind, {
      sweep: fastSweep,
      leaseSeconds: 0.6,
      wrapStore: staleListings,
    });
    try {
      const { engine, store } = backend;
      const { executionId, running } = await startNap(backend, { name: "stale-listing" });
      await engine.cancelExecution(executionId);
      await waitForProgress("nap to be told to stop", async () => {
        const record = await store.getNode(executionId, "nap");
        return record?.cancelRequested
          ? { done: true, value: undefined }
          : { done: false, progress: record?.status };
      });
      // Its heartbeat carries the request; the handler returns long before its 5 minutes.
      await running;
      expect((await napCancelled(store, executionId)).cancelRequested).toBe(true);
      expect((await store.getExecution(executionId))?.status).toBe("CANCELLED");
    } finally {
      await backend.cleanup();
    }
  });

  it("shows a node told to stop as stopping until its attempt ends, then CANCELLED with the reason", async () => {
    // Its handler holds on past the stop (as a slow client call would): the view says it was told.
    const held = latch();
    const holds = defineTask({
      type: "holds",
      params: z.object({}).strict(),
      run: async () => {
        await held.promise;
        return "late";
      },
    });
    // A lease of 30 s: its heartbeat (every 10 s), which carries the request and ends the attempt,
    // comes long after a look at the view, however slow the machine (with 0.6 s, a look on a busy
    // machine could miss the stop's 200 ms).
    const backend = await createBackend(kind, { tasks: [holds], claimAfterSeconds: 0, leaseSeconds: 30 });
    try {
      const { engine, consumer } = backend;
      await engine.registerWorkflow({
        name: "any-stops-slow",
        nodes: [
          { id: "fast", type: "noop" },
          { id: "slow", type: "holds", params: {} },
          { id: "first", type: "noop", dependsOn: ["fast", "slow"], fanIn: "any" },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "any-stops-slow" });
      const running: Promise<unknown>[] = [];
      const view = await waitForProgress("the execution to succeed while slow runs", async () => {
        for (const m of await consumer.receive({
          maxMessages: 10,
          waitSeconds: 0,
          visibilityTimeoutSeconds: 60,
        })) {
          const handled = engine.handleTask(taskOf(m)).then(() => consumer.delete([m.receiptHandle]));
          if (m.body.includes('"slow"')) running.push(handled);
          else await handled;
        }
        const current = await engine.describeExecution(executionId);
        const slow = current.nodes.find((n) => n.id === "slow");
        return current.status === "SUCCEEDED" && slow?.stopping
          ? { done: true, value: current }
          : { done: false, progress: [current.status, slow?.status, slow?.stopping] };
      });
      expect(view.nodes.find((n) => n.id === "slow")).toMatchObject({ status: "RUNNING", stopping: true });
      expect(view.nodes.find((n) => n.id === "first")?.stopping).toBeUndefined();
      held.open();
      await Promise.all(running);
      const ended = await waitForProgress("slow to end", async () => {
        const slow = (await engine.describeExecution(executionId)).nodes.find((n) => n.id === "slow");
        return slow?.status === "CANCELLED"
          ? { done: true, value: slow }
          : { done: false, progress: slow?.status };
      });
      expect(ended.stopping).toBeUndefined();
      expect(ended.error?.name).toBe("Cancelled");
      expect(ended.error?.message).toMatch(/\S/);
    } finally {
      await backend.cleanup();
    }
  });
});
