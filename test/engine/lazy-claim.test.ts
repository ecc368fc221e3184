/**
 * Lazy claims (shared/engine/attempt-fence.ts): a node's first attempt that ends within
 * `claimAfterSeconds` writes its record once — its ending carries its claim — and one that runs
 * longer writes its claim then, as its first heartbeat. In memory, on a manual clock.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { MemoryBlobStore } from "../../shared/adapters/memory/blobs.js";
import { MemoryEventPublisher } from "../../shared/adapters/memory/events.js";
import { MemoryQueue } from "../../shared/adapters/memory/queue.js";
import { MemoryStore } from "../../shared/adapters/memory/store.js";
import { randomIds } from "../../shared/adapters/system.js";
import { RetryableError } from "../../shared/domain/errors.js";
import type { NodeRecord } from "../../shared/domain/records.js";
import { Engine, type EngineOptions } from "../../shared/engine/engine.js";
import { HISTORY } from "../../shared/engine/lifecycle.js";
import type { EnginePorts, NodePatch, Store, TaskMessage } from "../../shared/ports.js";
import { createTaskRegistry } from "../../shared/tasks/builtins.js";
import { defineTask } from "../../shared/tasks/task-type.js";
import { interceptTransitions } from "../support/faults.js";
import { ManualClock } from "../support/manual-clock.js";

interface Write {
  nodeId: string;
  patch: NodePatch;
  ok: boolean;
}

/** A handler that sleeps `ms` (on the engine's clock) and counts its runs, then gives `{ slept }`. */
function sleeper(runs: string[]) {
  return defineTask({
    type: "sleeper",
    params: z.object({ ms: z.number() }),
    run: async ({ params, context }) => {
      runs.push(`${context.nodeId}#${context.attempt}`);
      await context.sleep(params.ms);
      return { slept: params.ms };
    },
  });
}

/** Fails its first attempt (retryably), then completes. */
const flaky = defineTask({
  type: "flaky",
  params: z.object({}),
  run: async ({ context }) => {
    if (context.attempt === 1) throw new RetryableError("first attempt fails");
    return { attempt: context.attempt };
  },
});

function world(options: EngineOptions = {}, wrap: (store: Store) => Store = (s) => s) {
  const clock = new ManualClock();
  const queue = new MemoryQueue({ clock });
  const writes: Write[] = [];
  const runs: string[] = [];
  const store = new MemoryStore();
  const ports: EnginePorts = {
    store: wrap(
      interceptTransitions(store, async (call, proceed) => {
        const result = await proceed();
        writes.push({ nodeId: call.nodeId, patch: call.patch, ok: result.ok });
        return result;
      }),
    ),
    blobs: new MemoryBlobStore(),
    queue,
    events: new MemoryEventPublisher(),
    clock,
    ids: randomIds,
  };
  const engine = new Engine(ports, createTaskRegistry([sleeper(runs), flaky]), {
    maxContinuations: 0,
    ...options,
  });
  const next = async (): Promise<TaskMessage[]> =>
    (await queue.receive({ maxMessages: 10, waitSeconds: 0, visibilityTimeoutSeconds: 3600 })).map(
      (m) => JSON.parse(m.body) as TaskMessage,
    );
  return { clock, store, ports, engine, writes, runs, next };
}

const accepted = (writes: readonly Write[], nodeId: string) =>
  writes.filter((w) => w.nodeId === nodeId && w.ok).map((w) => w.patch.status ?? "(lease)");

describe("lazy claims", () => {
  it("a node that ends within claimAfterSeconds writes its record once, its completion carrying the claim's events", async () => {
    const w = world();
    await w.engine.registerWorkflow({
      name: "one",
      nodes: [{ id: "a", type: "sleeper", params: { ms: 1000 } }],
    });
    const { executionId } = await w.engine.createExecution({ workflow: "one" });
    const [message] = await w.next();
    await w.clock.drive(w.engine.handleTask(message!, { receiveCount: 1 }));
    expect(accepted(w.writes, "a")).toEqual(["COMPLETED"]);
    const a = await w.store.getNode(executionId, "a");
    expect(a).toMatchObject({ status: "COMPLETED", attempt: 1 });
    expect(a?.startedAt).toBeDefined();
    expect(a?.queuedAt).toBeDefined();
    expect(a!.finishedAt! - a!.startedAt!).toBe(1000);
    const types = (await w.store.listHistory(executionId)).filter((e) => e.nodeId === "a").map((e) => e.type);
    expect(types).toEqual([HISTORY.nodeQueued, HISTORY.nodeStarted, HISTORY.nodeCompleted]);
    expect((await w.engine.describeExecution(executionId)).status).toBe("SUCCEEDED");
  });

  it("a node that runs longer writes its claim at claimAfterSeconds (RUNNING, seen by readers), then its completion", async () => {
    const w = world({ claimAfterSeconds: 2 });
    await w.engine.registerWorkflow({
      name: "long",
      nodes: [{ id: "a", type: "sleeper", params: { ms: 30_000 } }],
    });
    const { executionId } = await w.engine.createExecution({ workflow: "long" });
    const [message] = await w.next();
    let seen: NodeRecord | undefined;
    const started = w.clock.now();
    const running = w.engine.handleTask(message!, { receiveCount: 1 });
    // Drive until the claim is written; look while the handler still sleeps.
    await w.clock.drive(
      (async () => {
        while (!(await w.store.getNode(executionId, "a"))) await w.clock.sleep(500);
        seen = await w.store.getNode(executionId, "a");
      })(),
    );
    expect(seen?.status).toBe("RUNNING");
    expect(seen?.lease).toBeDefined();
    expect(w.clock.now() - started).toBeLessThanOrEqual(2500);
    await w.clock.drive(running);
    // Claimed at 2 s, renewed at 22 s (a third of the 60 s lease later), completed at 30 s.
    expect(accepted(w.writes, "a")).toEqual(["RUNNING", "(lease)", "COMPLETED"]);
    const types = (await w.store.listHistory(executionId)).filter((e) => e.nodeId === "a").map((e) => e.type);
    expect(types).toEqual([HISTORY.nodeQueued, HISTORY.nodeStarted, HISTORY.nodeCompleted]);
  });

  it("claimAfterSeconds 0 claims before the handler runs, as before", async () => {
    const w = world({ claimAfterSeconds: 0 });
    await w.engine.registerWorkflow({
      name: "eager",
      nodes: [{ id: "a", type: "sleeper", params: { ms: 10 } }],
    });
    await w.engine.createExecution({ workflow: "eager" });
    const [message] = await w.next();
    await w.clock.drive(w.engine.handleTask(message!, { receiveCount: 1 }));
    expect(accepted(w.writes, "a")).toEqual(["RUNNING", "COMPLETED"]);
  });

  it("a first attempt that fails retryably writes its retry once: queued, started and retry scheduled in one write", async () => {
    const w = world();
    await w.engine.registerWorkflow({
      name: "retry",
      nodes: [
        { id: "a", type: "flaky", params: {}, retry: { maxAttempts: 2, backoff: { initialSeconds: 1 } } },
      ],
    });
    const { executionId } = await w.engine.createExecution({ workflow: "retry" });
    const [first] = await w.next();
    await w.clock.drive(w.engine.handleTask(first!, { receiveCount: 1 }));
    expect(accepted(w.writes, "a")).toEqual(["QUEUED"]);
    const types = (await w.store.listHistory(executionId)).filter((e) => e.nodeId === "a").map((e) => e.type);
    expect(types).toEqual([HISTORY.nodeQueued, HISTORY.nodeStarted, HISTORY.nodeRetryScheduled]);
    // The retry is claimed before it runs (its record exists, QUEUED): only first attempts are lazy.
    await w.clock.drive(w.clock.sleep(1000));
    const [second] = await w.next();
    expect(second).toMatchObject({ nodeId: "a", attempt: 2 });
    await w.clock.drive(w.engine.handleTask(second!, { receiveCount: 1 }));
    expect(accepted(w.writes, "a")).toEqual(["QUEUED", "RUNNING", "COMPLETED"]);
    expect((await w.engine.describeExecution(executionId)).status).toBe("SUCCEEDED");
  });

  it("cancelled while an unclaimed attempt runs: the cleanup cancels the node, its completion is refused and nothing follows", async () => {
    const w = world();
    await w.engine.registerWorkflow({
      name: "ab",
      nodes: [
        { id: "a", type: "sleeper", params: { ms: 1000 } },
        { id: "b", type: "sleeper", params: { ms: 1 }, dependsOn: ["a"] },
      ],
    });
    const { executionId } = await w.engine.createExecution({ workflow: "ab" });
    const [message] = await w.next();
    const running = w.engine.handleTask(message!, { receiveCount: 1 });
    await w.clock.drive(w.clock.sleep(500));
    await w.engine.cancelExecution(executionId, "stop");
    await w.clock.drive(running);
    expect((await w.store.getNode(executionId, "a"))?.status).toBe("CANCELLED");
    expect((await w.store.getNode(executionId, "b"))?.status).toBe("CANCELLED");
    expect(await w.next()).toEqual([]);
    const history = await w.store.listHistory(executionId);
    expect(history.filter((e) => e.type === HISTORY.nodeStarted || e.type === HISTORY.nodeCompleted)).toEqual(
      [],
    );
    expect((await w.engine.describeExecution(executionId)).status).toBe("CANCELLED");
  });

  it("two copies of a first attempt run at once: one completion, the other's refused; a redelivery of the completed node runs no handler", async () => {
    const w = world();
    await w.engine.registerWorkflow({
      name: "copies",
      nodes: [
        { id: "a", type: "sleeper", params: { ms: 100 } },
        { id: "b", type: "sleeper", params: { ms: 1 }, dependsOn: ["a"] },
      ],
    });
    const { executionId } = await w.engine.createExecution({ workflow: "copies" });
    const [message] = await w.next();
    await w.clock.drive(
      Promise.all([
        w.engine.handleTask(message!, { receiveCount: 1 }),
        w.engine.handleTask(message!, { receiveCount: 1 }),
      ]),
    );
    expect(w.runs).toEqual(["a#1", "a#1"]);
    expect(w.writes.filter((x) => x.nodeId === "a").map((x) => [x.patch.status, x.ok])).toEqual([
      ["COMPLETED", true],
      ["COMPLETED", false],
    ]);
    expect((await w.next()).map((m) => m.nodeId)).toEqual(["b"]);
    // A redelivery reads the node first (a copy is likely): completed, so no handler runs and its
    // propagation is driven again (b's message is sent again; b's own claim takes one).
    await w.clock.drive(w.engine.handleTask(message!, { receiveCount: 2 }));
    expect(w.runs).toEqual(["a#1", "a#1"]);
    expect((await w.next()).map((m) => m.nodeId)).toEqual(["b"]);
    const history = await w.store.listHistory(executionId);
    expect(history.filter((e) => e.nodeId === "a" && e.type === HISTORY.nodeStarted)).toHaveLength(1);
    expect(history.filter((e) => e.nodeId === "a" && e.type === HISTORY.nodeCompleted)).toHaveLength(1);
  });

  it("a claim written but answered with an error is found to be its own: the completion goes on under its lease", async () => {
    let failedOnce = false;
    const w = world({ claimAfterSeconds: 1 }, (store) =>
      interceptTransitions(store, async (call, proceed) => {
        const result = await proceed();
        if (call.nodeId === "a" && call.patch.status === "RUNNING" && !failedOnce) {
          failedOnce = true;
          throw new Error("the answer was lost");
        }
        return result;
      }),
    );
    await w.engine.registerWorkflow({
      name: "lost",
      nodes: [{ id: "a", type: "sleeper", params: { ms: 5000 } }],
    });
    const { executionId } = await w.engine.createExecution({ workflow: "lost" });
    const [message] = await w.next();
    await w.clock.drive(w.engine.handleTask(message!, { receiveCount: 1 }));
    expect(failedOnce).toBe(true);
    expect((await w.store.getNode(executionId, "a"))?.status).toBe("COMPLETED");
    expect((await w.engine.describeExecution(executionId)).status).toBe("SUCCEEDED");
  });
  it("a worker that dies right after its claim is written is looked at by the sweeper: the lease is recovered", async () => {
    // The process dies as its claim's answer comes back: the claim is in the table, nothing after it
    // is written. The execution (its entries sent before its record) was in no sweep index.
    let died = false;
    const w = world({ claimAfterSeconds: 1, leaseSeconds: 10, sweep: { graceMs: 1000 } }, (store) =>
      interceptTransitions(store, async (call, proceed) => {
        if (died) return new Promise<never>(() => {});
        const result = await proceed();
        if (call.nodeId === "a" && call.patch.status === "RUNNING") {
          died = true;
          return new Promise<never>(() => {});
        }
        return result;
      }),
    );
    await w.engine.registerWorkflow({
      name: "killed",
      nodes: [{ id: "a", type: "sleeper", params: { ms: 60_000 }, retry: { maxAttempts: 3 } }],
    });
    const { executionId } = await w.engine.createExecution({ workflow: "killed" });
    expect((await w.store.getExecution(executionId))?.sweepAt).toBeUndefined();
    const [message] = await w.next();
    void w.engine.handleTask(message!, { receiveCount: 1 });
    await w.clock.drive(
      (async () => {
        while (!died) await w.clock.sleep(100);
      })(),
    );
    const claimed = await w.store.getNode(executionId, "a");
    expect(claimed?.status).toBe("RUNNING");
    const sweepAt = (await w.store.getExecution(executionId))?.sweepAt;
    expect(sweepAt).toBeGreaterThan(claimed!.lease!.expiresAt);
    // The lease over, the sweep due: the sweeper takes the node over as attempt 2.
    died = false;
    await w.clock.drive(w.clock.sleep(sweepAt! - w.clock.now()));
    const report = await w.engine.sweep({ force: true });
    expect(report.recoveredLeases).toBe(1);
    const after = await w.store.getNode(executionId, "a");
    expect(after?.attempt).toBe(2);
  });
});
