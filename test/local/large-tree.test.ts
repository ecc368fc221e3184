/**
 * The local runtime keeps answering its API while a large tree of executions runs (issue 25: the
 * self-calling map made it stop answering within seconds, its own cancel included). On the embedded
 * backend a receive and a whole worker invocation complete without waiting on any I/O, so the
 * pollers yield to the event loop between batches (local/poller.ts): the HTTP server gets its turn
 * however long the backlog is.
 *
 * The tree: a map over ten items running its own workflow per item, each execution held open by a
 * timer, under a budget of 2,000 descendants (the fan-out budget, shared/domain/fan-out.ts). The test
 * asks the API while the tree grows — every request must be answered before the tree stopped
 * growing, not after the backlog drained — then cancels the root and waits for the whole tree to end.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalRuntime } from "../../local/runtime.js";
import { PATIENT, waitForProgress } from "../support/progress.js";
import { type ApiClient, apiClient, startRuntime } from "../support/runtime.js";

const MAX_DESCENDANTS = 2000;

describe("the local runtime under a large tree (memory)", PATIENT, () => {
  let runtime: LocalRuntime;
  let api: ApiClient;

  beforeAll(async () => {
    runtime = await startRuntime("memory", {
      concurrency: 4,
      // Map items in flight unbounded here (each execution's map holds ten lanes): the tree grows to
      // its descendants budget.
      engineOptions: { fanOut: { maxDescendants: MAX_DESCENDANTS, maxMapItemsInFlight: 1_000_000 } },
    });
    api = apiClient(runtime.url);
  });
  afterAll(async () => {
    await runtime?.stop();
  });

  it("answers its API while the tree grows, and cancels the whole tree", async () => {
    const name = "growing-tree";
    const registered = await api.call("POST", "/workflows", {
      name,
      nodes: [
        { id: "hold", type: "wait", params: { seconds: 3600 } },
        {
          id: "fan",
          type: "map",
          params: { items: "{% [1..10] %}", workflow: { name }, toleratedFailurePercentage: 100 },
        },
      ],
    });
    expect(registered.status).toBe(201);
    const started = await api.call("POST", "/executions", { workflow: name });
    expect(started.status).toBe(202);
    const rootId: string = started.body.executionId;
    const descendants = async () => (await runtime.ports.store.getFanOut(rootId)).descendants;

    // Ask while it grows, as fast as answers come: the answers must come while the tree grows, not
    // once the backlog drained (the tree stops growing only at the budget: its executions wait).
    const grownAt: number[] = [];
    await waitForProgress(
      "the tree to grow to half the budget",
      async () => {
        const [described, listed] = await Promise.all([
          api.call("GET", `/executions/${rootId}`),
          api.call("GET", "/workflows"),
        ]);
        expect(described.status).toBe(200);
        expect(described.body.status).toBe("RUNNING");
        expect(listed.status).toBe(200);
        const grown = await descendants();
        grownAt.push(grown);
        return grown >= MAX_DESCENDANTS / 2
          ? { done: true as const, value: grown }
          : { done: false as const, progress: grown };
      },
      { intervalMs: 0 },
    );
    const whileGrowing = grownAt.filter((n) => n < MAX_DESCENDANTS / 2);
    expect(
      new Set(whileGrowing).size,
      `answered at ${grownAt.join(", ")} descendants`,
    ).toBeGreaterThanOrEqual(5);

    const cancelled = await api.call("POST", `/executions/${rootId}/cancel`);
    expect(cancelled.status).toBe(202);
    const total = await descendants();
    // Every execution of the tree ends: none left RUNNING.
    await waitForProgress("the cancelled tree to end", async () => {
      const running = await runtime.ports.store.listExecutions({
        workflow: name,
        status: "RUNNING",
        limit: 100,
      });
      const answered = await api.call("GET", `/executions/${rootId}`);
      expect(answered.body.status).toBe("CANCELLED");
      return running.items.length === 0
        ? { done: true as const, value: undefined }
        : { done: false as const, progress: running.items.map((e) => e.executionId) };
    });
    const all = await runtime.ports.store.listExecutions({ workflow: name, limit: MAX_DESCENDANTS + 1 });
    expect(all.items).toHaveLength((await descendants()) + 1);
    expect(all.items.filter((e) => e.status !== "CANCELLED").map((e) => [e.status, e.error])).toEqual([]);
    // No execution was started past the cancel's view of the tree but what was already under way.
    expect(await descendants()).toBeLessThanOrEqual(MAX_DESCENDANTS);
    expect(total).toBeGreaterThan(0);
  });
});
