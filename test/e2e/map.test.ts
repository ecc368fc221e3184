/**
 * The `map` type end to end through the local runtime, on the embedded backend and on DynamoDB +
 * SQS (emulator): a list known only at run time, items in order, the concurrency bound, tolerated
 * and intolerable failures, cancellation reaching running items, and the history's counts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import type { LocalRuntime } from "../../local/runtime.js";
import { HISTORY } from "../../shared/engine/lifecycle.js";
import { createTaskRegistry } from "../../shared/tasks/builtins.js";
import { TerminalError } from "../../shared/tasks/errors.js";
import { defineTask, type TaskType } from "../../shared/tasks/task-type.js";
import { startMoto } from "../../tools/emulators/moto.js";
import type { RunningEmulator } from "../../tools/emulators/process.js";
import { BACKEND_KINDS } from "../support/backends.js";
import { PATIENT, waitForProgress } from "../support/progress.js";
import { type ApiClient, apiClient, startRuntime } from "../support/runtime.js";

/** What the probe's handlers saw, in this process: how many ran at once, at most, per execution. */
const seen = new Map<string, { active: number; max: number; runs: number }>();

const probe = defineTask({
  type: "probe",
  params: z
    .object({ value: z.unknown(), fail: z.boolean().optional(), ms: z.number().int().min(0) })
    .strict(),
  run: async ({ params, context }) => {
    const stats = seen.get(context.executionId) ?? { active: 0, max: 0, runs: 0 };
    seen.set(context.executionId, stats);
    stats.active++;
    stats.runs++;
    stats.max = Math.max(stats.max, stats.active);
    try {
      await context.sleep(params.ms);
      if (params.fail) throw new TerminalError(`item ${String(params.value)} is bad`);
      return params.value;
    } finally {
      stats.active--;
    }
  },
});

describe.each(BACKEND_KINDS)("map end to end (%s)", PATIENT, (kind) => {
  let runtime: LocalRuntime;
  let api: ApiClient;

  let ownMoto: RunningEmulator | undefined;

  beforeAll(async () => {
    // Moto serves one request at a time: a 1,000-item map keeps it busy for minutes, so it gets a
    // server of its own rather than slowing every other test file's on the shared one.
    ownMoto = kind === "moto" ? await startMoto() : undefined;
    runtime = await startRuntime(kind, {
      // More workers than any map here allows, so the bound seen is the map's own.
      concurrency: 32,
      tasks: createTaskRegistry([probe as TaskType<unknown>]),
      ...(ownMoto ? { endpoint: ownMoto.endpoint } : {}),
    });
    api = apiClient(runtime.url);
  });
  afterAll(async () => {
    await runtime?.stop();
    await ownMoto?.stop();
  });

  async function start(definition: { name: string; [field: string]: unknown }, input?: unknown) {
    const registered = await api.call("POST", "/workflows", definition);
    expect([200, 201], JSON.stringify(registered.body)).toContain(registered.status);
    const started = await api.call("POST", "/executions", { workflow: definition.name, input });
    expect(started.status).toBe(202);
    return started.body.executionId as string;
  }

  const mapOver = (name: string, params: Record<string, unknown>) => ({
    name,
    nodes: [
      { id: "list", type: "pass" },
      {
        id: "each",
        type: "map",
        dependsOn: ["list"],
        params: {
          items: "{% deps.list.numbers %}",
          task: {
            type: "probe",
            params: { value: "{% $item * 10 + $index %}", fail: "{% $item = 3 %}", ms: 5 },
          },
          retry: { maxAttempts: 1 },
          ...params,
        },
      },
    ],
  });

  it("runs a task per item of a run-time list, in order, never more than maxConcurrency at once", async () => {
    // 1,000 items in memory; 300 on the emulator (15 items a lane), where 1,000 took 4.5 minutes of
    // the suite's budget (moto answers DynamoDB one request at a time) and proved nothing more.
    const count = kind === "memory" ? 1000 : 300;
    const numbers = Array.from({ length: count }, (_, i) => i + 100);
    const executionId = await start(mapOver(`map-${count}-${kind}`, { maxConcurrency: 20 }), { numbers });
    const view = await api.waitForEnd(executionId);
    expect(view.status, JSON.stringify([view.error, view.nodes])).toBe("SUCCEEDED");
    const output = view.output?.each as unknown[];
    expect(output).toHaveLength(count);
    expect(output).toEqual(numbers.map((n, i) => n * 10 + i));
    const stats = seen.get(executionId)!;
    expect(stats.runs).toBe(count);
    expect(stats.max).toBeLessThanOrEqual(20);
    expect(stats.max).toBeGreaterThan(1);
    // The history holds the map's counts, not an event per item.
    const events = (await api.call("GET", `/executions/${executionId}/events?limit=100`)).body.events;
    expect(events.length).toBeLessThan(20);
    expect(events).toContainEqual(
      expect.objectContaining({
        type: HISTORY.mapStarted,
        nodeId: "each",
        detail: { items: count, lanes: 20 },
      }),
    );
    expect(events).toContainEqual(
      expect.objectContaining({
        type: HISTORY.nodeCompleted,
        nodeId: "each",
        detail: { items: count, failed: 0 },
      }),
    );
  });

  it("tolerates a failed item under toleratedFailureCount: 1; its place holds the error", async () => {
    const executionId = await start(
      mapOver(`map-tolerant-${kind}`, { maxConcurrency: 4, toleratedFailureCount: 1 }),
      {
        numbers: [1, 2, 3, 4, 5, 6],
      },
    );
    const view = await api.waitForEnd(executionId);
    expect(view.status, JSON.stringify([view.error, view.nodes])).toBe("SUCCEEDED");
    expect(view.output?.each).toEqual([
      10,
      21,
      { error: { name: "TerminalError", message: "item 32 is bad" } },
      43,
      54,
      65,
    ]);
  });

  it("fails on the first failed item with no tolerance, and cancels the rest", async () => {
    const numbers = Array.from({ length: 60 }, (_, i) => (i === 4 ? 3 : 1000 + i));
    const strict = mapOver(`map-strict-${kind}`, { maxConcurrency: 3 });
    const id = await start(strict, { numbers });
    const view = await api.waitForEnd(id);
    expect(view.status).toBe("FAILED");
    const map = view.nodes.find((n: { id: string }) => n.id === "each");
    expect(map).toMatchObject({ status: "FAILED", error: { name: "MapFailed" } });
    expect(map?.error?.message).toContain("1 of 60 items");
    // Items after the failure were never started: far fewer than 60 ran.
    expect(seen.get(id)!.runs).toBeLessThan(30);
  });

  it("cancelling the execution reaches the running items", async () => {
    const numbers = Array.from({ length: 40 }, (_, i) => i + 10);
    const slow = {
      name: `map-cancel-${kind}`,
      nodes: [
        {
          id: "each",
          type: "map",
          params: {
            items: "{% input.numbers %}",
            task: { type: "probe", params: { value: "{% $item %}", ms: 60_000 } },
            maxConcurrency: 5,
          },
        },
      ],
    };
    const executionId = await start(slow, { numbers });
    await waitForProgress("five items running", async () => {
      const stats = seen.get(executionId);
      return stats?.active === 5
        ? { done: true, value: stats }
        : { done: false, progress: stats?.active ?? 0 };
    });
    expect((await api.call("POST", `/executions/${executionId}/cancel`, {})).status).toBe(202);
    const view = await api.waitForEnd(executionId);
    expect(view.status).toBe("CANCELLED");
    expect(view.nodes[0]?.status).toBe("CANCELLED");
    await waitForProgress("the running items to stop", async () => {
      const active = seen.get(executionId)?.active ?? 0;
      return active === 0 ? { done: true, value: active } : { done: false, progress: active };
    });
    expect(seen.get(executionId)!.runs).toBe(5);
  });

  it("fails a map given more than 100,000 items with MapTooLarge, before running any", async () => {
    const executionId = await start(
      {
        name: `map-too-large-${kind}`,
        nodes: [
          {
            id: "each",
            type: "map",
            params: { items: "{% [0..100000] %}", task: { type: "probe", params: { value: 1, ms: 0 } } },
            retry: { maxAttempts: 1 },
          },
        ],
      },
      null,
    );
    const view = await api.waitForEnd(executionId);
    expect(view.status).toBe("FAILED");
    expect(view.nodes[0]).toMatchObject({ status: "FAILED", error: { name: "MapTooLarge" } });
    expect(seen.get(executionId)).toBeUndefined();
  });

  it("refuses a map whose task type is unknown, runs inside the engine, or uses $item outside the task", async () => {
    const refused = await api.call("POST", "/workflows", {
      name: `map-bad-${kind}`,
      nodes: [
        { id: "a", type: "map", params: { items: [1], task: { type: "nope" } } },
        { id: "b", type: "map", params: { items: [1], task: { type: "merge" } } },
        {
          id: "c",
          type: "map",
          params: { items: "{% $item %}", task: { type: "probe", params: { value: 1, ms: 0 } } },
        },
        { id: "d", type: "map", params: { items: [1], maxConcurrency: "{% 3 %}", task: { type: "noop" } } },
      ],
    });
    expect(refused.status).toBe(400);
    const paths = refused.body.error.details.map((d: { path: string }) => d.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        "nodes[0].params.task.type",
        "nodes[1].params.task.type",
        "nodes[2].params.items",
        "nodes[3].params.maxConcurrency",
      ]),
    );
  });
});
