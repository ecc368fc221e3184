/**
 * External workers end to end: two real `weft worker` processes (`node bin/weft.js worker …`, each an
 * OS process of its own) against the local runtime on the emulators (DynamoDB + SQS), running a task
 * type of test/fixtures/worker-tasks. Each node lands only where its `runsOn` allows; a worker killed
 * with SIGKILL while it holds a task loses it to the other once its lease expires (attempt 2,
 * recovered by the sweeper); a worker told SIGTERM while it holds a task finishes it, deregisters and
 * exits 0.
 */
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Logger } from "@aws-lambda-powertools/logger";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalRuntime } from "../../local/runtime.js";
import type { NodeView } from "../../shared/engine/views.js";
import { EMULATOR } from "../support/backends.js";
import { PATIENT, waitForProgress } from "../support/progress.js";
import { type ApiClient, apiClient, type JsonBody, startRuntime } from "../support/runtime.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const TASKS_DIR = path.join(repoRoot, "test/fixtures/worker-tasks");

/** The sweeper looks often and at once, so an expired lease is recovered in about a second. */
const fastSweep = { firstCheckMs: 0, graceMs: 200, idleMs: 1000 };

interface WorkerProcess {
  name: string;
  id: string;
  child: ChildProcess;
  stdout: string;
  stderr: string;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  hasExited: boolean;
}

describe(`weft worker processes end to end (${EMULATOR})`, PATIENT, () => {
  let runtime: LocalRuntime;
  let api: ApiClient;
  const workers = new Map<string, WorkerProcess>();

  function spawnWorker(name: string, id: string, flags: string[]): WorkerProcess {
    const env: Record<string, string | undefined> = {
      ...process.env,
      WEFT_TEST_WORKER_NAME: name,
      NO_COLOR: "1",
    };
    delete env.WEFT_API_URL;
    const child = spawn(
      process.execPath,
      [
        path.join(repoRoot, "bin/weft.js"),
        "worker",
        "--pool",
        "render",
        "--tasks",
        TASKS_DIR,
        "--worker-id",
        id,
        "--api",
        runtime.url,
        "--max-idle-seconds",
        "2",
        ...flags,
      ],
      { cwd: repoRoot, env, stdio: ["ignore", "pipe", "pipe"] },
    );
    const worker: WorkerProcess = {
      name,
      id,
      child,
      stdout: "",
      stderr: "",
      hasExited: false,
      exited: new Promise((resolve) => {
        child.on("exit", (code) => {
          worker.hasExited = true;
          resolve(code);
        });
      }),
    };
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      worker.stdout += chunk;
    });
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
      worker.stderr += chunk;
    });
    workers.set(id, worker);
    return worker;
  }

  async function registeredIds(): Promise<string[]> {
    const { status, body } = await api.call("GET", "/workers");
    expect(status).toBe(200);
    return (body.workers as Array<{ workerId: string }>).map((w) => w.workerId);
  }

  /** Every worker's output so far (its progress), failing at once if one exited unasked. */
  function workersProgress(): string[] {
    for (const w of workers.values())
      if (w.hasExited && !w.child.killed)
        throw new Error(`worker ${w.name} exited on its own:\n${w.stdout}\n${w.stderr}`);
    return [...workers.values()].map((w) => `${w.name}: ${w.stderr.length}`);
  }

  async function start(definition: { name: string }): Promise<string> {
    const registered = await api.call("POST", "/workflows", definition);
    expect(registered.status, JSON.stringify(registered.body)).toBeLessThan(300);
    const started = await api.call("POST", "/executions", { workflow: definition.name });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    return started.body.executionId as string;
  }

  /** Waits until the node runs on some worker: that worker's id. */
  async function runningOn(executionId: string, nodeId: string): Promise<string> {
    return waitForProgress(`node ${nodeId} running on a worker`, async () => {
      const { body } = await api.call("GET", `/executions/${executionId}`);
      const node = (body.nodes as NodeView[]).find((n) => n.id === nodeId);
      if (node?.status === "RUNNING" && node.workerId !== undefined)
        return { done: true, value: node.workerId };
      return { done: false, progress: [node?.status, node?.attempt, workersProgress()] };
    });
  }

  beforeAll(async () => {
    runtime = await startRuntime(EMULATOR, {
      sweepIntervalMs: 500,
      engineOptions: { sweep: fastSweep },
      sweeperLogger: new Logger({ serviceName: "weft-sweeper", logLevel: "SILENT" }),
    });
    api = apiClient(runtime.url);
    spawnWorker("A", "e2e-gpu", ["--capability", "gpu=nvidia", "--label", "high-mem", "--max-parallel", "2"]);
    spawnWorker("B", "e2e-cpu", ["--capability", "gpu=none", "--max-parallel", "2"]);
    await waitForProgress("both workers registered", async () => {
      const ids = await registeredIds();
      // Registered, and each has printed its id.
      const printed = [...workers.values()].every((w) => w.stdout.includes("\n"));
      return ids.includes("e2e-gpu") && ids.includes("e2e-cpu") && printed
        ? { done: true, value: undefined }
        : { done: false, progress: [ids, workersProgress()] };
    });
  });

  afterAll(async () => {
    for (const w of workers.values()) if (!w.hasExited) w.child.kill("SIGKILL");
    await Promise.all([...workers.values()].map((w) => w.exited));
    await runtime?.stop();
  });

  it("prints each worker's id when it registers", () => {
    expect(workers.get("e2e-gpu")?.stdout).toBe("e2e-gpu\n");
    expect(workers.get("e2e-cpu")?.stdout).toBe("e2e-cpu\n");
  });

  it("runs every node only on a worker its placement allows", async () => {
    const node = (id: string, runsOn: Record<string, unknown>) => ({
      id,
      type: "whoami",
      params: { ms: 400 },
      runsOn: { pool: "render", ...runsOn },
      heartbeatSeconds: 2,
    });
    const executionId = await start({
      name: "e2e-placement",
      nodes: [
        node("gpu-1", { capabilities: { gpu: "nvidia" } }),
        node("gpu-2", { capabilities: { gpu: "nvidia" } }),
        node("high-mem", { labels: ["high-mem"] }),
        node("allowed-gpu", { allowedWorkers: ["e2e-gpu"] }),
        node("cpu-1", { capabilities: { gpu: "none" } }),
        node("cpu-2", { capabilities: { gpu: "none" } }),
        node("allowed-cpu", { allowedWorkers: ["e2e-cpu"] }),
        node("not-gpu", { forbiddenWorkers: ["e2e-gpu"] }),
        node("not-cpu", { forbiddenWorkers: ["e2e-cpu"] }),
      ],
    } as { name: string });
    const view = await api.waitForEnd(executionId);
    expect(view.status, JSON.stringify(view)).toBe("SUCCEEDED");
    // Who ran each node: the worker process's own name (its output), and the worker the engine
    // gave it to (its NodeStarted event).
    const events = await api.call("GET", `/executions/${executionId}/events?limit=100`);
    const takenBy = new Map(
      (events.body.events as JsonBody[])
        .filter((e) => e.type === "NodeStarted")
        .map((e) => [e.nodeId as string, e.detail?.workerId as string]),
    );
    const where = Object.fromEntries(
      view.nodes.map((n: JsonBody) => [n.id, `${n.output.ranBy}@${takenBy.get(n.id)}#${n.attempt}`]),
    );
    const onA = "A@e2e-gpu#1";
    const onB = "B@e2e-cpu#1";
    expect(where).toEqual({
      "gpu-1": onA,
      "gpu-2": onA,
      "high-mem": onA,
      "allowed-gpu": onA,
      "not-cpu": onA,
      "cpu-1": onB,
      "cpu-2": onB,
      "allowed-cpu": onB,
      "not-gpu": onB,
    });
  });

  it("moves the task of a worker killed with SIGKILL to the other once its lease expires", async () => {
    const executionId = await start({
      name: "e2e-crash",
      nodes: [
        {
          id: "long",
          type: "whoami",
          params: { ms: 6000 },
          runsOn: { pool: "render" },
          heartbeatSeconds: 2,
          timeoutSeconds: 600,
          retry: { maxAttempts: 3, backoff: { initialSeconds: 0 } },
        },
      ],
    } as { name: string });
    const holder = await runningOn(executionId, "long");
    const victim = workers.get(holder)!;
    const survivor = [...workers.values()].find((w) => w.id !== holder)!;
    victim.child.kill("SIGKILL");
    expect(await victim.exited).toBeNull();

    const view = await api.waitForEnd(executionId);
    expect(view.status, JSON.stringify(view)).toBe("SUCCEEDED");
    expect(view.nodes[0]).toMatchObject({
      status: "COMPLETED",
      attempt: 2,
      output: { ranBy: survivor.name, attempt: 2 },
    });
    const events = await api.call("GET", `/executions/${executionId}/events`);
    const started = (events.body.events as JsonBody[]).filter((e) => e.type === "NodeStarted");
    expect(started.map((e) => [e.attempt, e.detail?.workerId])).toEqual([
      [1, holder],
      [2, survivor.id],
    ]);
  });

  it("lets a worker told SIGTERM finish its task, deregister and exit 0", async () => {
    const alive = [...workers.values()].filter((w) => !w.hasExited);
    expect(alive).toHaveLength(1);
    const worker = alive[0]!;
    const executionId = await start({
      name: "e2e-drain",
      nodes: [
        {
          id: "steady",
          type: "whoami",
          params: { ms: 3000 },
          runsOn: { pool: "render", allowedWorkers: [worker.id] },
          // A lease longer than the task: this test is about the drain, and a loaded machine's slow
          // heartbeat answer must not lose the attempt (lease expiry is the SIGKILL test's subject).
          heartbeatSeconds: 10,
        },
      ],
    } as { name: string });
    expect(await runningOn(executionId, "steady")).toBe(worker.id);
    worker.child.kill("SIGTERM");
    expect(await worker.exited, worker.stderr).toBe(0);

    const view = await api.waitForEnd(executionId);
    expect(view.status).toBe("SUCCEEDED");
    expect(view.nodes[0]).toMatchObject({
      status: "COMPLETED",
      attempt: 1,
      output: { ranBy: worker.name, attempt: 1 },
    });
    expect(await registeredIds()).not.toContain(worker.id);
    expect(worker.stderr).toContain(`worker ${worker.id} deregistered`);
    // Never a token in its log.
    expect(worker.stderr).not.toMatch(/taskToken|eyJ/);
  });
});
