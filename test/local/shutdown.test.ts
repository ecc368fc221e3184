/**
 * `npm start` as a process (local/main.ts under tsx's loader, as `npm start` runs it) on the aws
 * backend (the emulator), so that what became of a running task can be read after the process is
 * gone:
 * - one Ctrl-C that reaches it twice back to back (the terminal's, and npm's or tsx's copy) is one
 *   press: it waits for the running task, says "stopped" and exits 0 — the node COMPLETED;
 * - a second press, after the same-press window, forces the exit (130) — the node is left RUNNING.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { setTimeout as delay } from "node:timers/promises";
import { afterAll, describe, expect, inject, it } from "vitest";
import { SAME_PRESS_MS } from "../../cli/signals.js";
import { type LocalResourceNames, startLocalRuntime } from "../../local/runtime.js";
import type { ExecutionView } from "../../shared/engine/views.js";
import { repoRoot } from "../cli/support.js";
import { uniqueName } from "../support/aws.js";
import { PATIENT, waitForProgress } from "../support/progress.js";
import { apiClient } from "../support/runtime.js";

interface Runtime {
  child: ChildProcess;
  output(): string;
  url: string;
  names: LocalResourceNames;
  exited: Promise<number | null>;
}

const started: Runtime[] = [];
afterAll(async () => {
  for (const runtime of started) {
    if (runtime.child.exitCode === null && runtime.child.signalCode === null) {
      runtime.child.kill("SIGKILL");
      await runtime.exited;
    }
  }
});

/** `npm start -- --port 0 --sweep-interval 0` on fresh emulator resources; resolves once it listens. */
async function startNpmStart(): Promise<Runtime> {
  const endpoints = inject("awsEndpoints");
  const names: LocalResourceNames = {
    table: uniqueName("shutdown-table"),
    queue: uniqueName("shutdown-tasks"),
    deadLetter: uniqueName("shutdown-dlq"),
    eventBus: uniqueName("shutdown-bus"),
    payloadBucket: uniqueName("shutdown-payloads").toLowerCase(),
  };
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "local/main.ts", "--port", "0", "--sweep-interval", "0"],
    {
      cwd: repoRoot,
      env: {
        ...process.env,
        NO_COLOR: "1",
        AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamodb,
        AWS_ENDPOINT_URL_SQS: endpoints.sqs,
        AWS_ENDPOINT_URL_EVENTBRIDGE: endpoints.eventbridge,
        AWS_ENDPOINT_URL_S3: endpoints.s3,
        AWS_REGION: "us-east-1",
        AWS_ACCESS_KEY_ID: "test",
        AWS_SECRET_ACCESS_KEY: "test",
        WEFT_TABLE_NAME: names.table,
        WEFT_QUEUE_NAME: names.queue,
        WEFT_DLQ_NAME: names.deadLetter,
        WEFT_EVENT_BUS_NAME: names.eventBus,
        WEFT_PAYLOAD_BUCKET: names.payloadBucket,
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    output += chunk;
  });
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    output += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  const runtime: Runtime = { child, output: () => output, url: "", names, exited };
  started.push(runtime);
  runtime.url = await waitForProgress("npm start to listen", async () => {
    const url = /API listening on (http:\/\/[\d.:]+)/.exec(output)?.[1];
    if (url !== undefined) return { done: true, value: url };
    if (child.exitCode !== null) throw new Error(`npm start exited ${child.exitCode}:\n${output}`);
    return { done: false, progress: output.length, state: output };
  });
  return runtime;
}

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
    const executionId = await runningSleep(runtime, 3000);
    runtime.child.kill("SIGINT");
    runtime.child.kill("SIGINT");
    expect(await runtime.exited).toBe(0);
    expect(runtime.output()).toContain("weft: SIGINT received, stopping (waiting for running tasks");
    expect(runtime.output()).toContain("weft: stopped");
    expect(runtime.output()).not.toContain("exiting without waiting");
    const view = await executionAfterwards(runtime, executionId);
    expect(view.nodes.find((node) => node.id === "nap")).toMatchObject({
      status: "COMPLETED",
      output: { sleptMs: 3000 },
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
