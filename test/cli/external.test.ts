/**
 * `weft workers` and `weft callback complete|fail|heartbeat` against a local runtime started here:
 * the real binary for the main paths, runCli in-process for the usage errors (no start-up cost).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { COMMANDS, USAGE } from "../../cli/args.js";
import { WeftClient } from "../../cli/client.js";
import { type CliIo, runCli } from "../../cli/main.js";
import { renderWorkers } from "../../cli/render.js";
import type { LocalRuntime } from "../../local/runtime.js";
import type { ExecutionView } from "../../shared/engine/views.js";
import { waitForProgress } from "../support/progress.js";
import { type ApiClient, apiClient } from "../support/runtime.js";
import { startExampleRuntime, weft } from "./support.js";

let runtime: LocalRuntime;
let api: ApiClient;

beforeAll(async () => {
  runtime = await startExampleRuntime();
  api = apiClient(runtime.url);
  for (const definition of [
    {
      name: "cli-transcode",
      nodes: [{ id: "gpu", type: "transcode", runsOn: { pool: "cli-gpu" }, heartbeatSeconds: 5 }],
    },
    {
      name: "cli-approval",
      nodes: [
        { id: "approve", type: "callback", params: { timeoutSeconds: 60 } },
        { id: "after", type: "pass", dependsOn: ["approve"] },
      ],
    },
  ]) {
    expect((await api.call("POST", "/workflows", definition)).status).toBe(201);
  }
});
afterAll(() => runtime?.stop());

/** runCli in-process with captured streams. */
async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const stream = (into: string[]) => ({
    write: (chunk: string) => {
      into.push(chunk);
      return true;
    },
  });
  const io = {
    stdout: stream(out),
    stderr: stream(err),
    env: { NO_COLOR: "1" },
  } as unknown as CliIo;
  const code = await runCli([...args, "--api", runtime.url], io);
  return { code, stdout: out.join(""), stderr: err.join("") };
}

/** A callback node waiting in a new execution of cli-approval, and its token. */
async function waitingCallback(): Promise<{ executionId: string; token: string }> {
  const started = await api.call("POST", "/executions", { workflow: "cli-approval" });
  expect(started.status).toBe(202);
  const executionId = started.body.executionId as string;
  const token = await waitForProgress(`callback of ${executionId} to wait`, async () => {
    const view = (await api.call("GET", `/executions/${executionId}`)).body as ExecutionView;
    const node = view.nodes.find((n) => n.id === "approve");
    return node?.callbackToken
      ? { done: true, value: node.callbackToken }
      : { done: false, progress: node?.status ?? "none" };
  });
  return { executionId, token };
}

describe("weft workers", () => {
  it("lists each worker with its pool, health, running tasks and last heartbeat; --json the API's page", async () => {
    const client = new WeftClient({ baseUrl: runtime.url });
    const empty = await weft(["workers", "--api", runtime.url]);
    expect(empty.code).toBe(0);
    expect(empty.stdout.trim()).toBe("no workers registered");

    await client.registerWorker({ workerId: "cli-gpu-1", pool: "cli-gpu", maxParallel: 2 });
    await client.registerWorker({ workerId: "cli-idle", pool: "elsewhere" });
    const started = await api.call("POST", "/executions", { workflow: "cli-transcode" });
    // The runtime's poller offers the node to its pool; the long poll takes it.
    const task = await client.pollTask("cli-gpu-1", { waitSeconds: 10 });
    expect(task).toMatchObject({ executionId: started.body.executionId, nodeId: "gpu" });

    const table = await weft(["workers", "--api", runtime.url]);
    expect(table.code).toBe(0);
    expect(table.stderr).toBe("");
    const lines = table.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^WORKER\s+POOL\s+STATUS\s+TASKS\s+LAST HEARTBEAT$/);
    expect(lines.slice(1).sort()).toEqual([
      expect.stringMatching(
        /^cli-gpu-1\s+cli-gpu\s+healthy\s+1\/2\s+\d{4}-\d\d-\d\dT[\d:.]+Z \((\d+ms|[\d.]+s|\d+m\d\ds) ago\)$/,
      ),
      expect.stringMatching(/^cli-idle\s+elsewhere\s+healthy\s+0\/1\s+\d{4}-/),
    ]);

    const json = await cli(["workers", "--json"]);
    expect(json.code).toBe(0);
    const page = JSON.parse(json.stdout) as { workers: Array<Record<string, unknown>> };
    expect(page.workers.find((w) => w.workerId === "cli-gpu-1")).toMatchObject({
      pool: "cli-gpu",
      status: "healthy",
      maxParallel: 2,
      tasks: [expect.objectContaining({ executionId: started.body.executionId, nodeId: "gpu", attempt: 1 })],
    });

    // The task ends; the client's calls a worker process makes (poll 204, heartbeat, deregister).
    if (!task) throw new Error("no task");
    expect(await client.heartbeatTask(task.taskToken)).toEqual({ cancelRequested: false });
    expect(await client.completeTask(task.taskToken, { done: true })).toEqual({ accepted: true });
    expect(await client.pollTask("cli-gpu-1", { waitSeconds: 0 })).toBeUndefined();
    expect(await client.workerHeartbeat("cli-gpu-1")).toEqual({ cancellations: [] });
    expect(await client.deregisterWorker("cli-gpu-1")).toEqual({ workerId: "cli-gpu-1", released: 0 });
    expect(await client.deregisterWorker("cli-idle")).toEqual({ workerId: "cli-idle", released: 0 });
    expect((await api.waitForEnd(started.body.executionId)).status).toBe("SUCCEEDED");
  });

  it("a long poll ends when its caller aborts it, and the server answers nobody", async () => {
    const client = new WeftClient({ baseUrl: runtime.url });
    await client.registerWorker({ workerId: "cli-aborted", pool: "nothing-here" });
    const controller = new AbortController();
    const began = Date.now();
    setTimeout(() => controller.abort(new Error("shutting down")), 100);
    await expect(
      client.pollTask("cli-aborted", { waitSeconds: 20, signal: controller.signal }),
    ).rejects.toThrow("shutting down");
    expect(Date.now() - began).toBeLessThan(5000);
    await client.deregisterWorker("cli-aborted");
  });

  it("stopping the runtime ends a long poll in flight at once (204)", async () => {
    const other = await startExampleRuntime();
    const client = new WeftClient({ baseUrl: other.url });
    await client.registerWorker({ workerId: "w", pool: "p" });
    const polling = client.pollTask("w", { waitSeconds: 20 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const began = Date.now();
    await other.stop();
    expect(await polling).toBeUndefined();
    expect(Date.now() - began).toBeLessThan(5000);
  });
});

describe("weft callback", () => {
  it("heartbeat then complete settles the node with --output; a second complete fails (exit 1, 409)", async () => {
    const { executionId, token } = await waitingCallback();
    const beat = await weft(["callback", "heartbeat", "--token", token, "--api", runtime.url]);
    expect(beat.code).toBe(0);
    expect(beat.stdout.trim()).toBe("callback heartbeat recorded");

    const done = await weft([
      "callback",
      "complete",
      "--token",
      token,
      "--output",
      '{"approved": true, "ratio": -0}',
      "--api",
      runtime.url,
      "--json",
    ]);
    expect(done.stderr).toBe("");
    expect(done.code).toBe(0);
    expect(JSON.parse(done.stdout)).toEqual({ accepted: true });

    const again = await cli(["callback", "complete", "--token", token]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^weft: the callback token is stale/);
    // The token is never echoed.
    expect(again.stderr).not.toContain(token);

    const view = await api.waitForEnd(executionId);
    expect(view.status).toBe("SUCCEEDED");
    const approved = view.nodes.find((n) => n.id === "approve")?.output as { ratio?: number } | undefined;
    expect(Object.is(approved?.ratio, -0)).toBe(true);
  });

  it("complete without --output gives the node a null output", async () => {
    const { executionId, token } = await waitingCallback();
    const done = await cli(["callback", "complete", "--token", token]);
    expect(done.code).toBe(0);
    expect(done.stdout.trim()).toBe("callback completed (output null): its node goes on");
    const view = await api.waitForEnd(executionId);
    expect(view.nodes.find((n) => n.id === "approve")?.output).toBeNull();
  });

  it("fail ends the node with the error given (for good); --retryable leaves it to the retry policy", async () => {
    const { executionId, token } = await waitingCallback();
    const failed = await cli([
      "callback",
      "fail",
      "--token",
      token,
      "--error-name",
      "Rejected",
      "--error-message",
      "not approved",
    ]);
    expect(failed.code).toBe(0);
    expect(failed.stdout.trim()).toBe("callback failed: its node failed");
    const view = await api.waitForEnd(executionId);
    expect(view.status).toBe("FAILED");
    expect(view.nodes.find((n) => n.id === "approve")?.error).toMatchObject({
      name: "Rejected",
      message: "not approved",
    });
  });

  it("refuses what is not a command: no token, no subcommand, flags of another command, bad --output", async () => {
    const noToken = await cli(["callback", "complete"]);
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toContain('"callback complete" needs --token T');
    const noSub = await cli(["callback"]);
    expect(noSub.code).toBe(2);
    expect(noSub.stderr).toContain(
      '"callback" needs a subcommand: "callback complete", "callback fail" or "callback heartbeat"',
    );
    const wrongFlag = await cli(["callback", "heartbeat", "--token", "t", "--output", "1"]);
    expect(wrongFlag.code).toBe(2);
    expect(wrongFlag.stderr).toContain('--output does not apply to "callback heartbeat"');
    const badJson = await cli(["callback", "complete", "--token", "t", "--output", "{nope"]);
    expect(badJson.code).toBe(2);
    expect(badJson.stderr).toContain("--output: invalid JSON at line 1, column 2");
    expect(badJson.stderr).toContain("use @FILE to read output from a file");
    const noFile = await cli(["callback", "complete", "--token", "t", "--output", "@/no/such/file.json"]);
    expect(noFile.code).toBe(1);
    expect(noFile.stderr).toContain("cannot read /no/such/file.json: no such file");
  });

  it("a token the API never gave: exit 1 with the API's 400, naming the field", async () => {
    const result = await cli(["callback", "heartbeat", "--token", "not-a-token", "--json"]);
    expect(result.code).toBe(1);
    const { error } = JSON.parse(result.stdout) as {
      error: { code: string; details: Array<{ path: string }> };
    };
    expect(error.code).toBe("InvalidRequest");
    expect(error.details.map((d) => d.path)).toEqual(["token"]);
  });
});

describe("weft --help", () => {
  it("lists the worker and callback commands with their flags", () => {
    for (const name of ["workers", "worker", "callback complete", "callback fail", "callback heartbeat"])
      expect(COMMANDS.map((c) => c.name)).toContain(name);
    expect(USAGE).toContain("  workers\n      the registered external workers");
    expect(USAGE).toContain("  callback complete --token T [--output JSON|@file]\n");
    expect(USAGE).toContain("  callback fail --token T [--error-name N] [--error-message M] [--retryable]\n");
    expect(USAGE).toContain("  callback heartbeat --token T\n");
  });

  it("routes `weft worker` to its own command and flags", async () => {
    const help = await cli(["worker", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: weft worker --pool POOL --tasks DIR/);
    const missing = await cli(["worker", "--tasks", "tasks"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('"worker" needs --pool POOL');
    const notFirst = await cli(["--json", "worker"]);
    expect(notFirst.code).toBe(2);
    expect(notFirst.stderr).toContain('"worker" must come first');
  });

  it("renders an empty fleet and stale or dead workers", () => {
    expect(renderWorkers({ color: false }, [], 0)).toBe("no workers registered");
    const now = Date.parse("2026-01-01T00:05:00.000Z");
    const text = renderWorkers(
      { color: false },
      [
        {
          workerId: "w-1",
          pool: "gpu",
          status: "dead",
          executors: [],
          capabilities: {},
          labels: [],
          maxParallel: 4,
          registeredAt: "2026-01-01T00:00:00.000Z",
          lastHeartbeatAt: "2026-01-01T00:01:00.000Z",
          tasks: [{ executionId: "e", nodeId: "n", attempt: 1, claimedAt: "2026-01-01T00:00:30.000Z" }],
          taskCount: 1,
        },
      ],
      now,
    );
    expect(text.split("\n")).toEqual([
      "WORKER  POOL  STATUS   TASKS      LAST HEARTBEAT",
      "w-1     gpu   dead     1/4        2026-01-01T00:01:00.000Z (4m00s ago)",
    ]);
  });
});
