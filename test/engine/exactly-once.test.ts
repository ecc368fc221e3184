/**
 * Guarantee 1 of the brief: one completion per node, one arrival per parent at each fan-in, one
 * dispatch per child that becomes ready — under duplicate deliveries and concurrent completions.
 * Runs the real engine against each backend (in-memory, and DynamoDB + SQS on the emulator).
 */
import { describe, expect, it } from "vitest";
import { HISTORY } from "../../shared/engine/lifecycle.js";
import type { Store } from "../../shared/ports.js";
import { BACKEND_KINDS, createBackend } from "../support/backends.js";
import { interceptCalls, interceptTransitions } from "../support/faults.js";
import { collectTask, countEvents, passParents, receiveAll, runToEnd, taskOf } from "../support/harness.js";
import { PATIENT } from "../support/progress.js";

describe.each(BACKEND_KINDS)("exactly-once fan-in and dispatch (%s)", PATIENT, (kind) => {
  it("a wide `any` fan-in is decided by its first completion: the others, all delivered twice at once, write nothing to it", async () => {
    const writesToJoin: string[] = [];
    const backend = await createBackend(kind, {
      wrapStore: (store: Store) =>
        interceptCalls(store, (method, args, proceed) => {
          const touchesJoin =
            (method === "transitionNode" && args[1] === "join") ||
            (method === "recordArrival" && (args[0] as { childId?: string }).childId === "join");
          if (touchesJoin) writesToJoin.push(method);
          return proceed();
        }),
    });
    try {
      const { engine, store, consumer } = backend;
      const parents = passParents(12);
      await engine.registerWorkflow({
        name: "wide-any",
        nodes: [...parents, { id: "join", type: "merge", dependsOn: parents.map((p) => p.id), fanIn: "any" }],
      });
      const { executionId } = await engine.createExecution({ workflow: "wide-any" });
      const messages = await receiveAll(consumer, 12);
      const [first, ...others] = messages;
      await engine.handleTask(taskOf(first!));
      // Decided and, a merge, run on the spot by the first completion: one write, its completion.
      expect((await store.getNode(executionId, "join"))?.status).toBe("COMPLETED");
      expect(writesToJoin).toEqual(["transitionNode"]);
      await Promise.all(others.flatMap((m) => [engine.handleTask(taskOf(m)), engine.handleTask(taskOf(m))]));
      await consumer.delete(messages.map((m) => m.receiptHandle));
      // The 22 later deliveries read the join and left it alone: no arrival, no refused write.
      expect(writesToJoin).toEqual(["transitionNode"]);

      expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED");
      const history = await store.listHistory(executionId);
      expect(countEvents(history, HISTORY.nodeQueued, "join")).toBe(1);
      expect(countEvents(history, HISTORY.nodeCompleted, "join")).toBe(1);
      const join = await store.getNode(executionId, "join");
      // It saw the one completion that decided it.
      expect(join?.okDeps).toHaveLength(1);
      expect(Object.keys((await engine.describeExecution(executionId)).output?.join as object)).toHaveLength(
        1,
      );
    } finally {
      await backend.cleanup();
    }
  });

  it("a task message delivered twice yields one completion and one dispatch of each child", async () => {
    const backend = await createBackend(kind);
    try {
      const { engine, store, consumer } = backend;
      await engine.registerWorkflow({
        name: "fork",
        nodes: [
          { id: "a", type: "pass", params: { value: "A" } },
          { id: "b", type: "pass", dependsOn: ["a"] },
          { id: "c", type: "pass", dependsOn: ["a"] },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "fork", input: 1 });
      const [message] = await receiveAll(consumer, 1);
      expect(message).toBeDefined();
      const task = taskOf(message!);

      // Sequential duplicate: the second delivery finds `a` completed and re-drives propagation.
      await engine.handleTask(task);
      await engine.handleTask(task);
      // Concurrent duplicates on top.
      await Promise.all([engine.handleTask(task), engine.handleTask(task)]);
      await consumer.delete([message!.receiptHandle]);

      const status = await runToEnd(engine, consumer, store, executionId);
      expect(status).toBe("SUCCEEDED");
      const history = await store.listHistory(executionId);
      expect(countEvents(history, HISTORY.nodeStarted, "a")).toBe(1);
      expect(countEvents(history, HISTORY.nodeCompleted, "a")).toBe(1);
      for (const child of ["b", "c"]) {
        expect(countEvents(history, HISTORY.nodeQueued, child)).toBe(1);
        expect(countEvents(history, HISTORY.nodeStarted, child)).toBe(1);
        expect(countEvents(history, HISTORY.nodeCompleted, child)).toBe(1);
      }
      const view = await engine.describeExecution(executionId);
      expect(view.output).toEqual({ b: 1, c: 1 });
      // b and c have one parent each: dispatched by their message alone, they record no arrival.
      const b = await store.getNode(executionId, "b");
      expect(b).toMatchObject({ status: "COMPLETED", attempt: 1, okDeps: [], output: { json: "1" } });
    } finally {
      await backend.cleanup();
    }
  });

  it("a copy of a completed node's message received for the first time sends nothing; a redelivery drives its propagation again", async () => {
    const backend = await createBackend(kind);
    try {
      const { engine, store, consumer } = backend;
      await engine.registerWorkflow({
        name: "copies",
        nodes: [
          { id: "a", type: "pass", params: { value: "A" } },
          { id: "b", type: "pass", dependsOn: ["a"] },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "copies" });
      const [message] = await receiveAll(consumer, 1);
      const task = taskOf(message!);
      await engine.handleTask(task, { receiveCount: 1 });
      await consumer.delete([message!.receiptHandle]);
      const sent = await receiveAll(consumer, 1);
      expect(sent.map((m) => taskOf(m).nodeId)).toEqual(["b"]);

      // Another send of `a`'s task (a racing decider's, a resend): `a`'s claim did the propagation.
      await engine.handleTask(task, { receiveCount: 1 });
      expect(await receiveAll(consumer, 1, 300)).toEqual([]);
      // A redelivery: the handler that completed `a` may have died before sending `b`.
      await engine.handleTask(task, { receiveCount: 2 });
      const again = await receiveAll(consumer, 1);
      expect(again.map((m) => taskOf(m).nodeId)).toEqual(["b"]);
      await consumer.changeVisibility(sent[0]!.receiptHandle, 0);
      expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED");
      const history = await store.listHistory(executionId);
      expect(countEvents(history, HISTORY.nodeStarted, "b")).toBe(1);
    } finally {
      await backend.cleanup();
    }
  });

  it("a continued child whose propagation failed has it driven again at once, not through a copy of its message", async () => {
    let failOnce = true;
    const backend = await createBackend(kind, {
      wrapStore: (store) =>
        interceptCalls(store, (method, args, proceed) => {
          // `b`'s propagation reads its `any` child `j`: a transient failure, once.
          if (method === "getNodes" && (args[1] as string[]).includes("j") && failOnce) {
            failOnce = false;
            return Promise.reject(new Error("transient"));
          }
          return proceed();
        }),
    });
    try {
      const { engine, store, consumer } = backend;
      await engine.registerWorkflow({
        name: "continued",
        nodes: [
          { id: "a", type: "pass" },
          { id: "b", type: "pass", dependsOn: ["a"] },
          { id: "x", type: "noop" },
          { id: "j", type: "pass", dependsOn: ["b", "x"], fanIn: "any", params: { value: "j" } },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "continued" });
      const entries = await receiveAll(consumer, 2);
      const a = entries.find((m) => taskOf(m).nodeId === "a")!;
      // With a deadline far off, `b` runs in `a`'s invocation (continuation).
      await engine.handleTask(taskOf(a), { receiveCount: 1, deadline: Date.now() + 3_600_000 });
      expect(failOnce).toBe(false);
      expect((await store.getNode(executionId, "b"))?.status).toBe("COMPLETED");
      const sent = await receiveAll(consumer, 1);
      expect(sent.map(taskOf)).toEqual([
        { executionId, nodeId: "j", attempt: 1, deps: [1], trace: expect.stringMatching(/^00-/) },
      ]);
      await consumer.changeVisibility(sent[0]!.receiptHandle, 0);
      await consumer.delete([a.receiptHandle]);
      expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED");
      expect((await engine.describeExecution(executionId)).output).toEqual({ j: "j" });
    } finally {
      await backend.cleanup();
    }
  });

  // 4 parents: decided by reading them (every completer reads the others); 50: by arrivals on the
  // child; 60 in shards of 16: by sharded arrivals (the default shard holds 100).
  it.each([
    [4, "default"],
    [50, "default"],
    [60, 16],
  ] as const)(
    "%i parents of one `all` node completing at once, each delivered twice, start the child exactly once (shards of %s)",
    async (width, shardSize) => {
      const backend = await createBackend(kind, shardSize === "default" ? {} : { fanIn: { shardSize } });
      try {
        const { engine, store, consumer } = backend;
        const parents = passParents(width);
        await engine.registerWorkflow({
          name: "wide-join",
          nodes: [...parents, { id: "join", type: "merge", dependsOn: parents.map((p) => p.id) }],
        });
        const { executionId } = await engine.createExecution({ workflow: "wide-join" });
        const messages = await receiveAll(consumer, width);
        expect(messages).toHaveLength(width);

        // Every parent message handled twice, all 2 × width deliveries at once.
        await Promise.all(
          messages.flatMap((m) => [engine.handleTask(taskOf(m)), engine.handleTask(taskOf(m))]),
        );
        await consumer.delete(messages.map((m) => m.receiptHandle));

        expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED");
        const history = await store.listHistory(executionId);
        for (const parent of parents) expect(countEvents(history, HISTORY.nodeCompleted, parent.id)).toBe(1);
        expect(countEvents(history, HISTORY.nodeQueued, "join")).toBe(1);
        expect(countEvents(history, HISTORY.nodeCompleted, "join")).toBe(1);
        const join = await store.getNode(executionId, "join");
        expect(join?.okDeps).toHaveLength(width);
        if (shardSize !== "default") {
          // Every parent recorded once, in its shard (by position in the join's dependsOn).
          const shards = await store.getArrivalShards(executionId, "join", [0, 1, 2, 3, 4]);
          expect(shards.map((s) => s.okDeps.length)).toEqual([16, 16, 16, 12]);
          expect(shards.flatMap((s) => s.okDeps).sort((a, b) => a - b)).toEqual(join?.okDeps);
        }
        const view = await engine.describeExecution(executionId);
        expect(Object.keys((view.output?.join ?? {}) as object)).toHaveLength(width);
        expect(backend.events.filter((e) => e.detailType === "Execution Succeeded")).toHaveLength(1);
      } finally {
        await backend.cleanup();
      }
    },
  );

  // 3 parents: decided by reading them; 8 in shards of 3: by sharded arrivals.
  it.each([
    [3, "default"],
    [8, 3],
  ] as const)(
    "an `all` join of %i parents (shards of %s) is dispatched by its message: its record is written once, by its completion carrying its claim",
    async (width, shardSize) => {
      const writes: string[] = [];
      const backend = await createBackend(kind, {
        ...(shardSize === "default" ? {} : { fanIn: { shardSize } }),
        wrapStore: (store) =>
          interceptTransitions(store, async (call, proceed) => {
            const result = await proceed();
            if (call.nodeId === "j" && result.ok) writes.push(result.record.status);
            return result;
          }),
      });
      try {
        const { engine, store, consumer } = backend;
        const parents = passParents(width);
        await engine.registerWorkflow({
          name: "join",
          nodes: [...parents, { id: "j", type: "pass", dependsOn: parents.map((p) => p.id) }],
        });
        const { executionId } = await engine.createExecution({ workflow: "join", input: "in" });
        expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED");
        // A short attempt writes its claim with its completion (attempt-fence.ts).
        expect(writes).toEqual(["COMPLETED"]);
        const history = await store.listHistory(executionId);
        expect(countEvents(history, HISTORY.nodeQueued, "j")).toBe(1); // carried by the completion
        expect(countEvents(history, HISTORY.nodeStarted, "j")).toBe(1);
        expect((await engine.describeExecution(executionId)).output).toEqual({ j: "in" });
      } finally {
        await backend.cleanup();
      }
    },
  );

  it.each(["any", "count:2"])(
    "a `%s` task fan-in of 3 parents, each delivered twice at once, is dispatched by its message: one completion (carrying its claim) takes the inputs of one decider",
    async (fanIn) => {
      const writes: string[] = [];
      const backend = await createBackend(kind, {
        tasks: [collectTask],
        wrapStore: (store) =>
          interceptTransitions(store, async (call, proceed) => {
            const result = await proceed();
            if (call.nodeId === "j" && result.ok) writes.push(result.record.status);
            return result;
          }),
      });
      try {
        const { engine, store, consumer } = backend;
        const parents = passParents(3);
        await engine.registerWorkflow({
          name: "pick",
          nodes: [...parents, { id: "j", type: "collect", dependsOn: parents.map((p) => p.id), fanIn }],
        });
        const { executionId } = await engine.createExecution({ workflow: "pick" });
        const messages = await receiveAll(consumer, 3);
        await Promise.all(
          messages.flatMap((m) => [engine.handleTask(taskOf(m)), engine.handleTask(taskOf(m))]),
        );
        await consumer.delete(messages.map((m) => m.receiptHandle));
        // Decided without a write: still no record, and every message sent for it carries inputs.
        expect(await store.getNode(executionId, "j")).toBeUndefined();
        const sent = (await receiveAll(consumer, 1)).map(taskOf);
        expect(sent.length).toBeGreaterThanOrEqual(1);
        const required = fanIn === "any" ? 1 : 2;
        for (const m of sent) {
          expect(m).toMatchObject({ executionId, nodeId: "j", attempt: 1 });
          expect(m.deps?.length).toBeGreaterThanOrEqual(required);
        }
        // Every copy at once: one completion.
        await Promise.all(sent.flatMap((m) => [engine.handleTask(m), engine.handleTask(m)]));
        expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED");

        // A short attempt writes its claim with its completion (attempt-fence.ts).
        expect(writes).toEqual(["COMPLETED"]);
        const history = await store.listHistory(executionId);
        expect(countEvents(history, HISTORY.nodeQueued, "j")).toBe(1); // carried by the completion
        expect(countEvents(history, HISTORY.nodeStarted, "j")).toBe(1);
        const j = await store.getNode(executionId, "j");
        // Its inputs are those one message carried, and what it was given.
        expect(sent.map((m) => m.deps)).toContainEqual(j?.okDeps);
        const output = (await engine.describeExecution(executionId)).output?.j as Record<string, number>;
        expect(Object.keys(output).sort()).toEqual(j?.okDeps.map((p) => `p${p}`));
        for (const [id, value] of Object.entries(output)) expect(`p${value}`).toBe(id);
      } finally {
        await backend.cleanup();
      }
    },
  );

  it("a `count:2` join's message whose dependencies cannot be its inputs claims nothing", async () => {
    const backend = await createBackend(kind, { tasks: [collectTask] });
    try {
      const { engine, store, consumer } = backend;
      const parents = passParents(3);
      await engine.registerWorkflow({
        name: "forged",
        nodes: [
          ...parents,
          { id: "j", type: "collect", dependsOn: parents.map((p) => p.id), fanIn: "count:2" },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "forged" });
      const messages = await receiveAll(consumer, 3);
      await Promise.all(messages.map((m) => engine.handleTask(taskOf(m))));
      await consumer.delete(messages.map((m) => m.receiptHandle));
      const sent = await receiveAll(consumer, 1);
      await consumer.delete(sent.map((m) => m.receiptHandle));
      // Too few for count:2, a repeat, a node that is not a parent (j itself), no dependencies at all.
      for (const deps of [[0], [1, 1], [0, 3], undefined]) {
        await engine.handleTask({ executionId, nodeId: "j", attempt: 1, ...(deps ? { deps } : {}) });
        expect(await store.getNode(executionId, "j")).toBeUndefined();
      }
      await engine.handleTask({ executionId, nodeId: "j", attempt: 1, deps: [2, 0] });
      expect(await store.getNode(executionId, "j")).toMatchObject({ status: "COMPLETED", okDeps: [0, 2] });
      expect((await engine.describeExecution(executionId)).output).toEqual({ j: { p0: 0, p2: 2 } });
    } finally {
      await backend.cleanup();
    }
  });

  // Two parents: the child is decided by reading them; six: by recorded arrivals; six in shards
  // of two: by sharded arrivals (dispatch-mode.ts).
  it.each([
    [2, "default"],
    [6, "default"],
    [6, 2],
  ] as const)(
    "a parent's completion processed twice after a crash before deciding its child still dispatches the child once (%i parents, shards of %s)",
    async (width, shardSize) => {
      const backend = await createBackend(kind, shardSize === "default" ? {} : { fanIn: { shardSize } });
      try {
        const { engine, store, consumer } = backend;
        const others = Array.from({ length: width - 1 }, (_, i) => `b${i}`);
        await engine.registerWorkflow({
          name: "pair",
          nodes: [
            { id: "a", type: "noop" },
            ...others.map((id) => ({ id, type: "noop" })),
            { id: "j", type: "pass", dependsOn: ["a", ...others], params: { value: "joined" } },
          ],
        });
        const { executionId } = await engine.createExecution({ workflow: "pair" });
        const messages = await receiveAll(consumer, width);
        const aMessage = messages.find((m) => taskOf(m).nodeId === "a")!;
        for (const m of messages) if (m !== aMessage) await engine.handleTask(taskOf(m));
        expect((await store.getNode(executionId, "j"))?.status ?? "PENDING").toBe("PENDING");
        // Simulate a crash of a's worker right after its completion write: the node is COMPLETED,
        // the last of j's parents, but j was never decided. The redelivered message must finish the job.
        const claim = await store.transitionNode(
          executionId,
          "a",
          // An entry node is claimed straight from PENDING (its message was its dispatch).
          { status: ["PENDING"], attempt: 0 },
          {
            status: "RUNNING",
            attempt: 1,
            lease: { token: "t-crashed", expiresAt: Date.now() + 60_000 },
            startedAt: Date.now(),
          },
        );
        expect(claim.ok).toBe(true);
        const completed = await store.transitionNode(
          executionId,
          "a",
          { status: ["RUNNING"], leaseToken: "t-crashed" },
          { status: "COMPLETED", output: { json: "null" }, lease: null, finishedAt: Date.now() },
        );
        expect(completed.ok).toBe(true);

        expect((await store.getNode(executionId, "j"))?.status ?? "PENDING").toBe("PENDING");
        await engine.handleTask(taskOf(aMessage)); // redelivery of the crashed attempt's message
        await engine.handleTask(taskOf(aMessage)); // and once more
        await consumer.delete(messages.map((m) => m.receiptHandle));

        expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED");
        const history = await store.listHistory(executionId);
        expect(countEvents(history, HISTORY.nodeQueued, "j")).toBe(1);
        expect(countEvents(history, HISTORY.nodeCompleted, "j")).toBe(1);
        expect((await engine.describeExecution(executionId)).output).toEqual({ j: "joined" });
      } finally {
        await backend.cleanup();
      }
    },
  );
});
