/**
 * The loop of `weft worker` (cli/worker.ts), in process: first against a fake API (what it reports
 * for each kind of end, heartbeats, re-registration, retries, backoff), then against the real local
 * runtime's HTTP API (placement, max-parallel, cancellation, a graceful shutdown).
 */
import { EventEmitter } from "node:events";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { WeftClient } from "../../cli/client.js";
import { ApiError, UnreachableError } from "../../cli/errors.js";
import { SAME_PRESS_MS } from "../../cli/signals.js";
import {
  backoffMs,
  clientWorkerApi,
  ExternalWorker,
  type ReportedError,
  reportedError,
  type WorkerApi,
  type WorkerSettings,
} from "../../cli/worker.js";
import { parseWorkerArgs, runWorkerCommand, workerSettings } from "../../cli/worker-command.js";
import type { LocalRuntime } from "../../local/runtime.js";
import { TerminalError } from "../../shared/domain/errors.js";
import type { ExternalTask, TaskCancellation } from "../../shared/engine/external.js";
import type { Clock } from "../../shared/ports.js";
import { defineTask, type TaskType } from "../../shared/tasks/task-type.js";
import { PATIENT, waitForProgress } from "../support/progress.js";
import { type ApiClient, apiClient, startRuntime } from "../support/runtime.js";

const FIXTURE_TASKS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../fixtures/worker-tasks");

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function registry(...tasks: TaskType[]) {
  const byType = new Map(tasks.map((t) => [t.type, t]));
  return { get: (type: string) => byType.get(type), names: () => [...byType.keys()] };
}

/** Settings that keep in-process tests quick: short polls and pauses. */
function quick(
  registration: Partial<WorkerSettings["registration"]> = {},
  more: Partial<WorkerSettings> = {},
) {
  return {
    registration: {
      pool: "render",
      executors: [],
      capabilities: {},
      labels: [],
      maxParallel: 1,
      ...registration,
    },
    graceMs: 5000,
    pollWaitSeconds: 1,
    idleBackoff: { initialMs: 20, maxMs: 100 },
    retryBackoff: { initialMs: 10, maxMs: 50 },
    drainMs: 2000,
    ...more,
  } satisfies WorkerSettings;
}

// ── against a fake API ─────────────────────────────────────────────────────────────────────────

type Call =
  | { route: "register"; workerId?: string }
  | { route: "heartbeat" | "deregister"; workerId: string }
  | { route: "poll"; workerId: string }
  | { route: "heartbeatTask"; token: string }
  | { route: "complete"; token: string; output: unknown }
  | { route: "fail"; token: string; error: ReportedError };

/** An API holding a queue of tasks; each answer can be overridden per route. */
class FakeApi implements WorkerApi {
  readonly calls: Call[] = [];
  readonly queue: ExternalTask[] = [];
  heartbeatSeconds = 3600;
  registrations = 0;
  /** Per-route overrides: throw or answer differently. */
  heartbeatAnswer: () => { cancellations: TaskCancellation[] } = () => ({ cancellations: [] });
  taskHeartbeatAnswer: (token: string) => { cancelRequested: boolean } = () => ({ cancelRequested: false });
  pollError: (() => Error | undefined) | undefined;
  completeError: ((token: string) => Error | undefined) | undefined;

  async register(request: { workerId?: string }) {
    this.calls.push({ route: "register", ...(request.workerId ? { workerId: request.workerId } : {}) });
    this.registrations++;
    return { workerId: request.workerId ?? "w-fake", heartbeatSeconds: this.heartbeatSeconds };
  }
  async heartbeat(workerId: string) {
    this.calls.push({ route: "heartbeat", workerId });
    return this.heartbeatAnswer();
  }
  async deregister(workerId: string) {
    this.calls.push({ route: "deregister", workerId });
  }
  async poll(workerId: string, waitSeconds: number, signal?: AbortSignal) {
    this.calls.push({ route: "poll", workerId });
    const error = this.pollError?.();
    if (error) throw error;
    const until = Date.now() + waitSeconds * 1000;
    while (this.queue.length === 0 && Date.now() < until && !signal?.aborted) await sleep(5);
    return this.queue.shift();
  }
  async heartbeatTask(token: string) {
    this.calls.push({ route: "heartbeatTask", token });
    return this.taskHeartbeatAnswer(token);
  }
  async completeTask(token: string, output: unknown) {
    this.calls.push({ route: "complete", token, output });
    const error = this.completeError?.(token);
    if (error) throw error;
  }
  async failTask(token: string, error: ReportedError) {
    this.calls.push({ route: "fail", token, error });
  }

  ends(): Call[] {
    return this.calls.filter((c) => c.route === "complete" || c.route === "fail");
  }
}

let taskSeq = 0;
function taskOf(type: string, params: unknown, extra: Partial<ExternalTask> = {}): ExternalTask {
  taskSeq++;
  return {
    taskToken: `token-${taskSeq}`,
    executionId: `exec-${taskSeq}`,
    nodeId: "n",
    attempt: 1,
    idempotencyKey: `exec-${taskSeq}:n:1`,
    type,
    params,
    input: { some: "p4yl0ad" },
    deps: {},
    deadline: new Date(Date.now() + 60_000).toISOString(),
    heartbeatSeconds: 30,
    ...extra,
  };
}

/** Runs a worker on `api` until `until` holds, then shuts it down; its log and summary. */
async function runUntil(
  api: FakeApi,
  tasks: ReturnType<typeof registry>,
  until: () => boolean,
  settings: WorkerSettings = quick(),
  deps: { clock?: Clock; random?: () => number } = {},
) {
  const log: string[] = [];
  const shutdown = new AbortController();
  const worker = new ExternalWorker(settings, { api, tasks, log: (line) => log.push(line), ...deps });
  const running = worker.run(shutdown.signal);
  await waitForProgress("the fake worker", async () =>
    until() ? { done: true, value: undefined } : { done: false, progress: api.calls.length },
  );
  shutdown.abort();
  const summary = await running;
  return { log, summary };
}

const echo = defineTask({
  type: "echo",
  params: z.object({ say: z.string() }).strict(),
  run: ({ params, context }) => ({ said: params.say, key: context.idempotencyKey }),
});

describe("weft worker's loop (fake API)", () => {
  it("runs a task and completes it with its output; deregisters on shutdown", async () => {
    const api = new FakeApi();
    const task = taskOf("echo", { say: "s3cr3t-words" });
    api.queue.push(task);
    const { log, summary } = await runUntil(api, registry(echo), () => api.ends().length === 1);
    expect(api.ends()).toEqual([
      {
        route: "complete",
        token: task.taskToken,
        output: { said: "s3cr3t-words", key: task.idempotencyKey },
      },
    ]);
    expect(summary).toMatchObject({ workerId: "w-fake", completed: 1, failed: 0, lost: 0 });
    expect(api.calls.at(-1)).toEqual({ route: "deregister", workerId: "w-fake" });
    // Never a token or a payload in the log.
    const text = log.join("\n");
    expect(text).toContain(`task ${task.executionId}/n attempt 1: completed`);
    expect(text).not.toContain("token-");
    expect(text).not.toContain("p4yl0ad");
    expect(text).not.toContain("s3cr3t");
  });

  it("fails unknown types and invalid params for good, handler errors by their kind", async () => {
    const api = new FakeApi();
    const throwing = defineTask({
      type: "throwing",
      params: z.object({ terminal: z.boolean() }),
      run: ({ params }) => {
        if (params.terminal) throw new TerminalError("no such file", { code: "MissingFile" });
        // A TerminalError of another copy of the errors module: duck-typed.
        if (params.terminal === false) throw Object.assign(new Error("flaky disk"), { name: "DiskError" });
      },
    });
    const duck = defineTask({
      type: "duck",
      params: z.unknown(),
      run: () => {
        throw Object.assign(new Error("other bundle"), { name: "Terminal", terminal: true });
      },
    });
    const tasks = [
      taskOf("nope", {}),
      taskOf("echo", { say: 42 }),
      taskOf("throwing", { terminal: true }),
      taskOf("throwing", { terminal: false }),
      taskOf("duck", null),
    ];
    api.queue.push(...tasks);
    const { summary } = await runUntil(api, registry(echo, throwing, duck), () => api.ends().length === 5);
    const errors = Object.fromEntries(
      api.ends().map((c) => [c.route === "fail" ? c.token : "", c.route === "fail" ? c.error : undefined]),
    );
    expect(errors[tasks[0]!.taskToken]).toMatchObject({ name: "UnknownTaskType", retryable: false });
    expect(errors[tasks[0]!.taskToken]?.message).toContain('no task type "nope"');
    expect(errors[tasks[1]!.taskToken]).toMatchObject({ name: "ValidationError", retryable: false });
    expect(errors[tasks[1]!.taskToken]?.message).toContain("params.say");
    expect(errors[tasks[2]!.taskToken]).toEqual({
      name: "MissingFile",
      message: "no such file",
      retryable: false,
    });
    expect(errors[tasks[3]!.taskToken]).toEqual({
      name: "DiskError",
      message: "flaky disk",
      retryable: true,
    });
    expect(errors[tasks[4]!.taskToken]).toMatchObject({ name: "Terminal", retryable: false });
    expect(summary).toMatchObject({ completed: 0, failed: 5 });
  });

  it("heartbeats a task; told to stop, it aborts the task's signal and reports Cancelled", async () => {
    const api = new FakeApi();
    let beats = 0;
    api.taskHeartbeatAnswer = () => ({ cancelRequested: ++beats >= 2 });
    let aborted = false;
    const slow = defineTask({
      type: "slow",
      params: z.unknown(),
      run: async ({ context }) => {
        context.signal.addEventListener("abort", () => {
          aborted = true;
        });
        await context.sleep(60_000);
      },
    });
    api.queue.push(taskOf("slow", null, { heartbeatSeconds: 1 }));
    await runUntil(api, registry(slow), () => api.ends().length === 1);
    expect(aborted).toBe(true);
    expect(beats).toBe(2);
    expect(api.ends()[0]).toMatchObject({ route: "fail", error: { name: "Cancelled" } });
  });

  it("keeps a task's heartbeats at a fixed rate: a slow answer does not push the next one later", async () => {
    // Virtual time: each short pause passes it at once, each heartbeat answer takes 700 ms of it.
    // Long pauses (the registration's heartbeat, the deadline watch) wait for the end instead.
    let t = Date.now();
    const clock: Clock = {
      now: () => t,
      sleep: (ms, signal) =>
        new Promise((resolve, reject) => {
          if (signal?.aborted) return reject(new Error("aborted"));
          if (ms > 10_000) return signal?.addEventListener("abort", () => reject(new Error("aborted")));
          t += ms;
          setImmediate(resolve);
        }),
    };
    const api = new FakeApi();
    const taken = taskOf("held", null, { heartbeatSeconds: 2 });
    let takenAt = 0;
    api.poll = async (_workerId, _wait, signal) => {
      if (takenAt === 0) {
        takenAt = t;
        return taken;
      }
      await new Promise((resolve) => signal?.addEventListener("abort", resolve));
      return undefined;
    };
    const beatsAt: number[] = [];
    let release = () => {};
    api.heartbeatTask = async () => {
      beatsAt.push(t - takenAt);
      t += 700;
      if (beatsAt.length === 4) release();
      return { cancelRequested: false };
    };
    const held = defineTask({
      type: "held",
      params: z.unknown(),
      run: () => new Promise<void>((resolve) => (release = resolve)),
    });
    await runUntil(api, registry(held), () => api.ends().length === 1, quick(), { clock });
    expect(beatsAt.slice(0, 4)).toEqual([2000, 4000, 6000, 8000]);
  });

  it("a 409 on a task's heartbeat stops it without a report; a 409 on complete is logged", async () => {
    const api = new FakeApi();
    const lostOnBeat = taskOf("slow", null, { heartbeatSeconds: 1 });
    const lostOnComplete = taskOf("echo", { say: "x" });
    api.taskHeartbeatAnswer = (token) => {
      if (token === lostOnBeat.taskToken) throw new ApiError(409, "Conflict", "the token is stale");
      return { cancelRequested: false };
    };
    api.completeError = () => new ApiError(409, "Conflict", "the token is stale");
    let aborted = false;
    const slow = defineTask({
      type: "slow",
      params: z.unknown(),
      run: async ({ context }) => {
        context.signal.addEventListener("abort", () => {
          aborted = true;
        });
        await context.sleep(60_000);
      },
    });
    api.queue.push(lostOnBeat, lostOnComplete);
    const { log, summary } = await runUntil(
      api,
      registry(slow, echo),
      () => aborted && api.ends().length === 1,
      quick({ maxParallel: 2 }),
    );
    expect(api.ends()).toEqual([
      expect.objectContaining({ route: "complete", token: lostOnComplete.taskToken }),
    ]);
    expect(summary).toMatchObject({ completed: 0, failed: 0, lost: 2 });
    expect(log.join("\n")).toContain("the attempt was lost (complete answered 409)");
  });

  it("aborts the tasks a registration heartbeat cancels", async () => {
    const api = new FakeApi();
    api.heartbeatSeconds = 1;
    const task = taskOf("slow", null);
    let started = false;
    let told = false;
    api.heartbeatAnswer = () => {
      if (!started || told) return { cancellations: [] };
      told = true;
      const { taskToken, executionId, nodeId, attempt } = task;
      return {
        cancellations: [{ taskToken, executionId, nodeId, attempt, reason: "cancellation was requested" }],
      };
    };
    const slow = defineTask({
      type: "slow",
      params: z.unknown(),
      run: async ({ context }) => {
        started = true;
        await context.sleep(60_000);
      },
    });
    api.queue.push(task);
    await runUntil(api, registry(slow), () => api.ends().length === 1);
    expect(told).toBe(true);
    expect(api.ends()[0]).toMatchObject({ route: "fail", error: { name: "Cancelled", retryable: false } });
  });

  it("stops a task at its deadline and reports a retryable TimeoutError", async () => {
    const api = new FakeApi();
    const slow = defineTask({
      type: "slow",
      params: z.unknown(),
      run: ({ context }) => context.sleep(60_000),
    });
    api.queue.push(taskOf("slow", null, { deadline: new Date(Date.now() + 200).toISOString() }));
    await runUntil(api, registry(slow), () => api.ends().length === 1);
    expect(api.ends()[0]).toMatchObject({ route: "fail", error: { name: "TimeoutError", retryable: true } });
  });

  it("registers again under its id when a heartbeat or a poll answers 404; retries transient errors", async () => {
    const api = new FakeApi();
    api.heartbeatSeconds = 1;
    let heartbeats = 0;
    api.heartbeatAnswer = () => {
      heartbeats++;
      if (heartbeats === 2) throw new ApiError(404, "NotFound", 'worker "w-fake" is not registered');
      if (heartbeats === 3) throw new UnreachableError("cannot reach the weft API");
      return { cancellations: [] };
    };
    let polls = 0;
    api.pollError = () => {
      polls++;
      if (polls === 2) return new ApiError(503, "Busy", "try later");
      if (polls === 3) return new ApiError(404, "NotFound", "not registered");
      return undefined;
    };
    const { log } = await runUntil(api, registry(echo), () => heartbeats >= 5 && polls >= 5);
    const registers = api.calls.filter((c) => c.route === "register");
    expect(registers.length).toBeGreaterThanOrEqual(3);
    expect(registers.slice(1).every((c) => c.route === "register" && c.workerId === "w-fake")).toBe(true);
    expect(log.join("\n")).toContain("registering again");
    expect(log.join("\n")).toContain("poll failed: HTTP 503");
  });

  it("backs off between empty polls, doubling up to the most, and starts over after a task", async () => {
    const sleeps: number[] = [];
    // A clock whose pauses pass at once (recorded): the loop's timing, without waiting for it.
    const clock: Clock = {
      now: () => Date.now(),
      sleep: (ms, signal) =>
        new Promise((resolve, reject) => {
          if (signal?.aborted) return reject(new Error("aborted"));
          sleeps.push(ms);
          setImmediate(resolve);
        }),
    };
    const api = new FakeApi();
    let polls = 0;
    api.poll = async () => {
      polls++;
      // A task whose heartbeat and deadline pauses are far outside the idle ones.
      const far = { heartbeatSeconds: 3600, deadline: new Date(Date.now() + 7_200_000).toISOString() };
      return polls === 8 ? taskOf("echo", { say: "x" }, far) : undefined;
    };
    const settings = quick({}, { idleBackoff: { initialMs: 1000, maxMs: 60_000 } });
    await runUntil(api, registry(echo), () => polls >= 12, settings, { clock, random: () => 0.999_999 });
    const idle = sleeps.filter((ms) => ms >= 1000 && ms <= 60_000);
    expect(idle.slice(0, 7)).toEqual([1000, 2000, 4000, 8000, 16_000, 32_000, 60_000]);
    // After the task: from the start again.
    expect(idle.slice(7, 10)).toEqual([1000, 2000, 4000]);
  });

  it("backoffMs jitters between half and all of the doubled pause, capped", () => {
    const backoff = { initialMs: 100, maxMs: 1000 };
    expect(backoffMs(backoff, 1, () => 0)).toBe(50);
    expect(backoffMs(backoff, 3, () => 0.999_999)).toBe(400);
    expect(backoffMs(backoff, 50, () => 0.999_999)).toBe(1000);
  });

  it("reportedError: names and retryability", () => {
    expect(reportedError(new TerminalError("x"))).toEqual({
      name: "TerminalError",
      message: "x",
      retryable: false,
    });
    expect(reportedError("plain")).toEqual({ name: "Error", message: "plain", retryable: true });
    expect(reportedError(z.string().safeParse(1).error)).toMatchObject({
      name: "ValidationError",
      retryable: false,
    });
  });
});

describe("weft worker's options", () => {
  it("parses repeatable flags into a registration", () => {
    const values = parseWorkerArgs(
      [
        "worker",
        "--pool",
        "gpu",
        "--tasks",
        "./tasks",
        "--executor",
        "ffmpeg",
        "--executor",
        "blender",
        "--capability",
        "gpu=nvidia",
        "--capability",
        "cuda=12.4",
        "--label",
        "high-mem",
        "--max-parallel",
        "4",
        "--worker-id",
        "render-1",
        "--grace-seconds",
        "5",
      ].slice(1),
    );
    expect(workerSettings(values)).toMatchObject({
      registration: {
        pool: "gpu",
        executors: ["ffmpeg", "blender"],
        capabilities: { gpu: "nvidia", cuda: "12.4" },
        labels: ["high-mem"],
        maxParallel: 4,
        workerId: "render-1",
      },
      graceMs: 5000,
      idleBackoff: { maxMs: 60_000 },
    });
  });

  it("refuses bad options with a usage error (exit 2)", async () => {
    const run = async (argv: string[]) => {
      let stderr = "";
      const io = {
        stdout: { write: () => true } as unknown as NodeJS.WritableStream,
        stderr: {
          write: (text: string) => {
            stderr += text;
            return true;
          },
        } as unknown as NodeJS.WritableStream,
        env: {},
      };
      return { code: await runWorkerCommand(argv, io), stderr };
    };
    expect(await run(["--tasks", "x"])).toMatchObject({ code: 2, stderr: expect.stringContaining("--pool") });
    expect(await run(["--pool", "p", "--tasks", "x", "--capability", "gpu"])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("NAME=VALUE"),
    });
    expect(await run(["--pool", "bad pool", "--tasks", "x"])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("--pool"),
    });
    expect(await run(["--pool", "p", "--tasks", "/no/such/dir"])).toMatchObject({
      code: 1,
      stderr: expect.stringContaining("cannot load the task types"),
    });
  });
});

describe("weft worker's signals", () => {
  it("the first signal drains and deregisters (exit 0); an echo of it is ignored, a later one exits at once", async () => {
    const signals = new EventEmitter();
    let now = 0;
    const exits: number[] = [];
    const api = new FakeApi();
    api.queue.push(taskOf("whoami", { ms: 10 * 60_000 }, { heartbeatSeconds: 1 }));
    let stdout = "";
    let stderr = "";
    const io = {
      stdout: {
        write: (text: string) => {
          stdout += text;
          return true;
        },
      } as unknown as NodeJS.WritableStream,
      stderr: {
        write: (text: string) => {
          stderr += text;
          return true;
        },
      } as unknown as NodeJS.WritableStream,
      env: {},
    };
    const argv = ["worker", "--pool", "render", "--tasks", FIXTURE_TASKS, "--worker-id", "cmd-1"];
    const run = runWorkerCommand(argv, io, {
      api,
      signals,
      signalClock: () => now,
      exit: (code) => {
        exits.push(code);
        // The process would be gone; here the task is told to stop, so the run ends.
        api.taskHeartbeatAnswer = () => ({ cancelRequested: true });
      },
    });
    await waitForProgress("the task's first heartbeat", async () =>
      api.calls.some((c) => c.route === "heartbeatTask")
        ? { done: true, value: undefined }
        : { done: false, progress: api.calls.length },
    );
    signals.emit("SIGTERM", "SIGTERM");
    await waitForProgress("the drain", async () =>
      stderr.includes("waiting up to 30 s for 1 running task")
        ? { done: true, value: undefined }
        : { done: false, progress: stderr },
    );
    expect(exits).toEqual([]);
    // The same press forwarded again (npm, a shell) a few milliseconds later: still draining.
    now += 5;
    signals.emit("SIGINT", "SIGINT");
    expect(exits).toEqual([]);
    now += SAME_PRESS_MS;
    signals.emit("SIGINT", "SIGINT");
    expect(exits).toEqual([130]);
    expect(await run).toBe(0);
    expect(stdout).toBe("cmd-1\n");
    expect(api.ends()).toEqual([
      expect.objectContaining({ route: "fail", error: expect.objectContaining({ name: "Cancelled" }) }),
    ]);
    expect(api.calls.at(-1)).toEqual({ route: "deregister", workerId: "cmd-1" });
    expect(signals.listenerCount("SIGTERM") + signals.listenerCount("SIGINT")).toBe(0);
  });
});

// ── against the real local runtime ─────────────────────────────────────────────────────────────

describe("weft worker's loop (local runtime)", PATIENT, () => {
  let runtime: LocalRuntime;
  let api: ApiClient;
  const stops: AbortController[] = [];
  const runs: Promise<unknown>[] = [];

  beforeAll(async () => {
    runtime = await startRuntime("memory");
    api = apiClient(runtime.url);
  });
  afterAll(async () => {
    for (const stop of stops) stop.abort();
    await Promise.allSettled(runs);
    await runtime?.stop();
  });

  /** Starts an in-process worker on the runtime's API; its shutdown controller and its run. */
  function startWorker(name: string, settings: WorkerSettings, tasks: ReturnType<typeof registry>) {
    const shutdown = new AbortController();
    const log: string[] = [];
    const client = new WeftClient({ baseUrl: runtime.url });
    const worker = new ExternalWorker(settings, {
      api: clientWorkerApi(client),
      tasks,
      log: (line) => log.push(`${name}: ${line}`),
    });
    const run = worker.run(shutdown.signal);
    stops.push(shutdown);
    runs.push(run);
    return { shutdown, run, log, worker };
  }

  async function startExecution(definition: unknown): Promise<string> {
    const registered = await api.call("POST", "/workflows", definition);
    expect(registered.status, JSON.stringify(registered.body)).toBeLessThan(300);
    const started = await api.call("POST", "/executions", {
      workflow: (definition as { name: string }).name,
    });
    expect(started.status, JSON.stringify(started.body)).toBeLessThan(300);
    return started.body.executionId as string;
  }

  it("runs each node only on a worker its placement allows, up to max-parallel at once", async () => {
    let running = 0;
    let most = 0;
    const whoami = (name: string) =>
      defineTask({
        type: "whoami",
        params: z.object({ ms: z.number() }),
        run: async ({ params, context }) => {
          running++;
          most = Math.max(most, running);
          try {
            await context.sleep(params.ms);
          } finally {
            running--;
          }
          return { ranBy: name };
        },
      });
    const a = startWorker(
      "A",
      quick({ workerId: "it-gpu", capabilities: { gpu: "nvidia" }, labels: ["high-mem"], maxParallel: 2 }),
      registry(whoami("A")),
    );
    const b = startWorker(
      "B",
      quick({ workerId: "it-cpu", capabilities: { gpu: "none" } }),
      registry(whoami("B")),
    );
    const node = (id: string, runsOn: Record<string, unknown>) => ({
      id,
      type: "whoami",
      params: { ms: 300 },
      runsOn: { pool: "render", ...runsOn },
      heartbeatSeconds: 5,
    });
    const executionId = await startExecution({
      name: "it-placement",
      nodes: [
        node("gpu1", { capabilities: { gpu: "nvidia" } }),
        node("gpu2", { capabilities: { gpu: "nvidia" } }),
        node("gpu3", { labels: ["high-mem"] }),
        node("gpu4", { allowedWorkers: ["it-gpu"] }),
        node("cpu1", { capabilities: { gpu: "none" } }),
        node("cpu2", { forbiddenWorkers: ["it-gpu"] }),
      ],
    });
    const view = await api.waitForEnd(executionId);
    expect(view.status).toBe("SUCCEEDED");
    const ranBy = Object.fromEntries(view.nodes.map((n) => [n.id, (n.output as { ranBy: string }).ranBy]));
    expect(ranBy).toEqual({ gpu1: "A", gpu2: "A", gpu3: "A", gpu4: "A", cpu1: "B", cpu2: "B" });
    // A took four nodes two at a time, B one at a time: never more than three at once in all.
    expect(most).toBeLessThanOrEqual(3);
    expect(most).toBeGreaterThanOrEqual(2);
    a.shutdown.abort();
    b.shutdown.abort();
    expect(await a.run).toMatchObject({ workerId: "it-gpu", completed: 4 });
    expect(await b.run).toMatchObject({ workerId: "it-cpu", completed: 2 });
  });

  it("never runs more than max-parallel tasks at once", async () => {
    let running = 0;
    let most = 0;
    const busy = defineTask({
      type: "busy",
      params: z.unknown(),
      run: async ({ context }) => {
        running++;
        most = Math.max(most, running);
        await context.sleep(200);
        running--;
        return null;
      },
    });
    const w = startWorker("P", quick({ pool: "parallel", maxParallel: 3 }), registry(busy));
    const executionId = await startExecution({
      name: "it-parallel",
      nodes: Array.from({ length: 9 }, (_, i) => ({
        id: `n${i}`,
        type: "busy",
        runsOn: { pool: "parallel" },
      })),
    });
    expect((await api.waitForEnd(executionId)).status).toBe("SUCCEEDED");
    expect(most).toBe(3);
    w.shutdown.abort();
    expect(await w.run).toMatchObject({ completed: 9 });
  });

  it("a cancelled execution aborts its running task", async () => {
    let started = false;
    let aborted = false;
    const long = defineTask({
      type: "long",
      params: z.unknown(),
      run: async ({ context }) => {
        started = true;
        context.signal.addEventListener("abort", () => {
          aborted = true;
        });
        await context.sleep(10 * 60_000);
      },
    });
    const w = startWorker("C", quick({ pool: "cancel" }), registry(long));
    const executionId = await startExecution({
      name: "it-cancel",
      nodes: [
        { id: "long", type: "long", runsOn: { pool: "cancel" }, heartbeatSeconds: 1, timeoutSeconds: 3600 },
      ],
    });
    await waitForProgress("the task to start", async () =>
      started ? { done: true, value: undefined } : { done: false, progress: w.log.length },
    );
    const cancelled = await api.call("POST", `/executions/${executionId}/cancel`, {});
    expect(cancelled.status).toBeLessThan(300);
    await waitForProgress("the task's abort", async () =>
      aborted && w.worker.busy === 0
        ? { done: true, value: undefined }
        : { done: false, progress: w.log.length },
    );
    const view = await api.waitForEnd(executionId);
    expect(view.status).toBe("CANCELLED");
    expect(view.nodes[0]?.status).toBe("CANCELLED");
    w.shutdown.abort();
    await w.run;
  });

  it("a shutdown finishes the running task, then deregisters", async () => {
    let started = false;
    const steady = defineTask({
      type: "steady",
      params: z.unknown(),
      run: async ({ context }) => {
        started = true;
        await context.sleep(1500);
        return { finished: true };
      },
    });
    const w = startWorker("S", quick({ pool: "shutdown", workerId: "it-shutdown" }), registry(steady));
    const executionId = await startExecution({
      name: "it-shutdown",
      nodes: [{ id: "steady", type: "steady", runsOn: { pool: "shutdown" }, heartbeatSeconds: 1 }],
    });
    await waitForProgress("the task to start", async () =>
      started ? { done: true, value: undefined } : { done: false, progress: w.log.length },
    );
    w.shutdown.abort();
    expect(await w.run).toMatchObject({ workerId: "it-shutdown", completed: 1, failed: 0 });
    const view = await api.waitForEnd(executionId);
    expect(view.status).toBe("SUCCEEDED");
    expect(view.nodes[0]).toMatchObject({ status: "COMPLETED", attempt: 1, output: { finished: true } });
    const workers = await api.call("GET", "/workers");
    expect(workers.body.workers.map((x: { workerId: string }) => x.workerId)).not.toContain("it-shutdown");
  });

  it("a shutdown past its grace stops the task and hands it back as WorkerShutdown", async () => {
    let started = 0;
    const stubborn = defineTask({
      type: "stubborn",
      params: z.unknown(),
      run: async ({ context }) => {
        started++;
        await context.sleep(10 * 60_000);
      },
    });
    const w = startWorker("G", quick({ pool: "grace" }, { graceMs: 200 }), registry(stubborn));
    const executionId = await startExecution({
      name: "it-grace",
      nodes: [
        {
          id: "stubborn",
          type: "stubborn",
          runsOn: { pool: "grace" },
          heartbeatSeconds: 1,
          retry: { maxAttempts: 1 },
        },
      ],
    });
    await waitForProgress("the task to start", async () =>
      started > 0 ? { done: true, value: undefined } : { done: false, progress: w.log.length },
    );
    w.shutdown.abort();
    expect(await w.run).toMatchObject({ failed: 1 });
    const view = await api.waitForEnd(executionId);
    expect(view.nodes[0]).toMatchObject({ status: "FAILED", error: { name: "WorkerShutdown" } });
  });
});
