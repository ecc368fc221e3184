/**
 * Deadlines as timers (domain/timers.ts, engine/timers.ts) on each backend, with no sweep doing the
 * work: a callback's timeout and a missed heartbeat fire from the node's own delayed message within
 * 2 s of their deadline, an execution's deadline fails it with `ExecutionTimedOut` and stops its
 * running work, the timer of a node that moved on does nothing, and a wait beyond SQS's reach is a
 * durable timer that a sweep sends once it comes within reach — one index read per shard when
 * nothing is due.
 */
import { describe, expect, it } from "vitest";
import { systemClock } from "../../shared/adapters/system.js";
import { HISTORY } from "../../shared/domain/history.js";
import type { HistoryEvent } from "../../shared/domain/records.js";
import { TIMER_LIMITS, timerShard } from "../../shared/domain/timers.js";
import type { Clock, Store } from "../../shared/ports.js";
import { BACKEND_KINDS, type Backend, type BackendOptions, createBackend } from "../support/backends.js";
import { taskOf } from "../support/harness.js";
import { PATIENT, waitForProgress } from "../support/progress.js";

/** The sweeper's own look at executions never comes within these tests (a day away). */
const NO_SWEEPS = { firstCheckMs: 86_400_000, idleMs: 86_400_000, graceMs: 86_400_000 };
const PRECISION_MS = 2_000;

/** Handles every message visible now; answers the messages handled. */
async function deliver(backend: Backend): Promise<Array<{ nodeId: string; attempt: number }>> {
  const handled: Array<{ nodeId: string; attempt: number }> = [];
  for (;;) {
    const batch = await backend.consumer.receive({
      maxMessages: 10,
      waitSeconds: 0,
      visibilityTimeoutSeconds: 30,
    });
    if (batch.length === 0) return handled;
    for (const message of batch) {
      const task = taskOf(message);
      await backend.engine.handleTask(task, { receiveCount: message.receiveCount });
      await backend.consumer.delete([message.receiptHandle]);
      handled.push({ nodeId: task.nodeId, attempt: task.attempt });
    }
  }
}

async function runUntil<T>(backend: Backend, what: string, check: () => Promise<T | undefined>): Promise<T> {
  return waitForProgress(what, async () => {
    await deliver(backend);
    const value = await check();
    return value === undefined ? { done: false, progress: "waiting" } : { done: true, value };
  });
}

function event(history: readonly HistoryEvent[], type: string, nodeId?: string): HistoryEvent {
  const found = history.find((e) => e.type === type && (nodeId === undefined || e.nodeId === nodeId));
  if (!found)
    throw new Error(`no ${type} event${nodeId ? ` of ${nodeId}` : ""}: ${history.map((e) => e.type)}`);
  return found;
}

async function ended(backend: Backend, executionId: string) {
  return runUntil(backend, "the execution to end", async () => {
    const view = await backend.engine.describeExecution(executionId);
    return view.status === "RUNNING" || view.status === "PENDING" ? undefined : view;
  });
}

/** A clock the test moves by hand (the in-memory queue keeps its time; SQS keeps real time). */
function manualClock(start: number): Clock & { set(at: number): void } {
  let now = start;
  return {
    now: () => now,
    sleep: (ms, signal) => systemClock.sleep(ms, signal),
    set(at: number) {
      now = at;
    },
  };
}

/** Counts the store's timer reads. */
function countingTimerReads(counter: { listTimers: number }): (store: Store) => Store {
  return (store) =>
    new Proxy(store, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (property !== "listTimers" || typeof value !== "function") return value;
        return (...args: Parameters<Store["listTimers"]>) => {
          counter.listTimers++;
          return (value as Store["listTimers"]).apply(target, args);
        };
      },
    });
}

describe.each(BACKEND_KINDS)("timers (%s)", PATIENT, (kind) => {
  async function withBackend(options: BackendOptions, run: (backend: Backend) => Promise<void>) {
    const backend = await createBackend(kind, { sweep: NO_SWEEPS, ...options });
    try {
      await run(backend);
    } finally {
      await backend.cleanup();
    }
  }

  it("fails a 2 s callback timeout within 2 s of its deadline, with no sweep", async () => {
    await withBackend({}, async (backend) => {
      await backend.engine.registerWorkflow({
        name: "short-callback",
        nodes: [
          { id: "approve", type: "callback", params: { timeoutSeconds: 2 }, retry: { maxAttempts: 1 } },
        ],
      });
      const { executionId } = await backend.engine.createExecution({ workflow: "short-callback" });
      const view = await ended(backend, executionId);
      expect(view.status).toBe("FAILED");
      const history = await backend.store.listHistory(executionId);
      const waiting = event(history, HISTORY.callbackWaiting, "approve");
      const failed = event(history, HISTORY.nodeFailed, "approve");
      expect(failed.detail).toMatchObject({ error: { name: "CallbackTimedOut" } });
      const lateness = failed.at - (waiting.at + 2_000);
      expect(lateness).toBeGreaterThanOrEqual(0);
      expect(lateness).toBeLessThanOrEqual(PRECISION_MS);
    });
  });

  it("fails a callback whose heartbeat stops within 2 s of the missed heartbeat, with no sweep", async () => {
    await withBackend({}, async (backend) => {
      await backend.engine.registerWorkflow({
        name: "heartbeat-callback",
        nodes: [
          {
            id: "approve",
            type: "callback",
            params: { timeoutSeconds: 3600, heartbeatSeconds: 2 },
            retry: { maxAttempts: 1 },
          },
        ],
      });
      const { executionId } = await backend.engine.createExecution({ workflow: "heartbeat-callback" });
      const token = await runUntil(backend, "the callback to wait", async () => {
        const node = (await backend.engine.describeExecution(executionId)).nodes.find(
          (n) => n.id === "approve",
        );
        return node?.callbackToken;
      });
      // Two heartbeats a second apart push its due time on past the first timer.
      await backend.engine.heartbeatCallback(token);
      await systemClock.sleep(1_000);
      const lastHeartbeat = Date.now();
      await backend.engine.heartbeatCallback(token);
      const view = await ended(backend, executionId);
      expect(view.status).toBe("FAILED");
      const failed = event(await backend.store.listHistory(executionId), HISTORY.nodeFailed, "approve");
      expect(failed.detail).toMatchObject({ error: { name: "CallbackTimedOut" } });
      expect(String((failed.detail?.error as { message?: string } | undefined)?.message)).toMatch(
        /no heartbeat/,
      );
      expect(failed.at).toBeGreaterThanOrEqual(lastHeartbeat + 2_000);
      expect(failed.at - (lastHeartbeat + 2_000)).toBeLessThanOrEqual(PRECISION_MS);
    });
  });

  it("fails an execution at its deadline with ExecutionTimedOut and tells its running node to stop", async () => {
    await withBackend({}, async (backend) => {
      await backend.engine.registerWorkflow({
        name: "deadline",
        timeoutSeconds: 2,
        nodes: [{ id: "approve", type: "callback", params: { timeoutSeconds: 3600 } }],
      });
      const { executionId } = await backend.engine.createExecution({ workflow: "deadline" });
      const view = await ended(backend, executionId);
      expect(view.status).toBe("FAILED");
      expect(view.error?.name).toBe("ExecutionTimedOut");
      const history = await backend.store.listHistory(executionId);
      const started = event(history, HISTORY.executionStarted);
      const failed = event(history, HISTORY.executionFailed);
      expect(failed.at - (started.at + 2_000)).toBeGreaterThanOrEqual(0);
      expect(failed.at - (started.at + 2_000)).toBeLessThanOrEqual(PRECISION_MS);
      const node = await runUntil(backend, "the running node to stop", async () => {
        const record = await backend.store.getNode(executionId, "approve");
        return record?.status === "CANCELLED" ? record : undefined;
      });
      expect(node.status).toBe("CANCELLED");
    });
  });

  it("takes a task back from an external worker that stops heartbeating within 2 s of its lease's end", async () => {
    await withBackend({}, async (backend) => {
      const { engine } = backend;
      const { workerId } = await engine.registerWorker({
        workerId: `quiet-${kind}`,
        pool: "timers",
        executors: [],
        capabilities: {},
        labels: [],
        maxParallel: 1,
      });
      await engine.registerWorkflow({
        name: "external-lease",
        nodes: [
          {
            id: "render",
            type: "render",
            runsOn: { pool: "timers" },
            heartbeatSeconds: 1,
            retry: { maxAttempts: 1 },
          },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "external-lease" });
      const task = await runUntil(backend, "the task to be taken", () =>
        engine.pollTask(workerId, { waitSeconds: 0 }),
      );
      // One heartbeat renews its lease (2 s: twice its heartbeat) past the timer armed when taken.
      await systemClock.sleep(1_000);
      const lastHeartbeat = Date.now();
      await engine.heartbeatTask(task.taskToken);
      const view = await ended(backend, executionId);
      expect(view.status).toBe("FAILED");
      const failed = event(await backend.store.listHistory(executionId), HISTORY.nodeFailed, "render");
      expect(failed.at).toBeGreaterThanOrEqual(lastHeartbeat + 2_000);
      expect(failed.at - (lastHeartbeat + 2_000)).toBeLessThanOrEqual(PRECISION_MS);
    });
  });

  it("lets the timer of a cancelled node do nothing", async () => {
    await withBackend({}, async (backend) => {
      await backend.engine.registerWorkflow({
        name: "cancelled-callback",
        nodes: [{ id: "approve", type: "callback", params: { timeoutSeconds: 2 } }],
      });
      const { executionId } = await backend.engine.createExecution({ workflow: "cancelled-callback" });
      await runUntil(backend, "the callback to wait", async () => {
        const record = await backend.store.getNode(executionId, "approve");
        return record?.composite ? record : undefined;
      });
      await backend.engine.cancelExecution(executionId);
      const before = await backend.store.listHistory(executionId);
      // Its timer comes two seconds after it began to wait, and finds the attempt over.
      await waitForProgress("the cancelled node's timer to come", async () => {
        const handled = await deliver(backend);
        return handled.some((m) => m.nodeId === "approve")
          ? { done: true, value: undefined }
          : { done: false, progress: "waiting" };
      });
      expect(await backend.store.listHistory(executionId)).toEqual(before);
      const record = await backend.store.getNode(executionId, "approve");
      expect(record?.status).toBe("CANCELLED");
    });
  });

  it("keeps a wait beyond SQS's reach as a durable timer that a sweep sends once within reach", async () => {
    const clock = manualClock(Date.now());
    const reads = { listTimers: 0 };
    await withBackend({ clock, wrapStore: countingTimerReads(reads) }, async (backend) => {
      await backend.engine.registerWorkflow({
        name: "long-wait",
        nodes: [
          { id: "hold", type: "wait", params: { seconds: 3600 } },
          { id: "after", type: "pass", dependsOn: ["hold"], params: { value: 1 } },
        ],
      });
      const { executionId } = await backend.engine.createExecution({ workflow: "long-wait" });
      const queued = await runUntil(backend, "the wait to be queued", async () => {
        const record = await backend.store.getNode(executionId, "hold");
        return record?.status === "QUEUED" ? record : undefined;
      });
      const dueAt = queued.notBefore!;
      expect(dueAt - clock.now()).toBeGreaterThan(900_000);
      // Not a message (SQS cannot delay it that long): a timer in its execution's shard.
      const shard = timerShard(executionId);
      const armed = await backend.store.listTimers(shard, dueAt - 1, dueAt, { limit: 10 });
      expect(armed.items.map((t) => t.message)).toEqual([
        expect.objectContaining({ executionId, nodeId: "hold" }),
      ]);

      // A sweep now finds nothing within reach, reading each shard once.
      reads.listTimers = 0;
      expect((await backend.engine.sweep({ force: true })).timers).toBe(0);
      expect(reads.listTimers).toBe(TIMER_LIMITS.shards);

      // Within reach (two seconds before it is due): sent, delayed to its time, by one sweep.
      clock.set(dueAt - 2_000);
      expect((await backend.engine.sweep({ force: true })).timers).toBe(1);
      expect((await backend.engine.sweep({ force: true })).timers).toBe(0);
      clock.set(dueAt);
      const view = await ended(backend, executionId);
      expect(view.status).toBe("SUCCEEDED");
      const started = event(await backend.store.listHistory(executionId), HISTORY.nodeStarted, "hold");
      expect(started.at).toBeGreaterThanOrEqual(dueAt);
    });
  });
});
