/**
 * History, through the real engine on each backend (docs/guarantees.md, History): every node a
 * cancellation or a failure ends gets its NodeCancelled (pending nodes never written before, queued
 * and running ones, a map and its items), and the history is in causal order — each node's events
 * in the order of its transitions (replayed through the engine's state table), an execution's end
 * after the node events that led to it, and only what its end caused (cancellations) after it.
 */
import { describe, expect, it } from "vitest";
import type { HistoryEvent, NodeStatus } from "../../shared/domain/records.js";
import { canTransitionNode } from "../../shared/domain/states.js";
import type { Engine } from "../../shared/engine/engine.js";
import { HISTORY } from "../../shared/engine/lifecycle.js";
import type { ExecutionView } from "../../shared/engine/views.js";
import type { ReceivedMessage, Store } from "../../shared/ports.js";
import { BACKEND_KINDS, type Backend, createBackend } from "../support/backends.js";
import { receiveAll, runToEnd, taskOf } from "../support/harness.js";
import { PATIENT, waitForProgress } from "../support/progress.js";

/** The status each node event moves its node to (events of no status change are absent). */
const STATUS_OF_EVENT: Record<string, NodeStatus> = {
  [HISTORY.nodeQueued]: "QUEUED",
  [HISTORY.nodeRetryScheduled]: "QUEUED",
  [HISTORY.nodeStarted]: "RUNNING",
  [HISTORY.nodeCompleted]: "COMPLETED",
  [HISTORY.nodeFailed]: "FAILED",
  [HISTORY.nodeCancelled]: "CANCELLED",
  [HISTORY.nodeSkipped]: "SKIPPED",
};

const END_EVENTS = new Set<string>([
  HISTORY.executionSucceeded,
  HISTORY.executionFailed,
  HISTORY.executionCancelled,
]);

/**
 * Replays each node's events, in the order listed, through the engine's state table: every one is
 * a transition it allows, attempts never go back, and the last one is the node's status in the view.
 */
function expectNodeLives(history: readonly HistoryEvent[], view: ExecutionView): Map<string, NodeStatus> {
  const status = new Map<string, NodeStatus>();
  const attempt = new Map<string, number>();
  for (const event of history) {
    if (event.nodeId === undefined) continue;
    const from = status.get(event.nodeId) ?? "PENDING";
    const to = STATUS_OF_EVENT[event.type];
    if (to !== undefined) {
      expect(canTransitionNode(from, to), `${event.nodeId}: ${event.type} moves it ${from} → ${to}`).toBe(
        true,
      );
      status.set(event.nodeId, to);
    }
    const previous = attempt.get(event.nodeId) ?? 0;
    if (event.type !== HISTORY.nodeCancelled || event.attempt !== 0)
      expect(
        event.attempt ?? 0,
        `${event.nodeId}: ${event.type} of attempt ${event.attempt}`,
      ).toBeGreaterThanOrEqual(previous);
    attempt.set(event.nodeId, Math.max(previous, event.attempt ?? 0));
  }
  for (const node of view.nodes)
    expect(status.get(node.id) ?? "PENDING", `${node.id}'s last status event`).toBe(node.status);
  return status;
}

/** The position of the execution's one end event, and the events on each side of it. */
function aroundEnd(history: readonly HistoryEvent[], type: string) {
  const ends = history.flatMap((e, i) => (END_EVENTS.has(e.type) && e.nodeId === undefined ? [i] : []));
  expect(ends.map((i) => history[i]!.type)).toEqual([type]);
  const end = ends[0]!;
  return { end, before: history.slice(0, end), after: history.slice(end + 1) };
}

const describeEvent = (e: HistoryEvent) => `${e.nodeId ?? "execution"} ${e.type}`;

/** Handles one message in the background; its promise ends with the attempt (a long sleep: when told to stop). */
function handle(engine: Engine, message: ReceivedMessage): Promise<void> {
  return engine.handleTask(taskOf(message), { receiveCount: message.receiveCount });
}

async function untilRunning(store: Store, executionId: string, nodeId: string): Promise<void> {
  await waitForProgress(`${nodeId} to run`, async () => {
    const status = (await store.getNode(executionId, nodeId))?.status;
    return status === "RUNNING" ? { done: true, value: undefined } : { done: false, progress: status };
  });
}

async function withBackend(kind: (typeof BACKEND_KINDS)[number], run: (backend: Backend) => Promise<void>) {
  // A short lease: heartbeats carry a cancellation to running handlers within a second.
  const backend = await createBackend(kind, { leaseSeconds: 0.6 });
  try {
    await run(backend);
  } finally {
    await backend.cleanup();
  }
}

describe.each(BACKEND_KINDS)("history (%s)", PATIENT, (kind) => {
  it("gives every node a cancellation ends a NodeCancelled — pending, queued, running, a map and its item — after ExecutionCancelled", async () => {
    await withBackend(kind, async ({ engine, store, consumer }) => {
      await engine.registerWorkflow({
        name: "cancel-everything",
        nodes: [
          { id: "nap", type: "sleep", params: { ms: 5 * 60_000 } },
          { id: "later", type: "wait", params: { seconds: 600 } },
          { id: "after-nap", type: "noop", dependsOn: ["nap"] },
          { id: "join", type: "noop", dependsOn: ["nap", "later"] },
          {
            id: "each",
            type: "map",
            params: {
              items: [1, 2, 3],
              task: { type: "sleep", params: { ms: 5 * 60_000 } },
              maxConcurrency: 2,
              itemEvents: true,
            },
          },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "cancel-everything" });
      // nap and each are sent; later waits QUEUED (its message delayed); after-nap and join have no record.
      const entries = await receiveAll(consumer, 2);
      const byNode = new Map(entries.map((m) => [taskOf(m).nodeId, m]));
      const running = [handle(engine, byNode.get("nap")!)];
      await handle(engine, byNode.get("each")!); // the map starts: its first item of each lane is sent
      const items = await receiveAll(consumer, 2);
      running.push(handle(engine, items[0]!)); // one item runs; the other's message is never handled
      const item = taskOf(items[0]!).nodeId;
      await untilRunning(store, executionId, "nap");
      await untilRunning(store, executionId, item);
      expect((await store.getNode(executionId, "later"))?.status).toBe("QUEUED");
      expect(await store.getNode(executionId, "join")).toBeUndefined();

      await engine.cancelExecution(executionId, "stop everything");
      await Promise.all(running); // the heartbeats told both sleeps to stop

      const view = await engine.describeExecution(executionId);
      expect(view.status).toBe("CANCELLED");
      expect(Object.fromEntries(view.nodes.map((n) => [n.id, n.status]))).toEqual({
        nap: "CANCELLED",
        later: "CANCELLED",
        "after-nap": "CANCELLED",
        join: "CANCELLED",
        each: "CANCELLED",
      });
      const history = await store.listHistory(executionId, { withItems: true });
      expectNodeLives(history, view);
      // One NodeCancelled each, naming the attempt it cancelled (0: the node never had one).
      const cancelled = history.filter((e) => e.type === HISTORY.nodeCancelled);
      expect(Object.fromEntries(cancelled.map((e) => [e.nodeId, e.attempt]))).toEqual({
        nap: 1,
        later: 1,
        "after-nap": 0,
        join: 0,
        each: 1,
        [item]: 1,
      });
      expect(cancelled).toHaveLength(6);
      // Everything before the cancellation comes before ExecutionCancelled; what it caused, after.
      const { before, after } = aroundEnd(history, HISTORY.executionCancelled);
      expect(before.filter((e) => e.type === HISTORY.nodeCancelled).map(describeEvent)).toEqual([]);
      expect(after.filter((e) => e.type !== HISTORY.nodeCancelled).map(describeEvent)).toEqual([]);
      // The API's history (what `weft events` reads) is the same (the map asks for its items' events).
      const page = await engine.listEvents(executionId, { limit: 1000 });
      expect(page.events.map((e) => [e.type, e.nodeId])).toEqual(history.map((e) => [e.type, e.nodeId]));
      expect(page.events.some((e) => "seq" in e)).toBe(false);
    });
  });

  it("ends a succeeded execution's history with ExecutionSucceeded, every node's events in the order of its transitions", async () => {
    await withBackend(kind, async ({ engine, store, consumer }) => {
      await engine.registerWorkflow({
        name: "diamond",
        nodes: [
          { id: "a", type: "pass", params: { value: 1 } },
          {
            id: "flaky",
            type: "fail",
            dependsOn: ["a"],
            params: { times: 1 },
            retry: { maxAttempts: 2, backoff: { initialSeconds: 0 } },
          },
          { id: "b", type: "noop", dependsOn: ["a"] },
          { id: "join", type: "merge", dependsOn: ["flaky", "b"] },
          { id: "z", type: "pass", dependsOn: ["join"], params: { value: "end" } },
        ],
      });
      // Several at once: on the in-memory store many of their events share a millisecond.
      const executions = await Promise.all(
        [1, 2, 3].map(() => engine.createExecution({ workflow: "diamond" })),
      );
      for (const { executionId } of executions) {
        expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED");
        const view = await engine.describeExecution(executionId);
        const history = await store.listHistory(executionId);
        const lives = expectNodeLives(history, view);
        expect([...lives.values()].every((s) => s === "COMPLETED")).toBe(true);
        expect(history.at(-1)?.type).toBe(HISTORY.executionSucceeded);
        expect(history[0]?.type).toBe(HISTORY.executionStarted);
        // The retry's events in attempt order.
        expect(history.filter((e) => e.nodeId === "flaky").map((e) => [e.type, e.attempt])).toEqual([
          [HISTORY.nodeQueued, 1],
          [HISTORY.nodeStarted, 1],
          [HISTORY.nodeRetryScheduled, 2],
          [HISTORY.nodeStarted, 2],
          [HISTORY.nodeCompleted, 2],
        ]);
        // A node's dependants start only after it completed (the merge is decided by its last parent).
        const at = (nodeId: string, type: string) =>
          history.findIndex((e) => e.nodeId === nodeId && e.type === type);
        expect(at("a", HISTORY.nodeCompleted)).toBeLessThan(at("b", HISTORY.nodeStarted));
        expect(at("flaky", HISTORY.nodeCompleted)).toBeLessThan(at("join", HISTORY.nodeCompleted));
        expect(at("b", HISTORY.nodeCompleted)).toBeLessThan(at("join", HISTORY.nodeCompleted));
        expect(at("join", HISTORY.nodeCompleted)).toBeLessThan(at("z", HISTORY.nodeStarted));
      }
    });
  });

  it("orders a failed execution's end after the failure that caused it, and only its cancellations after it", async () => {
    await withBackend(kind, async ({ engine, store, consumer }) => {
      await engine.registerWorkflow({
        name: "fail-fast",
        nodes: [
          { id: "slow", type: "sleep", params: { ms: 5 * 60_000 } },
          { id: "bad", type: "fail", params: { retryable: false, message: "declined" } },
          { id: "after-slow", type: "noop", dependsOn: ["slow"] },
          { id: "after-bad", type: "noop", dependsOn: ["bad"] },
          { id: "both", type: "noop", dependsOn: ["slow", "bad"] },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "fail-fast" });
      const entries = await receiveAll(consumer, 2);
      const byNode = new Map(entries.map((m) => [taskOf(m).nodeId, m]));
      const slow = handle(engine, byNode.get("slow")!);
      await untilRunning(store, executionId, "slow");
      await handle(engine, byNode.get("bad")!); // fails for good: the execution fails
      await slow; // told to stop by its heartbeat

      const view = await engine.describeExecution(executionId);
      expect(view.status).toBe("FAILED");
      expect(Object.fromEntries(view.nodes.map((n) => [n.id, n.status]))).toEqual({
        slow: "CANCELLED",
        bad: "FAILED",
        "after-slow": "CANCELLED",
        "after-bad": "CANCELLED",
        both: "CANCELLED",
      });
      const history = await store.listHistory(executionId);
      expectNodeLives(history, view);
      expect(
        history
          .filter((e) => e.type === HISTORY.nodeCancelled)
          .map((e) => e.nodeId)
          .sort(),
      ).toEqual(["after-bad", "after-slow", "both", "slow"]);
      const { before, after } = aroundEnd(history, HISTORY.executionFailed);
      expect(before.map(describeEvent)).toContain("bad NodeFailed");
      expect(after.filter((e) => e.type !== HISTORY.nodeCancelled).map(describeEvent)).toEqual([]);
    });
  });
});
