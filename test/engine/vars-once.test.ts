/**
 * A `vars` node's operation applies once per node (engine/vars.ts): under a duplicate delivery of
 * the message that runs it, two handlings at once, a crash between the variables' write and the
 * node's completion, and an `assign` of a node whose attempt is retried. In memory, on a manual
 * clock, driving the engine's handleTask by hand (as lazy-claim.test.ts does).
 */
import { describe, expect, it } from "vitest";
import { MemoryBlobStore } from "../../shared/adapters/memory/blobs.js";
import { MemoryEventPublisher } from "../../shared/adapters/memory/events.js";
import { MemoryQueue } from "../../shared/adapters/memory/queue.js";
import { MemoryStore } from "../../shared/adapters/memory/store.js";
import { randomIds } from "../../shared/adapters/system.js";
import { Engine } from "../../shared/engine/engine.js";
import { taskMessage } from "../../shared/engine/send.js";
import type { EnginePorts, TaskMessage } from "../../shared/ports.js";
import { createTaskRegistry } from "../../shared/tasks/builtins.js";
import { interceptTransitions } from "../support/faults.js";
import { ManualClock } from "../support/manual-clock.js";

/** An engine on a manual clock; `crash` makes one node's COMPLETED write throw once, as a process dying there would. */
function world() {
  const clock = new ManualClock();
  const queue = new MemoryQueue({ clock });
  const store = new MemoryStore();
  const crashes = new Set<string>();
  const ports: EnginePorts = {
    store: interceptTransitions(store, async (call, proceed) => {
      if (call.patch.status === "COMPLETED" && crashes.delete(call.nodeId))
        throw new Error(`crashed before completing ${call.nodeId}`);
      return proceed();
    }),
    blobs: new MemoryBlobStore(),
    queue,
    events: new MemoryEventPublisher(),
    clock,
    ids: randomIds,
  };
  const engine = new Engine(ports, createTaskRegistry(), { maxContinuations: 0 });
  const next = async (): Promise<TaskMessage[]> =>
    (await queue.receive({ maxMessages: 10, waitSeconds: 0, visibilityTimeoutSeconds: 3600 })).map(
      (m) => JSON.parse(m.body) as TaskMessage,
    );
  return { clock, store, engine, next, crash: (nodeId: string) => crashes.add(nodeId) };
}

const counter = {
  name: "count",
  nodes: [
    { id: "a", type: "noop" },
    { id: "v", type: "vars", dependsOn: ["a"], params: { op: "incr", path: "n", by: 1 } },
  ],
};

describe("a vars operation applies once per node", () => {
  it("the same message handled twice, one after the other: counted once, the same output", async () => {
    const w = world();
    await w.engine.registerWorkflow(counter);
    const { executionId } = await w.engine.createExecution({ workflow: "count" });
    const [message] = await w.next();
    await w.clock.drive(w.engine.handleTask(message!, { receiveCount: 1 }));
    await w.clock.drive(w.engine.handleTask(message!, { receiveCount: 2 }));
    const view = await w.engine.describeExecution(executionId);
    expect(view.status).toBe("SUCCEEDED");
    expect(view.vars).toEqual({ n: 1 });
    expect(view.nodes.find((n) => n.id === "v")?.output).toEqual({ value: 1 });
  });

  it("the same message handled twice at once (both may run the vars node): counted once", async () => {
    const w = world();
    await w.engine.registerWorkflow(counter);
    const { executionId } = await w.engine.createExecution({ workflow: "count" });
    const [message] = await w.next();
    await w.clock.drive(
      Promise.all([
        w.engine.handleTask(message!, { receiveCount: 1 }),
        w.engine.handleTask(message!, { receiveCount: 2 }),
      ]),
    );
    const view = await w.engine.describeExecution(executionId);
    expect(view.status).toBe("SUCCEEDED");
    expect(view.vars).toEqual({ n: 1 });
  });

  it("a crash after the variables' write and before the node's completion: the redelivery runs it again and counts nothing", async () => {
    const w = world();
    await w.engine.registerWorkflow(counter);
    const { executionId } = await w.engine.createExecution({ workflow: "count" });
    const [message] = await w.next();
    w.crash("v");
    await expect(w.clock.drive(w.engine.handleTask(message!, { receiveCount: 1 }))).rejects.toThrow(
      /crashed/,
    );
    expect(await w.store.getNode(executionId, "v")).toBeUndefined();
    expect((await w.engine.describeExecution(executionId)).vars).toEqual({ n: 1 });
    // SQS brings the message back: the node runs again, finds its operation applied, and completes.
    await w.clock.drive(w.engine.handleTask(message!, { receiveCount: 2 }));
    const view = await w.engine.describeExecution(executionId);
    expect(view.status).toBe("SUCCEEDED");
    expect(view.vars).toEqual({ n: 1 });
    expect(view.nodes.find((n) => n.id === "v")?.output).toEqual({ value: 1 });
  });

  it("an entry vars node re-driven by a task message (its inline run crashed) runs in the worker, once", async () => {
    const w = world();
    await w.engine.registerWorkflow({
      name: "entry",
      nodes: [{ id: "v", type: "vars", params: { op: "incr", path: "n", by: 2 } }],
    });
    w.crash("v");
    const created = w.engine.createExecution({ workflow: "entry" });
    await expect(w.clock.drive(created)).rejects.toThrow(/crashed/);
    const executionId = (await w.store.listExecutions({ limit: 1 })).items[0]!.executionId;
    // Left QUEUED with its operation applied; the sweeper (or a redelivery) sends its message.
    expect((await w.store.getNode(executionId, "v"))?.status).toBe("QUEUED");
    const message = { ...taskMessage({ executionId }, "v", 1) };
    await w.clock.drive(w.engine.handleTask(message, { receiveCount: 1 }));
    await w.clock.drive(w.engine.handleTask(message, { receiveCount: 2 }));
    const view = await w.engine.describeExecution(executionId);
    expect(view.status).toBe("SUCCEEDED");
    expect(view.vars).toEqual({ n: 2 });
    expect(view.nodes.find((n) => n.id === "v")?.output).toEqual({ value: 2 });
  });

  it("an assign is written before its node's completion; a retried attempt assigns again from its own output", async () => {
    const w = world();
    await w.engine.registerWorkflow({
      name: "assign-retry",
      nodes: [
        {
          id: "f",
          type: "fail",
          params: { times: 1 },
          retry: { maxAttempts: 2, backoff: { initialSeconds: 1, jitter: "none" } },
          assign: { attempt: "{% $output.attempt %}" },
        },
        { id: "after", type: "pass", dependsOn: ["f"], params: { value: "{% vars.attempt %}" } },
      ],
    });
    const { executionId } = await w.engine.createExecution({ workflow: "assign-retry" });
    for (let round = 0; round < 10; round++) {
      const messages = await w.next();
      if (messages.length === 0) {
        await w.clock.drive(w.clock.sleep(1000));
        continue;
      }
      for (const message of messages) await w.clock.drive(w.engine.handleTask(message, { receiveCount: 1 }));
    }
    const view = await w.engine.describeExecution(executionId);
    expect(view.status).toBe("SUCCEEDED");
    expect(view.vars).toEqual({ attempt: 2 });
    expect(view.nodes.find((n) => n.id === "after")?.output).toBe(2);
  });
});
