/**
 * How the worker spends its invocation's time (shared/engine/worker-time.ts): no attempt outlives
 * its invocation (a cut attempt fails with a retryable WorkerTimeout naming the limit, not a
 * LeaseExpired minutes later), registration refuses node timeouts the worker cannot give, and
 * continuation runs a chain under the deployed defaults by its expected run times. In memory, on a
 * manual clock: time moves only when nothing else can run, so nothing here depends on real time.
 */
import type { Context, SQSEvent } from "aws-lambda";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createWorkerHandler } from "../../functions/worker/app.js";
import { createLambdaContext } from "../../local/lambda-context.js";
import { MemoryBlobStore } from "../../shared/adapters/memory/blobs.js";
import { MemoryEventPublisher } from "../../shared/adapters/memory/events.js";
import { MemoryQueue } from "../../shared/adapters/memory/queue.js";
import { MemoryStore } from "../../shared/adapters/memory/store.js";
import { randomIds } from "../../shared/adapters/system.js";
import { Engine, type EngineOptions } from "../../shared/engine/engine.js";
import { HISTORY } from "../../shared/engine/lifecycle.js";
import type { EnginePorts, ReceivedMessage, Store, TaskMessage } from "../../shared/ports.js";
import { createTaskRegistry } from "../../shared/tasks/builtins.js";
import { defineTask, type TaskType } from "../../shared/tasks/task-type.js";
import { interceptTransitions } from "../support/faults.js";
import { ManualClock } from "../support/manual-clock.js";

interface World {
  clock: ManualClock;
  ports: EnginePorts;
  queue: MemoryQueue;
  engine(options?: EngineOptions): Engine;
  /** Task messages sent so far. */
  sent: TaskMessage[];
}

function world(tasks: TaskType<unknown>[] = [], wrapStore: (store: Store) => Store = (s) => s): World {
  const clock = new ManualClock();
  const queue = new MemoryQueue({ clock });
  const sent: TaskMessage[] = [];
  const ports: EnginePorts = {
    store: wrapStore(new MemoryStore()),
    blobs: new MemoryBlobStore(),
    queue: {
      send: async (messages, options) => {
        sent.push(...messages);
        await queue.send(messages, options);
      },
    },
    events: new MemoryEventPublisher(),
    clock,
    ids: randomIds,
  };
  return {
    clock,
    ports,
    queue,
    sent,
    engine: (options = {}) => new Engine(ports, createTaskRegistry(tasks), options),
  };
}

async function receive(w: World): Promise<ReceivedMessage[]> {
  return w.queue.receive({ maxMessages: 10, waitSeconds: 0, visibilityTimeoutSeconds: 3600 });
}

const sqsEvent = (messages: readonly ReceivedMessage[]): SQSEvent => ({
  Records: messages.map((m) => ({
    messageId: m.messageId,
    receiptHandle: m.receiptHandle,
    body: m.body,
    attributes: {
      ApproximateReceiveCount: String(m.receiveCount),
      SentTimestamp: String(m.sentAt),
      SenderId: "000000000000",
      ApproximateFirstReceiveTimestamp: String(m.sentAt),
    },
    messageAttributes: {},
    md5OfBody: "",
    eventSource: "aws:sqs",
    eventSourceARN: "arn:aws:sqs:local:000000000000:tasks",
    awsRegion: "local",
  })),
});

/** Records each run's deadline and time left, then holds the worker until it is aborted. */
function holdTask(runs: Array<{ deadline: number; leftMs: number }>): TaskType<unknown> {
  return defineTask({
    type: "hold",
    params: z.object({}).strict().optional(),
    run: async ({ context }) => {
      runs.push({ deadline: context.deadline, leftMs: context.deadline - context.now() });
      await context.sleep(24 * 3600_000);
      return null;
    },
  }) as TaskType<unknown>;
}

describe("no attempt outlives its worker invocation", () => {
  it("ends a node whose timeout exceeds the invocation's remaining time with WorkerTimeout, not LeaseExpired", async () => {
    const runs: Array<{ deadline: number; leftMs: number }> = [];
    const w = world([holdTask(runs)]);
    // Registered while the worker's timeout was 900 s; the deployment now runs a 300 s worker.
    await w.engine({ workerTimeoutSeconds: 900 }).registerWorkflow({
      name: "long",
      nodes: [{ id: "crunch", type: "hold", timeoutSeconds: 895 }],
    });
    const engine = w.engine({ workerTimeoutSeconds: 300 });
    const { executionId } = await engine.createExecution({ workflow: "long" });
    const handler = createWorkerHandler(engine);

    // The worker handler, with the Lambda context of a 300 s function: the real deadline rule.
    const context: Context = createLambdaContext("weft-worker", 300_000, w.clock.now);
    const invokedAt = w.clock.now();
    const response = await w.clock.drive(handler(sqsEvent(await receive(w)), context));
    expect(response.batchItemFailures).toEqual([]);

    // The handler was given the invocation's deadline (its end less the 5 s margin), not its own 895 s.
    expect(runs).toHaveLength(1);
    expect(runs[0]!.deadline).toBe(invokedAt + 295_000);
    // …and it ended there, before Lambda's timeout would have killed the invocation.
    expect(w.clock.now()).toBeLessThan(invokedAt + 300_000);

    const node = await w.ports.store.getNode(executionId, "crunch");
    expect(node?.status).toBe("QUEUED");
    expect(node?.attempt).toBe(2);
    expect(node?.error?.name).toBe("WorkerTimeout");
    expect(node?.error?.retryable).toBe(true);
    expect(node?.error?.message).toContain("which had 295 s left for it (function timeout 300 s");
    expect(node?.error?.message).toContain(
      "node timeoutSeconds is 895, more than this worker can ever give (295 s): lower it or raise the worker timeout",
    );
    const history = await w.ports.store.listHistory(executionId);
    const retries = history.filter((e) => e.type === HISTORY.nodeRetryScheduled);
    expect(retries).toHaveLength(1);
    expect(JSON.stringify(retries[0])).toContain("WorkerTimeout");
    expect(JSON.stringify(history)).not.toContain("LeaseExpired");
  });

  it("fails the node for good when the cut attempts run out, naming the worker's limit", async () => {
    const runs: Array<{ deadline: number; leftMs: number }> = [];
    const w = world([holdTask(runs)]);
    await w.engine({ workerTimeoutSeconds: 900 }).registerWorkflow({
      name: "long",
      nodes: [{ id: "crunch", type: "hold", timeoutSeconds: 600, retry: { maxAttempts: 2 } }],
    });
    const engine = w.engine({ workerTimeoutSeconds: 60 });
    const { executionId } = await engine.createExecution({ workflow: "long" });
    const handler = createWorkerHandler(engine);
    for (let attempt = 1; attempt <= 2; attempt++) {
      // The retry's message is delayed by its backoff: let it come due.
      let messages = await receive(w);
      while (messages.length === 0) {
        await w.clock.drive(w.clock.sleep(1000));
        messages = await receive(w);
      }
      await w.clock.drive(
        handler(sqsEvent(messages), createLambdaContext("weft-worker", 60_000, w.clock.now)),
      );
    }
    expect(runs.map((run) => run.leftMs)).toEqual([55_000, 55_000]);
    const execution = await engine.describeExecution(executionId);
    expect(execution.status).toBe("FAILED");
    const node = execution.nodes.find((n) => n.id === "crunch");
    expect(node?.status).toBe("FAILED");
    expect(node?.error?.name).toBe("WorkerTimeout");
    expect(node?.error?.message).toContain("function timeout 60 s");
  });

  it("gives a node without timeoutSeconds what the worker can give: 295 s under a 300 s worker", async () => {
    const runs: Array<{ deadline: number; leftMs: number }> = [];
    const w = world([holdTask(runs)]);
    const engine = w.engine();
    await engine.registerWorkflow({ name: "plain", nodes: [{ id: "a", type: "hold" }] });
    const { executionId } = await engine.createExecution({ workflow: "plain" });
    const [message] = await receive(w);
    // No invocation deadline (a direct call): the node's own timeout ends it.
    await w.clock.drive(engine.handleTask(JSON.parse(message!.body) as TaskMessage, { receiveCount: 1 }));
    expect(runs[0]!.leftMs).toBe(295_000);
    const node = await w.ports.store.getNode(executionId, "a");
    expect(node?.error).toMatchObject({ name: "TimeoutError", message: expect.stringContaining("295 s") });
  });
});

describe("registration refuses node timeouts the worker cannot give", () => {
  it("refuses node and defaults timeouts above the worker timeout less its 5 s margin, naming the limit and the node", async () => {
    const engine = world().engine();
    const refused = await engine
      .registerWorkflow({
        name: "too-long",
        defaults: { timeoutSeconds: 600 },
        nodes: [
          { id: "a", type: "pass", timeoutSeconds: 295 },
          { id: "b", type: "pass", dependsOn: ["a"], timeoutSeconds: 296 },
        ],
      })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(refused).toMatchObject({ code: "InvalidDefinition" });
    const details = (refused as { details: Array<{ path: string; code: string; message: string }> }).details;
    expect(details.map((d) => [d.path, d.code])).toEqual([
      ["defaults.timeoutSeconds", "timeout_exceeds_worker"],
      ["nodes[1].timeoutSeconds", "timeout_exceeds_worker"],
    ]);
    expect(details[1]!.message).toBe(
      "node \"b\" has timeoutSeconds 296, but the worker gives a node at most 295 s (its function timeout of 300 s less 5 s kept for its last writes); lower it, or raise the worker's timeout (the stack's workerTimeout, WEFT_WORKER_TIMEOUT_SECONDS)",
    );
  });

  it("accepts up to the limit, which follows the worker timeout", async () => {
    const w = world();
    await expect(
      w.engine().registerWorkflow({ name: "fits", nodes: [{ id: "a", type: "pass", timeoutSeconds: 295 }] }),
    ).resolves.toMatchObject({ version: 1 });
    await expect(
      w
        .engine({ workerTimeoutSeconds: 900 })
        .registerWorkflow({ name: "long", nodes: [{ id: "a", type: "pass", timeoutSeconds: 895 }] }),
    ).resolves.toMatchObject({ version: 1 });
    expect(() => w.engine({ workerTimeoutSeconds: 5 })).toThrow(/workerTimeoutSeconds/);
  });
});

describe("continuation under the deployed defaults (300 s worker, default node timeouts)", () => {
  it("runs a chain in one invocation: one message for 17 nodes, not one per node", async () => {
    const w = world();
    const engine = w.engine();
    const nodes = Array.from({ length: 20 }, (_, i) => ({
      id: `c${i}`,
      type: "pass",
      ...(i > 0 ? { dependsOn: [`c${i - 1}`] } : {}),
    }));
    await engine.registerWorkflow({ name: "chain", nodes });
    const { executionId } = await engine.createExecution({ workflow: "chain" });
    const handler = createWorkerHandler(engine);
    for (let invocations = 0; invocations < 5; invocations++) {
      const messages = await receive(w);
      if (messages.length === 0) break;
      await w.clock.drive(
        handler(sqsEvent(messages), createLambdaContext("weft-worker", 300_000, w.clock.now)),
      );
    }
    expect((await engine.describeExecution(executionId)).status).toBe("SUCCEEDED");
    // The entry's message, then c17's after 16 continuations: 2 sends for 20 nodes.
    expect(w.sent.map((m) => m.nodeId)).toEqual(["c0", "c17"]);
  });

  it("sends a child whose expected run time does not fit twice in what is left, and runs one that does", async () => {
    const w = world();
    const engine = w.engine();
    await engine.registerWorkflow({
      name: "sleepy",
      nodes: [
        { id: "a", type: "pass" },
        // `sleep` declares its ms: 1 s fits twice in 295 s, 200 s does not.
        { id: "short", type: "sleep", dependsOn: ["a"], params: { ms: 1000 } },
        { id: "long", type: "sleep", dependsOn: ["short"], params: { ms: 200_000 } },
      ],
    });
    await engine.createExecution({ workflow: "sleepy" });
    const handler = createWorkerHandler(engine);
    await w.clock.drive(
      handler(sqsEvent(await receive(w)), createLambdaContext("weft-worker", 300_000, w.clock.now)),
    );
    expect(w.sent.map((m) => m.nodeId)).toEqual(["a", "long"]);
  });

  it("continues a child whose only attempt a cut would spend only when its whole timeout fits", async () => {
    const w = world();
    const engine = w.engine();
    await engine.registerWorkflow({
      name: "once",
      nodes: [
        { id: "a", type: "pass" },
        { id: "b", type: "pass", dependsOn: ["a"], retry: { maxAttempts: 1 } },
        { id: "c", type: "pass", dependsOn: ["b"], retry: { maxAttempts: 1 }, timeoutSeconds: 30 },
      ],
    });
    await engine.createExecution({ workflow: "once" });
    const handler = createWorkerHandler(engine);
    await w.clock.drive(
      handler(sqsEvent(await receive(w)), createLambdaContext("weft-worker", 300_000, w.clock.now)),
    );
    // b (295 s, one attempt) is sent rather than risked; c (30 s) then fits whole after b.
    expect(w.sent.map((m) => m.nodeId)).toEqual(["a", "b"]);
    await w.clock.drive(
      handler(sqsEvent(await receive(w)), createLambdaContext("weft-worker", 300_000, w.clock.now)),
    );
    expect(w.sent.map((m) => m.nodeId)).toEqual(["a", "b"]);
  });

  it("cuts a continued child that overruns at the invocation's deadline: a WorkerTimeout, retried in an invocation of its own", async () => {
    const runs: Array<{ deadline: number; leftMs: number }> = [];
    const w = world([holdTask(runs)]);
    const engine = w.engine();
    await engine.registerWorkflow({
      name: "overrun",
      nodes: [
        { id: "a", type: "sleep", params: { ms: 250_000 } },
        // Expected (by default) to take 10 s; it holds the worker until aborted.
        { id: "b", type: "hold", dependsOn: ["a"] },
      ],
    });
    const { executionId } = await engine.createExecution({ workflow: "overrun" });
    const handler = createWorkerHandler(engine);
    const invokedAt = w.clock.now();
    await w.clock.drive(
      handler(sqsEvent(await receive(w)), createLambdaContext("weft-worker", 300_000, w.clock.now)),
    );
    expect(runs).toHaveLength(1);
    expect(runs[0]!.deadline).toBe(invokedAt + 295_000);
    const b = await w.ports.store.getNode(executionId, "b");
    expect(b?.status).toBe("QUEUED");
    expect(b?.attempt).toBe(2);
    expect(b?.error?.name).toBe("WorkerTimeout");
    expect(b?.error?.message).toContain("it ran after another node in the same invocation");
  });
});

describe("continuation does not read the execution again, and cancellation still reaches the child", () => {
  /**
   * A chain a → b → c, continued in one invocation, cancelled between a's completion and b's claim
   * (`before`) or just after b's claim (`after`). Claims written before the handler runs
   * (claimAfterSeconds 0); test/engine/lazy-claim.test.ts has the same races for lazy claims.
   */
  async function cancelAroundClaim(when: "before" | "after") {
    let engine!: Engine;
    let executionId = "";
    let cancelled = false;
    const w = world([], (store) =>
      interceptTransitions(store, async (call, proceed) => {
        const claimOfB = call.nodeId === "b" && call.patch.status === "RUNNING";
        if (claimOfB && !cancelled && when === "before") {
          cancelled = true;
          await engine.cancelExecution(executionId, "stop");
        }
        const result = await proceed();
        if (claimOfB && !cancelled && when === "after") {
          cancelled = true;
          await engine.cancelExecution(executionId, "stop");
        }
        return result;
      }),
    );
    engine = w.engine({ claimAfterSeconds: 0 });
    await engine.registerWorkflow({
      name: "abc",
      nodes: [
        { id: "a", type: "pass" },
        { id: "b", type: "pass", dependsOn: ["a"] },
        { id: "c", type: "pass", dependsOn: ["b"] },
      ],
    });
    ({ executionId } = await engine.createExecution({ workflow: "abc" }));
    const [message] = await receive(w);
    await w.clock.drive(
      engine.handleTask(JSON.parse(message!.body) as TaskMessage, {
        receiveCount: 1,
        deadline: w.clock.now() + 295_000,
      }),
    );
    return { w, engine, executionId };
  }

  it("cancelled before the child's claim: the cleanup cancels the unclaimed child, so its claim is refused", async () => {
    const { w, engine, executionId } = await cancelAroundClaim("before");
    expect((await engine.describeExecution(executionId)).status).toBe("CANCELLED");
    expect((await w.ports.store.getNode(executionId, "b"))?.status).toBe("CANCELLED");
    // c never became ready: no message; the cleanup wrote it CANCELLED, with its event.
    expect((await w.ports.store.getNode(executionId, "c"))?.status).toBe("CANCELLED");
    expect(w.sent.map((m) => m.nodeId)).toEqual(["a"]);
    const history = await w.ports.store.listHistory(executionId);
    expect(history.filter((e) => e.type === HISTORY.nodeStarted).map((e) => e.nodeId)).toEqual(["a"]);
    expect(
      history
        .filter((e) => e.type === HISTORY.nodeCancelled)
        .map((e) => e.nodeId)
        .sort(),
    ).toEqual(["b", "c"]);
  });

  it("cancelled just after the child's claim: it is told to stop, its completion refused, and nothing follows it", async () => {
    const { w, engine, executionId } = await cancelAroundClaim("after");
    expect((await engine.describeExecution(executionId)).status).toBe("CANCELLED");
    expect((await w.ports.store.getNode(executionId, "b"))?.status).toBe("CANCELLED");
    // c never became ready: no message; the cleanup wrote it CANCELLED, with its event.
    expect((await w.ports.store.getNode(executionId, "c"))?.status).toBe("CANCELLED");
    expect(w.sent.map((m) => m.nodeId)).toEqual(["a"]);
    const history = await w.ports.store.listHistory(executionId);
    expect(history.filter((e) => e.type === HISTORY.nodeCompleted).map((e) => e.nodeId)).toEqual(["a"]);
    expect(
      history
        .filter((e) => e.type === HISTORY.nodeCancelled)
        .map((e) => e.nodeId)
        .sort(),
    ).toEqual(["b", "c"]);
  });

  it("an entry claimed after the end, by a worker that read the execution before it, is refused (its cleanup cancelled it)", async () => {
    let engine!: Engine;
    let executionId = "";
    let cancelled = false;
    const w = world([], (store) =>
      interceptTransitions(store, async (call, proceed) => {
        if (call.nodeId === "a" && call.patch.status === "RUNNING" && !cancelled) {
          // The worker read the execution RUNNING; the cancellation and its cleanup land now.
          cancelled = true;
          await engine.cancelExecution(executionId, "stop");
        }
        return proceed();
      }),
    );
    engine = w.engine({ claimAfterSeconds: 0 });
    await engine.registerWorkflow({
      name: "ab",
      nodes: [
        { id: "a", type: "pass" },
        { id: "b", type: "pass", dependsOn: ["a"] },
      ],
    });
    ({ executionId } = await engine.createExecution({ workflow: "ab" }));
    const [message] = await receive(w);
    await w.clock.drive(
      engine.handleTask(JSON.parse(message!.body) as TaskMessage, {
        receiveCount: 1,
        deadline: w.clock.now() + 295_000,
      }),
    );
    expect((await w.ports.store.getNode(executionId, "a"))?.status).toBe("CANCELLED");
    // b never became ready: the cleanup wrote it CANCELLED too, with its event.
    expect((await w.ports.store.getNode(executionId, "b"))?.status).toBe("CANCELLED");
    const history = await w.ports.store.listHistory(executionId);
    expect(history.filter((e) => e.type === HISTORY.nodeStarted)).toEqual([]);
    expect(
      history
        .filter((e) => e.type === HISTORY.nodeCancelled)
        .map((e) => e.nodeId)
        .sort(),
    ).toEqual(["a", "b"]);
  });

  it("reads the execution once per message, not once per continued node", async () => {
    const w = world();
    const reads: string[] = [];
    const store = w.ports.store;
    w.ports.store = new Proxy(store, {
      get(target, property, receiver) {
        if (property === "getExecution")
          return (...args: Parameters<Store["getExecution"]>) => {
            reads.push(args[0]);
            return target.getExecution(...args);
          };
        const value = Reflect.get(target, property, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const engine = w.engine();
    const nodes = Array.from({ length: 10 }, (_, i) => ({
      id: `c${i}`,
      type: "pass",
      ...(i > 0 ? { dependsOn: [`c${i - 1}`] } : {}),
    }));
    await engine.registerWorkflow({ name: "chain", nodes });
    const { executionId } = await engine.createExecution({ workflow: "chain" });
    const [message] = await receive(w);
    reads.length = 0;
    await w.clock.drive(
      engine.handleTask(JSON.parse(message!.body) as TaskMessage, {
        receiveCount: 1,
        deadline: w.clock.now() + 295_000,
      }),
    );
    // The task's own read, and none for the nine nodes continued after it.
    expect(reads).toEqual([executionId]);
    expect((await engine.describeExecution(executionId)).status).toBe("SUCCEEDED");
  });
});
