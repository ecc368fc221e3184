/**
 * The local runtime gives worker invocations the deployed worker's timeout (300 s by default, or
 * `workerTimeoutSeconds`), and tells the engine the same, so `npm start` cuts attempts and refuses
 * registrations as a deployed stack does.
 */
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import type { LocalRuntime } from "../../local/runtime.js";
import { createTaskRegistry } from "../../shared/tasks/builtins.js";
import { defineTask, type TaskType } from "../../shared/tasks/task-type.js";
import { apiClient, startRuntime } from "../support/runtime.js";

/** Records the time each run is given (its deadline less now). */
function probe(given: number[]): TaskType<unknown> {
  return defineTask({
    type: "probe",
    params: z.object({}).strict().optional(),
    run: ({ context }) => {
      given.push(context.deadline - context.now());
      return null;
    },
  }) as TaskType<unknown>;
}

let runtime: LocalRuntime | undefined;
afterEach(async () => {
  await runtime?.stop();
  runtime = undefined;
});

async function runProbe(options: { workerTimeoutSeconds?: number }) {
  const given: number[] = [];
  runtime = await startRuntime("memory", { tasks: createTaskRegistry([probe(given)]), ...options });
  const api = apiClient(runtime.url);
  const registered = await api.call("POST", "/workflows", {
    name: "probe",
    // Expected to take 10 s by default, and its whole timeout never fits after a parent: runs by message.
    nodes: [{ id: "p", type: "probe" }],
  });
  expect(registered.status).toBe(201);
  const started = await api.call("POST", "/executions", { workflow: "probe" });
  const done = await api.waitForEnd(started.body.executionId);
  expect(done.status).toBe("SUCCEEDED");
  return { api, given };
}

describe("local runtime: the worker's timeout", () => {
  it("is the deployed default, 300 s: a node gets at most 295 s, and a longer timeout is refused", async () => {
    const { api, given } = await runProbe({});
    // Its own default timeout is 295 s too; the invocation (300 s less the 5 s margin) allows no more.
    expect(given).toHaveLength(1);
    expect(given[0]).toBeLessThanOrEqual(295_000);
    expect(given[0]).toBeGreaterThan(290_000);
    const refused = await api.call("POST", "/workflows", {
      name: "too-long",
      nodes: [{ id: "slow", type: "probe", timeoutSeconds: 600 }],
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.details).toEqual([
      expect.objectContaining({
        path: "nodes[0].timeoutSeconds",
        code: "timeout_exceeds_worker",
        message: expect.stringContaining("function timeout of 300 s"),
      }),
    ]);
  });

  it("follows the runtime's workerTimeoutSeconds, for the invocations and the engine alike", async () => {
    const { api, given } = await runProbe({ workerTimeoutSeconds: 60 });
    expect(given[0]).toBeLessThanOrEqual(55_000);
    expect(given[0]).toBeGreaterThan(50_000);
    const refused = await api.call("POST", "/workflows", {
      name: "too-long",
      nodes: [{ id: "slow", type: "probe", timeoutSeconds: 56 }],
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.details[0].message).toContain("at most 55 s");
  });
});
