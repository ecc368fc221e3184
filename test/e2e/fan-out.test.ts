/**
 * The fan-out budget of a root execution (shared/domain/fan-out.ts) end to end through the local
 * runtime, on the embedded backend and on DynamoDB + SQS (emulator), with a small budget given to the
 * engine so that a runaway tree shows at once:
 * - the bomb (a map over ten items running its own workflow per item, every failure
 *   tolerated) stops at the descendants limit: the nodes past it fail with FanOutLimitExceeded, the
 *   root ends, and no more executions than the budget ever exist (counted while it runs, so that a
 *   runaway fails the test as soon as it passes the budget);
 * - a map whose lanes would pass the map items in flight fails with FanOutLimitExceeded, and what
 *   the tree reserved is given back when it ends;
 * - cancelling the root of a tree as large as the budget ends every one of its executions.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalRuntime } from "../../local/runtime.js";
import type { ExecutionRecord } from "../../shared/domain/records.js";
import { BACKEND_KINDS } from "../support/backends.js";
import { PATIENT, waitForProgress } from "../support/progress.js";
import { type ApiClient, apiClient, type JsonBody, startRuntime } from "../support/runtime.js";

const MAX_DESCENDANTS = 12;
// The highest maxConcurrency of a map: one map at full width and anything beside it passes it.
const MAX_MAP_ITEMS_IN_FLIGHT = 1000;

describe.each(BACKEND_KINDS)("fan-out budget end to end (%s)", PATIENT, (kind) => {
  let runtime: LocalRuntime;
  let api: ApiClient;

  beforeAll(async () => {
    runtime = await startRuntime(kind, {
      concurrency: 4,
      engineOptions: {
        fanOut: { maxDescendants: MAX_DESCENDANTS, maxMapItemsInFlight: MAX_MAP_ITEMS_IN_FLIGHT },
      },
    });
    api = apiClient(runtime.url);
  });
  afterAll(async () => {
    await runtime?.stop();
  });

  /** Every execution of a workflow, as the store lists them. */
  async function executionsOf(workflow: string): Promise<ExecutionRecord[]> {
    const all: ExecutionRecord[] = [];
    let next: string | undefined;
    do {
      const page = await runtime.ports.store.listExecutions({ workflow, limit: 100, next });
      all.push(...page.items);
      next = page.next;
    } while (next !== undefined);
    return all;
  }

  const ended = (e: ExecutionRecord) => e.status !== "RUNNING" && e.status !== "PENDING";

  it("stops the issue's bomb at the descendants limit: FanOutLimitExceeded, and the root ends", async () => {
    const name = `bomb-${kind}`;
    await api.register({
      name,
      nodes: [
        {
          id: "fan",
          type: "map",
          params: { items: "{% [1..10] %}", workflow: { name }, toleratedFailurePercentage: 100 },
        },
      ],
    });
    const rootId = await api.start(name);
    // Until the root ends, never more than the budget of executions (the root and its descendants).
    const root = await waitForProgress("the bomb's root to end", async () => {
      const tree = await executionsOf(name);
      if (tree.length > MAX_DESCENDANTS + 1)
        throw new Error(`${tree.length} executions of ${name}: past the budget of ${MAX_DESCENDANTS} + 1`);
      const rootNow = tree.find((e) => e.executionId === rootId);
      if (rootNow && ended(rootNow)) return { done: true as const, value: rootNow };
      return { done: false as const, progress: tree.map((e) => e.status).sort() };
    });
    expect(root.status).toBe("SUCCEEDED");
    const tree = await executionsOf(name);
    expect(tree).toHaveLength(MAX_DESCENDANTS + 1);
    for (const e of tree) if (e.executionId !== rootId) expect(e.rootExecutionId).toBe(rootId);
    expect(await runtime.ports.store.getFanOut(rootId)).toEqual({
      descendants: MAX_DESCENDANTS,
      mapItemsInFlight: 0,
    });
    // The items past the budget failed, tolerated, with the limit, its value and the root named.
    const views: JsonBody[] = await Promise.all(tree.map((e) => api.waitForEnd(e.executionId)));
    expect(views.map((v) => [v.status, v.error])).toEqual(views.map(() => ["SUCCEEDED", undefined]));
    const refusals = views.flatMap((v) =>
      (v.output.fan as Array<{ error?: { name: string; message: string } }>).flatMap((item) =>
        item.error ? [item.error] : [],
      ),
    );
    expect(refusals.length).toBeGreaterThan(0);
    for (const error of refusals) {
      expect(error.name).toBe("FanOutLimitExceeded");
      expect(error.message).toContain(`maxDescendants of ${MAX_DESCENDANTS}`);
      expect(error.message).toContain(`root execution ${rootId}`);
    }
  });

  it("fails a map whose lanes would pass the map items in flight, and gives back what the tree held", async () => {
    const inner = `lanes-inner-${kind}`;
    const outer = `lanes-outer-${kind}`;
    await api.register({
      name: inner,
      nodes: [
        {
          id: "wide",
          type: "map",
          // Its lanes and its parent's together pass the budget.
          params: {
            items: "{% [1..1001] %}",
            maxConcurrency: MAX_MAP_ITEMS_IN_FLIGHT,
            task: { type: "noop" },
          },
        },
      ],
    });
    await api.register({
      name: outer,
      nodes: [
        {
          id: "calls",
          type: "map",
          params: { items: [1], workflow: { name: inner }, retry: { maxAttempts: 1 } },
          onError: "continue",
        },
        { id: "narrow", type: "map", params: { items: [1, 2, 3], task: { type: "noop" } } },
      ],
    });
    const rootId = await api.start(outer);
    const root = await api.waitForEnd(rootId);
    expect(root.status).toBe("SUCCEEDED");
    expect(root.output?.narrow).toEqual([null, null, null]);
    const [child] = await executionsOf(inner);
    const childView = await api.waitForEnd(child!.executionId);
    expect(childView.status).toBe("FAILED");
    const wide: JsonBody = childView.nodes.find((n: { id: string }) => n.id === "wide");
    expect(wide.error.name).toBe("FanOutLimitExceeded");
    expect(wide.error.message).toContain(`maxMapItemsInFlight of ${MAX_MAP_ITEMS_IN_FLIGHT}`);
    expect(wide.error.message).toContain(`root execution ${rootId}`);
    // Everything the tree reserved went back as its executions ended.
    await waitForProgress("the tree's reservations to go back", async () => {
      const counts = await runtime.ports.store.getFanOut(rootId);
      return counts.mapItemsInFlight === 0
        ? { done: true as const, value: counts }
        : { done: false as const, progress: counts };
    });
  });

  it("cancelling the root of a tree ends every execution of it", async () => {
    const name = `tree-${kind}`;
    await api.register({
      name,
      nodes: [
        // Holds each execution open (a timer: no worker) until it is cancelled.
        { id: "hold", type: "wait", params: { seconds: 3600 } },
        {
          id: "fan",
          type: "map",
          params: {
            items: "{% input < 2 ? [input + 1, input + 1, input + 1] : [] %}",
            workflow: { name },
          },
        },
      ],
    });
    // The root and its 12 descendants: the whole budget.
    const size = 1 + 3 + 9;
    const rootId = await api.start(name, 0);
    await waitForProgress("the tree to grow", async () => {
      const tree = await executionsOf(name);
      return tree.length >= size
        ? { done: true as const, value: tree }
        : { done: false as const, progress: tree.length };
    });
    const cancel = await api.call("POST", `/executions/${rootId}/cancel`);
    expect(cancel.status).toBe(202);
    const tree = await waitForProgress("every execution of the tree to end", async () => {
      const all = await executionsOf(name);
      const open = all.filter((e) => !ended(e));
      return open.length === 0
        ? { done: true as const, value: all }
        : { done: false as const, progress: open.length };
    });
    expect(tree).toHaveLength(size);
    expect(tree.every((e) => e.status === "CANCELLED")).toBe(true);
  });
});
