/**
 * Node concurrency limits end to end (engine/slots.ts) through the local runtime, on the embedded
 * backend and on DynamoDB + SQS (emulator): per-key limits never exceeded (from the nodes' recorded
 * start and end times) with every execution finishing, a waiting node's view saying what it waits
 * for, and registration refusing bad limits with the field named.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalRuntime } from "../../local/runtime.js";
import { BACKEND_KINDS } from "../support/backends.js";
import { PATIENT, waitForProgress } from "../support/progress.js";
import { type ApiClient, apiClient, type JsonBody, nodeOf, startRuntime } from "../support/runtime.js";

/** The most intervals [start, end] that overlap at any instant. */
function maxOverlap(intervals: ReadonlyArray<readonly [number, number]>): number {
  const points = intervals.flatMap(([start, end]) => [
    [start, 1],
    [end, -1],
  ]) as Array<[number, number]>;
  // An end at the same instant as a start frees its slot first.
  points.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let most = 0;
  for (const [, delta] of points) {
    now += delta;
    most = Math.max(most, now);
  }
  return most;
}

describe.each(BACKEND_KINDS)("concurrency limits end to end (%s)", PATIENT, (kind) => {
  let runtime: LocalRuntime;
  let api: ApiClient;

  beforeAll(async () => {
    // More workers than a key's limit, so the limit (not the workers) is what holds work back.
    runtime = await startRuntime(kind, { concurrency: 8 });
    api = apiClient(runtime.url);
  });
  afterAll(async () => {
    await runtime?.stop();
  });

  it("runs 50 executions across 3 keys with limit 2: never more than 2 per key at once, and all finish", async () => {
    await api.register({
      name: `tenants-${kind}`,
      nodes: [
        { id: "prepare", type: "pass" },
        {
          id: "work",
          type: "sleep",
          dependsOn: ["prepare"],
          params: { ms: 150 },
          concurrency: { key: "{% input.tenant %}", limit: 2 },
        },
      ],
    });
    const tenants = ["acme", "globex", "initech"];
    const ids: Array<{ id: string; tenant: string }> = [];
    for (let i = 0; i < 50; i++) {
      const tenant = tenants[i % 3]!;
      ids.push({ id: await api.start(`tenants-${kind}`, { tenant }), tenant });
    }
    const views = await Promise.all(ids.map(({ id }) => api.waitForEnd(id)));
    expect(views.map((view) => view.status)).toEqual(ids.map(() => "SUCCEEDED"));
    for (const tenant of tenants) {
      const intervals = views
        .filter((_, i) => ids[i]!.tenant === tenant)
        .map((view) => {
          const work = nodeOf(view, "work");
          return [Date.parse(work.startedAt), Date.parse(work.finishedAt)] as const;
        });
      expect(intervals.length).toBeGreaterThanOrEqual(16);
      expect(maxOverlap(intervals), tenant).toBeLessThanOrEqual(2);
    }
  });

  it("is fair across tenants: one that arrives behind a dozen waiters of another runs within the next 2 grants", async () => {
    // A shared limit of 2 over every tenant (listed first, so work waits there), and 2 per tenant:
    // waiters of the shared limit are granted round-robin across their tenants.
    await api.register({
      name: `fair-${kind}`,
      nodes: [
        {
          id: "work",
          type: "sleep",
          params: { ms: 1000 },
          concurrency: [{ limit: 2 }, { key: "{% input.tenant %}", limit: 2 }],
        },
      ],
    });
    const busy: string[] = [];
    for (let i = 0; i < 12; i++) busy.push(await api.start(`fair-${kind}`, { tenant: "A" }));
    // Once A's work queues behind the shared limit, B's one execution arrives.
    await waitForProgress("A's work to queue", async () => {
      const views = await Promise.all(
        busy.map(async (id) => (await api.call("GET", `/executions/${id}`)).body),
      );
      const queued = views.filter((view) => nodeOf(view, "work")?.waitingFor).length;
      return queued >= 6 ? { done: true, value: undefined } : { done: false, progress: queued };
    });
    const late = await api.start(`fair-${kind}`, { tenant: "B" });
    // When B's work is seen waiting in the queue (its placement is at or before then): grants
    // before B's own are counted from there, not from its start's dispatch.
    const placedBy: number = await waitForProgress("B's work to queue", async () => {
      const work = nodeOf((await api.call("GET", `/executions/${late}`)).body, "work");
      if (work?.waitingFor) return { done: true, value: Date.now() };
      if (work?.startedAt) return { done: true, value: Date.parse(work.startedAt) };
      return { done: false, progress: work };
    });
    const lateView = await api.waitForEnd(late);
    const views = await Promise.all(busy.map((id) => api.waitForEnd(id)));
    expect([lateView, ...views].map((view) => view.status)).toEqual(Array(13).fill("SUCCEEDED"));
    const lateStart = Date.parse(nodeOf(lateView, "work").startedAt);
    // A's attempts granted between B's placement and B's own start: at most the next 2 grants.
    const before = views.filter((view) => {
      const started = Date.parse(nodeOf(view, "work").startedAt);
      return started > placedBy && started < lateStart;
    }).length;
    expect(before).toBeLessThanOrEqual(2);
    // And A still had work waiting when B started: B did not simply come last.
    const after = views.filter((view) => Date.parse(nodeOf(view, "work").startedAt) > lateStart).length;
    expect(after).toBeGreaterThan(2);
  });

  it("shows a node waiting for its limit as QUEUED with waitingFor, then runs it", async () => {
    await api.register({
      name: `single-${kind}`,
      nodes: [
        {
          id: "work",
          type: "sleep",
          params: { ms: 1500 },
          concurrency: { key: "{% input.account %}", limit: 1 },
        },
      ],
    });
    const first = await api.start(`single-${kind}`, { account: "a-1" });
    const second = await api.start(`single-${kind}`, { account: "a-1" });
    const waiting: JsonBody = await waitForProgress("a node waiting for its limit", async () => {
      const views = await Promise.all(
        [first, second].map(async (id) => (await api.call("GET", `/executions/${id}`)).body),
      );
      const queued = views.map((view) => nodeOf(view, "work")).find((node) => node?.waitingFor);
      return queued ? { done: true, value: queued } : { done: false, progress: views };
    });
    expect(waiting.status).toBe("QUEUED");
    expect(waiting.waitingFor).toEqual({ reason: "concurrency", key: "a-1" });
    const ended = await Promise.all([first, second].map((id) => api.waitForEnd(id)));
    expect(ended.map((view) => view.status)).toEqual(["SUCCEEDED", "SUCCEEDED"]);
    const [a, b] = ended.map((view) => nodeOf(view, "work"));
    // One after the other: the second started once the first had ended.
    const spans = [a, b]
      .map((node) => [Date.parse(node.startedAt), Date.parse(node.finishedAt)] as const)
      .sort((x, y) => x[0] - y[0]);
    expect(spans[1]![0]).toBeGreaterThanOrEqual(spans[0]![1]);
    expect(nodeOf(ended[0], "work").waitingFor).toBeUndefined();
  });

  it("refuses bad limits with a 400 naming the field", async () => {
    const cases: Array<[unknown, string, string]> = [
      [{ key: "{% input.t %}", limit: 0 }, "nodes[0].concurrency.limit", "invalid_schema"],
      [{ limit: 2, scope: "global" }, "nodes[0].concurrency.key", "concurrency_key_required"],
      [[{ limit: 2 }, { key: "{% input.( %}", limit: 1 }], "nodes[0].concurrency[1].key", ""],
    ];
    for (const [concurrency, path, code] of cases) {
      const answer = await api.call("POST", "/workflows", {
        name: `bad-limit-${kind}`,
        nodes: [{ id: "work", type: "noop", concurrency }],
      });
      expect(answer.status, JSON.stringify(concurrency)).toBe(400);
      const detail = answer.body.error.details.find((d: { path: string }) => d.path === path);
      expect(detail, JSON.stringify(answer.body)).toBeDefined();
      if (code) expect(detail.code).toBe(code);
    }
    const engineRun = await api.call("POST", "/workflows", {
      name: `bad-limit-wait-${kind}`,
      nodes: [{ id: "nap", type: "wait", params: { seconds: 1 }, concurrency: { limit: 1 } }],
    });
    expect(engineRun.status).toBe(400);
    expect(engineRun.body.error.details).toContainEqual(
      expect.objectContaining({ path: "nodes[0].concurrency", code: "concurrency_not_applicable" }),
    );
  });
});
