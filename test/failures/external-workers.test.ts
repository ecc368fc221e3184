/**
 * External workers through the real engine on each backend (engine/external.ts): placement by
 * executor, capability, allow-list, deny-list and per-worker concurrency; registration, heartbeats,
 * stale and dead workers, deregistration; expired leases recovered with a new attempt; a crashed
 * worker's task taken by a healthy one; a task of hours kept alive by heartbeats (virtual clock);
 * and the coordinator restarted while workers hold tasks.
 */
import { describe, expect, it } from "vitest";
import { MemoryBlobStore } from "../../shared/adapters/memory/blobs.js";
import { MemoryEventPublisher } from "../../shared/adapters/memory/events.js";
import { MemoryQueue } from "../../shared/adapters/memory/queue.js";
import { MemoryStore } from "../../shared/adapters/memory/store.js";
import { hasCode } from "../../shared/domain/errors.js";
import { Engine } from "../../shared/engine/engine.js";
import type { ExternalTask } from "../../shared/engine/external.js";
import type { Clock } from "../../shared/ports.js";
import { createTaskRegistry } from "../../shared/tasks/builtins.js";
import { BACKEND_KINDS, type Backend, createBackend } from "../support/backends.js";
import { sleep } from "../support/faults.js";
import { taskOf } from "../support/harness.js";
import { PATIENT, waitForProgress } from "../support/progress.js";

const fastSweep = { firstCheckMs: 0, graceMs: 200, idleMs: 1000 };

/** Hands every task message waiting to the engine: external nodes get offered to their pools. */
async function deliver(backend: Pick<Backend, "engine" | "consumer">): Promise<number> {
  let handled = 0;
  for (;;) {
    const batch = await backend.consumer.receive({
      maxMessages: 10,
      waitSeconds: 0,
      visibilityTimeoutSeconds: 30,
    });
    if (batch.length === 0) return handled;
    for (const message of batch) {
      await backend.engine.handleTask(taskOf(message), { receiveCount: message.receiveCount });
      await backend.consumer.delete([message.receiptHandle]);
      handled++;
    }
  }
}

/** Polls (without waiting) until a task comes, delivering messages meanwhile. */
async function pollUntilTask(backend: Backend, workerId: string, what: string): Promise<ExternalTask> {
  return waitForProgress(what, async () => {
    await deliver(backend);
    const task = await backend.engine.pollTask(workerId, { waitSeconds: 0 });
    return task ? { done: true, value: task } : { done: false, progress: "none yet" };
  });
}

const external = (id: string, runsOn: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  id,
  type: "transcode",
  params: { file: id },
  runsOn: { pool: "render", ...runsOn },
  heartbeatSeconds: 5,
  ...extra,
});

describe.each(BACKEND_KINDS)("external workers (%s)", PATIENT, (kind) => {
  async function withBackend(run: (backend: Backend) => Promise<void>, leaseSeconds?: number) {
    const backend = await createBackend(kind, {
      sweep: fastSweep,
      ...(leaseSeconds === undefined ? {} : { leaseSeconds }),
    });
    try {
      await run(backend);
    } finally {
      await backend.cleanup();
    }
  }

  it("places each task only on a worker whose executors, capabilities and lists allow it", async () => {
    await withBackend(async (backend) => {
      const { engine } = backend;
      const gpu = await engine.registerWorker({
        workerId: `gpu-${kind}`,
        pool: "render",
        executors: ["ffmpeg"],
        capabilities: { gpu: "nvidia" },
        labels: ["high-mem"],
        maxParallel: 10,
      });
      const cpu = await engine.registerWorker({
        workerId: `cpu-${kind}`,
        pool: "render",
        executors: [],
        capabilities: { gpu: "none" },
        labels: [],
        maxParallel: 10,
      });
      await engine.registerWorkflow({
        name: "placed",
        nodes: [
          external("needs-ffmpeg", { executors: ["ffmpeg"] }),
          external("needs-nvidia", { capabilities: { gpu: "nvidia" } }),
          external("needs-label", { labels: ["high-mem"] }),
          external("only-cpu", { allowedWorkers: [cpu.workerId] }),
          external("not-gpu", { forbiddenWorkers: [gpu.workerId] }),
          external("other-pool", { pool: "elsewhere" }),
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "placed" });
      await deliver(backend);
      const takenBy = new Map<string, string>();
      for (const worker of [
        cpu.workerId,
        gpu.workerId,
        cpu.workerId,
        gpu.workerId,
        cpu.workerId,
        gpu.workerId,
      ]) {
        const task = await engine.pollTask(worker, { waitSeconds: 0 });
        if (task) takenBy.set(task.nodeId, worker);
      }
      expect(Object.fromEntries(takenBy)).toEqual({
        "needs-ffmpeg": gpu.workerId,
        "needs-nvidia": gpu.workerId,
        "needs-label": gpu.workerId,
        "only-cpu": cpu.workerId,
        "not-gpu": cpu.workerId,
      });
      const view = await engine.describeExecution(executionId);
      expect(view.nodes.find((n) => n.id === "other-pool")?.status).toBe("QUEUED");
      expect(view.nodes.find((n) => n.id === "needs-ffmpeg")).toMatchObject({
        status: "RUNNING",
        workerId: gpu.workerId,
      });
      await engine.cancelExecution(executionId);
    });
  });

  it("never gives a worker more than its maxParallel, nor more of a node than maxParallelPerWorker", async () => {
    await withBackend(async (backend) => {
      const { engine } = backend;
      const worker = await engine.registerWorker({
        pool: "render",
        executors: [],
        capabilities: {},
        labels: [],
        maxParallel: 3,
      });
      // A pool's offers are taken oldest first within a shard, not across the pool (docs/workers.md),
      // so each bound is shown on offers whatever order a poll meets them in.
      await engine.registerWorkflow({
        name: "limited",
        nodes: [external("b1", {}), external("b2", {}), external("b3", {})],
      });
      await engine.registerWorkflow({
        name: "one-a-worker",
        nodes: [external("a1", { maxParallelPerWorker: 1 })],
      });
      // Six offers: three at most for the worker.
      const first = await engine.createExecution({ workflow: "limited" });
      const second = await engine.createExecution({ workflow: "limited" });
      await deliver(backend);
      const taken: ExternalTask[] = [];
      for (let i = 0; i < 8; i++) {
        const task = await engine.pollTask(worker.workerId, { waitSeconds: 0 });
        if (task) taken.push(task);
      }
      expect(taken).toHaveLength(3);
      const [workers] = [(await engine.listWorkers({ limit: 100 })).workers];
      expect(workers.find((w) => w.workerId === worker.workerId)?.tasks).toHaveLength(3);
      // One ends: a slot frees, and the next task comes.
      await engine.completeTask(taken[0]!.taskToken, { done: 1 });
      const next = await engine.pollTask(worker.workerId, { waitSeconds: 0 });
      expect(next).toBeDefined();
      await engine.cancelExecution(first.executionId);
      await engine.cancelExecution(second.executionId);

      // Node a1 offered twice (two executions), to a worker with room for three: one a1 at a time.
      const other = await engine.registerWorker({
        pool: "render",
        executors: [],
        capabilities: {},
        labels: [],
        maxParallel: 3,
      });
      const a = await engine.createExecution({ workflow: "one-a-worker" });
      const b = await engine.createExecution({ workflow: "one-a-worker" });
      await deliver(backend);
      const ones: ExternalTask[] = [];
      for (let i = 0; i < 6; i++) {
        const task = await engine.pollTask(other.workerId, { waitSeconds: 0 });
        if (task) ones.push(task);
      }
      expect(ones.map((t) => t.nodeId)).toEqual(["a1"]);
      // It ends: the other a1 comes.
      await engine.completeTask(ones[0]!.taskToken, { done: 1 });
      const again = await engine.pollTask(other.workerId, { waitSeconds: 0 });
      expect(again).toMatchObject({ nodeId: "a1" });
      expect(again?.executionId).not.toBe(ones[0]!.executionId);
      // The first a1's execution succeeded with it; the other's is cancelled.
      expect([a.executionId, b.executionId]).toContain(again?.executionId);
      await engine.cancelExecution(again!.executionId);
    });
  });

  it("registers, heartbeats, turns stale then dead when silent, and deregisters giving up its tasks", async () => {
    await withBackend(async (backend) => {
      const { engine, store } = backend;
      const worker = await engine.registerWorker({
        pool: "render",
        executors: [],
        capabilities: {},
        labels: [],
        maxParallel: 2,
      });
      expect(worker.heartbeatSeconds).toBeGreaterThan(0);
      expect(
        (await engine.listWorkers({ limit: 100 })).workers.find((w) => w.workerId === worker.workerId)
          ?.status,
      ).toBe("healthy");
      // Silence, as the record sees it: its last heartbeat long ago.
      const record = (await store.getWorker(worker.workerId))!;
      const { holds: _holds, version: _version, ...fields } = record;
      const beat = record.heartbeatSeconds * 1000;
      await store.putWorker({ ...fields, heartbeatAt: Date.now() - 3 * beat }, 0);
      expect(
        (await engine.listWorkers({ limit: 100 })).workers.find((w) => w.workerId === worker.workerId)
          ?.status,
      ).toBe("stale");
      await store.putWorker({ ...fields, heartbeatAt: Date.now() - 10 * beat }, 0);
      expect(
        (await engine.listWorkers({ limit: 100 })).workers.find((w) => w.workerId === worker.workerId)
          ?.status,
      ).toBe("dead");
      await engine.workerHeartbeat(worker.workerId);
      expect(
        (await engine.listWorkers({ limit: 100 })).workers.find((w) => w.workerId === worker.workerId)
          ?.status,
      ).toBe("healthy");

      await engine.registerWorkflow({
        name: "leaving",
        nodes: [external("job", {}, { retry: { backoff: { initialSeconds: 0 } } })],
      });
      const { executionId } = await engine.createExecution({ workflow: "leaving" });
      const task = await pollUntilTask(backend, worker.workerId, "the job");
      expect(await engine.deregisterWorker(worker.workerId)).toEqual({ released: 1 });
      expect(
        (await engine.listWorkers({ limit: 100 })).workers.some((w) => w.workerId === worker.workerId),
      ).toBe(false);
      // Its task is given up at once: retried as attempt 2, and its token is stale.
      const view = await engine.describeExecution(executionId);
      expect(view.nodes[0]).toMatchObject({ status: "QUEUED", attempt: 2 });
      await expect(engine.completeTask(task.taskToken, "late")).rejects.toSatisfy((e) =>
        hasCode(e, "Conflict"),
      );
      await expect(engine.workerHeartbeat(worker.workerId)).rejects.toSatisfy((e) => hasCode(e, "NotFound"));
      await engine.cancelExecution(executionId);
    });
  });

  it("moves a crashed worker's task to a healthy worker as attempt 2, with a new idempotency key", async () => {
    await withBackend(async (backend) => {
      const { engine } = backend;
      const reg = { pool: "render", executors: [], capabilities: {}, labels: [], maxParallel: 1 };
      const doomed = await engine.registerWorker({ ...reg, workerId: `doomed-${kind}` });
      const healthy = await engine.registerWorker({ ...reg, workerId: `healthy-${kind}` });
      await engine.registerWorkflow({
        name: "crashy",
        nodes: [
          external(
            "job",
            { allowedWorkers: [doomed.workerId, healthy.workerId] },
            { heartbeatSeconds: 1, retry: { backoff: { initialSeconds: 0 } } },
          ),
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "crashy" });
      const first = await pollUntilTask(backend, doomed.workerId, "attempt 1");
      expect(first.attempt).toBe(1);
      // The doomed worker dies: no heartbeat ever again. Its lease (2 heartbeats) expires; the
      // sweeper retries the node and offers attempt 2, which the healthy worker takes.
      const second = await waitForProgress("attempt 2 on the healthy worker", async () => {
        await engine.sweep({ force: true });
        await deliver(backend);
        const task = await engine.pollTask(healthy.workerId, { waitSeconds: 0 });
        return task
          ? { done: true, value: task }
          : { done: false, progress: "waiting for the lease to expire" };
      });
      expect(second).toMatchObject({ nodeId: "job", attempt: 2 });
      expect(second.idempotencyKey).not.toBe(first.idempotencyKey);
      // The dead worker's late report is refused; the healthy one's completes the execution.
      await expect(engine.completeTask(first.taskToken, "zombie")).rejects.toSatisfy((e) =>
        hasCode(e, "Conflict"),
      );
      await engine.completeTask(second.taskToken, { by: healthy.workerId });
      const view = await engine.describeExecution(executionId);
      expect(view.status).toBe("SUCCEEDED");
      expect(view.output).toEqual({ job: { by: healthy.workerId } });
      // Its hold was released when the lease was recovered, so the dead worker's record holds nothing.
      const { workers } = await engine.listWorkers({ limit: 100 });
      expect(workers.find((w) => w.workerId === doomed.workerId)?.tasks).toEqual([]);
    });
  });

  it("survives a restart of the coordinator while workers hold tasks", async () => {
    await withBackend(async (backend) => {
      const { engine } = backend;
      const worker = await engine.registerWorker({
        pool: "render",
        executors: [],
        capabilities: {},
        labels: [],
        maxParallel: 1,
      });
      await engine.registerWorkflow({
        name: "restarted",
        nodes: [
          external("job", {}),
          { id: "after", type: "pass", dependsOn: ["job"], params: { value: "{% deps.job %}" } },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "restarted", input: { n: 1 } });
      const task = await pollUntilTask(backend, worker.workerId, "the job");
      expect(task.input).toEqual({ n: 1 });
      // A new engine over the same tables and queues: nothing of the first one's memory is needed.
      const restarted = new Engine(
        {
          store: backend.store,
          blobs: backend.blobs,
          queue: backend.queue,
          events: new MemoryEventPublisher(),
          clock: systemClockFor(),
          ids: idsFor(),
        },
        createTaskRegistry(),
        { sweep: fastSweep },
      );
      expect((await restarted.heartbeatTask(task.taskToken)).cancelRequested).toBe(false);
      await restarted.workerHeartbeat(worker.workerId);
      await restarted.completeTask(task.taskToken, "rendered");
      const status = await waitForProgress("the execution to end", async () => {
        await deliver({ engine: restarted, consumer: backend.consumer });
        const view = await restarted.describeExecution(executionId);
        return view.status === "SUCCEEDED"
          ? { done: true, value: view }
          : { done: false, progress: view.status };
      });
      expect(status.output).toEqual({ after: "rendered" });
    });
  });

  it("tells a worker to stop a task of a cancelled execution, on both heartbeats", async () => {
    await withBackend(async (backend) => {
      const { engine } = backend;
      const worker = await engine.registerWorker({
        pool: "render",
        executors: [],
        capabilities: {},
        labels: [],
        maxParallel: 1,
      });
      await engine.registerWorkflow({ name: "stopped", nodes: [external("job", {})] });
      const { executionId } = await engine.createExecution({ workflow: "stopped" });
      const task = await pollUntilTask(backend, worker.workerId, "the job");
      await engine.cancelExecution(executionId);
      expect(await engine.heartbeatTask(task.taskToken)).toEqual({ cancelRequested: true });
      const { cancellations } = await engine.workerHeartbeat(worker.workerId);
      expect(cancellations.map((c) => c.nodeId)).toEqual(["job"]);
      // It stops and says so: the node ends CANCELLED, and a completion afterwards is refused.
      await engine.failTask(task.taskToken, { name: "Cancelled", message: "stopped", retryable: false });
      const view = await engine.describeExecution(executionId);
      expect(view.nodes[0]?.status).toBe("CANCELLED");
      await expect(engine.completeTask(task.taskToken, "late")).rejects.toSatisfy((e) =>
        hasCode(e, "Conflict"),
      );
    });
  });
});

function systemClockFor(): Clock {
  return {
    now: () => Date.now(),
    sleep: async (ms) => {
      await sleep(ms);
    },
  };
}

function idsFor() {
  return { executionId: () => crypto.randomUUID(), token: () => crypto.randomUUID(), random: Math.random };
}

describe("external workers on a virtual clock", () => {
  it("keeps a task of hours alive by heartbeats across many lease periods, then fails it at its timeout", async () => {
    let now = Date.UTC(2026, 10, 24);
    const clock: Clock = {
      now: () => now,
      sleep: async (ms) => {
        now += ms;
      },
    };
    const store = new MemoryStore();
    const queue = new MemoryQueue({ clock });
    const engine = new Engine(
      {
        store,
        blobs: new MemoryBlobStore(),
        queue,
        events: new MemoryEventPublisher(),
        clock,
        ids: idsFor(),
      },
      createTaskRegistry(),
      { sweep: fastSweep },
    );
    const worker = await engine.registerWorker({
      pool: "render",
      executors: [],
      capabilities: {},
      labels: [],
      maxParallel: 1,
    });
    await engine.registerWorkflow({
      name: "hours",
      nodes: [
        {
          id: "render",
          type: "transcode",
          runsOn: { pool: "render" },
          timeoutSeconds: 6 * 3600,
          heartbeatSeconds: 60,
          retry: { maxAttempts: 1 },
        },
      ],
    });
    const { executionId } = await engine.createExecution({ workflow: "hours" });
    await deliver({ engine, consumer: queue });
    const task = (await engine.pollTask(worker.workerId, { waitSeconds: 0 }))!;
    expect(task.heartbeatSeconds).toBe(60);
    // Five hours of heartbeats every minute: 150 lease periods of two minutes, with sweeps between.
    for (let minute = 0; minute < 5 * 60; minute++) {
      now += 60_000;
      expect((await engine.heartbeatTask(task.taskToken)).cancelRequested).toBe(false);
      await engine.workerHeartbeat(worker.workerId);
      if (minute % 10 === 0) await engine.sweep({ force: true });
    }
    const running = await engine.describeExecution(executionId);
    expect(running.nodes[0]).toMatchObject({ status: "RUNNING", attempt: 1 });
    // Past its six hours, the next heartbeat ends the attempt (TimeoutError; no attempts left).
    now += 61 * 60_000;
    expect((await engine.heartbeatTask(task.taskToken)).cancelRequested).toBe(true);
    const ended = await engine.describeExecution(executionId);
    expect(ended.status).toBe("FAILED");
    expect(ended.nodes[0]?.error?.name).toBe("TimeoutError");
  });
});
