/**
 * `npm start` as a process (local/main.ts under tsx's loader, as `npm start` runs it) on the aws
 * backend (the emulator), so that what became of a running task can be read after the process is
 * gone:
 * - one Ctrl-C that reaches it twice back to back (the terminal's, and npm's or tsx's copy) is one
 *   press: it waits for the running task, says "stopped" and exits 0 — the node COMPLETED;
 * - a second press, after the same-press window, forces the exit (130) — the node is left RUNNING.
 */
import { setTimeout as delay } from "node:timers/promises";
import { describe, expect, inject, it } from "vitest";
import { SAME_PRESS_MS } from "../../cli/signals.js";
import { startLocalRuntime } from "../../local/runtime.js";
import type { ExecutionView } from "../../shared/engine/views.js";
import { type Runtime, startNpmStart } from "../support/npm-start.js";
import { PATIENT, waitForProgress } from "../support/progress.js";
import { apiClient } from "../support/runtime.js";

/** Starts a one-node `sleep` execution and waits until its node runs. */
async function runningSleep(runtime: Runtime, ms: number): Promise<string> {
  const api = apiClient(runtime.url);
  const registered = await api.call("POST", "/workflows", {
    name: "nap",
    nodes: [{ id: "nap", type: "sleep", params: { ms } }],
  });
  expect([200, 201]).toContain(registered.status);
  const execution = await api.call("POST", "/executions", { workflow: "nap" });
  expect(execution.status).toBe(202);
  const executionId: string = execution.body.executionId;
  await waitForProgress("the sleep node to run", async () => {
    const view = (await api.call("GET", `/executions/${executionId}`)).body as ExecutionView;
    const status = view.nodes.find((node) => node.id === "nap")?.status;
    return status === "RUNNING" ? { done: true, value: undefined } : { done: false, progress: status };
  });
  return executionId;
}

/** The execution as the emulator holds it after the process is gone, read through a runtime of the same resources. */
async function executionAfterwards(runtime: Runtime, executionId: string): Promise<ExecutionView> {
  const reader = await startLocalRuntime({
    backend: "aws",
    port: 0,
    endpoint: inject("awsEndpoints"),
    region: "us-east-1",
    credentials: { accessKeyId: "test", secretAccessKey: "test" },
    names: runtime.names,
    sweep: false,
    concurrency: 1,
    env: {},
    onError: () => {},
  });
  try {
    return (await apiClient(reader.url).call("GET", `/executions/${executionId}`)).body as ExecutionView;
  } finally {
    await reader.stop();
  }
}

describe("npm start's signals", PATIENT, () => {
  it("takes one Ctrl-C delivered twice as one: waits for the running task, then exits 0", async () => {
    const runtime = await startNpmStart();
    // Longer than claimAfterSeconds (5 s): a shorter attempt writes its claim only with its end, so
    // it never shows RUNNING (docs/guarantees.md, lazy claims).
    const executionId = await runningSleep(runtime, 8000);
    runtime.child.kill("SIGINT");
    runtime.child.kill("SIGINT");
    expect(await runtime.exited).toBe(0);
    expect(runtime.output()).toContain("weft: SIGINT received, stopping (waiting for running tasks");
    expect(runtime.output()).toContain("weft: stopped");
    expect(runtime.output()).not.toContain("exiting without waiting");
    const view = await executionAfterwards(runtime, executionId);
    expect(view.nodes.find((node) => node.id === "nap")).toMatchObject({
      status: "COMPLETED",
      output: { sleptMs: 8000 },
    });
    expect(view.status).toBe("SUCCEEDED");
  });

  it("takes a second press after the window as the force: exits 130 without waiting", async () => {
    const runtime = await startNpmStart();
    const executionId = await runningSleep(runtime, 10 * 60_000);
    runtime.child.kill("SIGINT");
    await waitForProgress("the graceful stop to begin", async () =>
      runtime.output().includes("stopping (waiting for running tasks")
        ? { done: true, value: undefined }
        : { done: false, progress: runtime.output().length },
    );
    // The window itself, not a guess at how long something takes: a press within it is the same press.
    await delay(SAME_PRESS_MS + 50);
    runtime.child.kill("SIGINT");
    expect(await runtime.exited).toBe(130);
    expect(runtime.output()).toContain("weft: SIGINT again, exiting without waiting for running tasks");
    expect(runtime.output()).not.toContain("weft: stopped");
    const view = await executionAfterwards(runtime, executionId);
    expect(view.nodes.find((node) => node.id === "nap")?.status).toBe("RUNNING");
  });
});
