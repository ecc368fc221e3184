/**
 * The loop of `weft worker` (./worker-command.ts): a long-running process that runs the nodes placed
 * on its pool with `runsOn` (shared/engine/external.ts). It registers, heartbeats its registration,
 * long-polls for tasks while it has a free slot, runs each task with its `defineTask` handler under an
 * AbortSignal while heartbeating it, and reports the task's end. On shutdown it stops polling at
 * once, lets its running tasks finish for a grace period (then aborts them and hands them back as
 * retryable "WorkerShutdown" failures) and deregisters.
 *
 * It survives the API going away for a while (transient errors are retried with backoff) and
 * registers again when the API no longer knows it. Its log never holds a task token or a payload:
 * tasks are named by execution, node and attempt, errors by name.
 */
import * as z from "../shared/domain/zod.js";
import type { ExternalTask, TaskCancellation } from "../shared/engine/external.js";
import type { Clock } from "../shared/ports.js";
import type { TaskType } from "../shared/tasks/task-type.js";
import type { WeftClient } from "./client.js";
import { ApiError, UnreachableError } from "./errors.js";

// ── the API, as a worker sees it ───────────────────────────────────────────────────────────────

export interface WorkerRegistrationRequest {
  workerId?: string;
  pool: string;
  executors: string[];
  capabilities: Record<string, string>;
  labels: string[];
  maxParallel: number;
}

/** An error reported for a task (POST /tasks/fail). */
export interface ReportedError {
  name: string;
  message: string;
  retryable: boolean;
}

/**
 * The routes a worker calls (shared/http/contract.ts). Failures are thrown as the CLI client throws
 * them: ApiError (with the HTTP status) or UnreachableError.
 */
export interface WorkerApi {
  register(request: WorkerRegistrationRequest): Promise<{ workerId: string; heartbeatSeconds: number }>;
  heartbeat(workerId: string): Promise<{ cancellations: TaskCancellation[] }>;
  deregister(workerId: string): Promise<void>;
  /** A long poll: a task, or undefined when none came within `waitSeconds` (or `signal` fired). */
  poll(workerId: string, waitSeconds: number, signal?: AbortSignal): Promise<ExternalTask | undefined>;
  heartbeatTask(taskToken: string): Promise<{ cancelRequested: boolean }>;
  completeTask(taskToken: string, output: unknown): Promise<void>;
  failTask(taskToken: string, error: ReportedError): Promise<void>;
}

/** The worker routes through the CLI's client (SigV4-signed for a deployed API). */
export function clientWorkerApi(client: WeftClient): WorkerApi {
  return {
    register: (request) => client.registerWorker(request),
    heartbeat: (id) => client.workerHeartbeat(id),
    deregister: async (id) => {
      await client.deregisterWorker(id);
    },
    poll: (id, waitSeconds, signal) => client.pollTask(id, { waitSeconds, ...(signal ? { signal } : {}) }),
    heartbeatTask: (taskToken) => client.heartbeatTask(taskToken),
    completeTask: async (taskToken, output) => {
      await client.completeTask(taskToken, output);
    },
    failTask: async (taskToken, error) => {
      await client.failTask(taskToken, error);
    },
  };
}

// ── settings ───────────────────────────────────────────────────────────────────────────────────

export interface Backoff {
  initialMs: number;
  maxMs: number;
}

export interface WorkerSettings {
  registration: WorkerRegistrationRequest;
  /** After a shutdown request, how long running tasks may go on. */
  graceMs: number;
  /** A poll's wait (the API's most is 20 s). */
  pollWaitSeconds?: number;
  /** Pauses between polls that keep coming back empty: doubling, jittered, up to maxMs. */
  idleBackoff?: Backoff;
  /** Pauses before retrying a call the API failed transiently (unreachable, 429, 5xx). */
  retryBackoff?: Backoff;
  /** After the grace period, how long aborted tasks (and the deregistration) have to report. */
  drainMs?: number;
}

export interface WorkerDeps {
  api: WorkerApi;
  /** The task types this worker runs, by `type`. */
  tasks: { get(type: string): TaskType | undefined; names?(): string[] };
  /** One line per event; never a token or a payload. */
  log: (line: string) => void;
  clock?: Clock;
  /** In [0, 1): the jitter of backoffs. */
  random?: () => number;
  /** Told the worker's id each time it registers. */
  onRegistered?: (workerId: string) => void;
}

export const WORKER_DEFAULTS = {
  pollWaitSeconds: 20,
  idleBackoff: { initialMs: 1000, maxMs: 60_000 },
  retryBackoff: { initialMs: 500, maxMs: 30_000 },
  graceMs: 30_000,
  drainMs: 10_000,
} as const;

export interface WorkerSummary {
  workerId: string | undefined;
  completed: number;
  failed: number;
  /** Attempts the API no longer held for this worker when it reported (or heartbeated) them. */
  lost: number;
}

// ── time ───────────────────────────────────────────────────────────────────────────────────────

const realClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const done = () => {
        signal?.removeEventListener("abort", stop);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      const stop = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", stop, { once: true });
    }),
};

/** The n-th pause (n ≥ 1) of a backoff: doubling from initialMs up to maxMs, jittered to 50–100 %. */
export function backoffMs(backoff: Backoff, n: number, random: () => number): number {
  const full = Math.min(backoff.maxMs, backoff.initialMs * 2 ** Math.max(0, Math.min(n - 1, 30)));
  return Math.round(full * (0.5 + random() / 2));
}

// ── errors ─────────────────────────────────────────────────────────────────────────────────────

/** Worth retrying: no answer, or an answer saying "later" (408, 429, 5xx). */
export function isTransient(error: unknown): boolean {
  if (error instanceof UnreachableError) return true;
  if (error instanceof ApiError) return error.status === 408 || error.status === 429 || error.status >= 500;
  return false;
}

const statusOf = (error: unknown) => (error instanceof ApiError ? error.status : undefined);

/** A 409 (the token is stale) or 404: the attempt is no longer this worker's. */
const isLostAttempt = (error: unknown) => statusOf(error) === 409 || statusOf(error) === 404;

/** Short and safe to log: the API's message (it never echoes tokens), or a thrown error's name. */
function describeApiError(error: unknown): string {
  if (error instanceof ApiError) return `HTTP ${error.status} ${error.code}: ${error.message}`;
  if (error instanceof UnreachableError) return error.message;
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

const MAX_ERROR_NAME = 128;
const MAX_ERROR_MESSAGE = 4096;

/** A handler's error as the API takes it: TerminalError (duck-typed) and schema errors are not retried. */
export function reportedError(error: unknown): ReportedError {
  const record = typeof error === "object" && error !== null ? (error as Record<string, unknown>) : {};
  const rawName = typeof record.name === "string" && record.name !== "" ? record.name : "Error";
  const message =
    typeof record.message === "string" ? record.message : typeof error === "string" ? error : String(error);
  const invalid = error instanceof z.$ZodError || rawName === "ZodError";
  return {
    name: (invalid ? "ValidationError" : rawName).slice(0, MAX_ERROR_NAME),
    message: message.slice(0, MAX_ERROR_MESSAGE),
    retryable: !(invalid || record.terminal === true),
  };
}

// ── the worker ─────────────────────────────────────────────────────────────────────────────────

type StopReason = "cancelled" | "lost" | "shutdown" | "timedOut";

type Outcome =
  | { kind: "completed"; output: unknown }
  | { kind: "failed"; error: ReportedError }
  | { kind: "lost" };

interface Running {
  task: ExternalTask;
  /** The task's signal: aborted when it must stop. */
  controller: AbortController;
  stopped?: StopReason;
  /** Aborted when the attempt turns out lost: reporting it is pointless. */
  lost: AbortController;
  /** Aborted once the task reported (its heartbeats and deadline end). */
  settled: AbortController;
  done?: Promise<void>;
}

const STOPPED: Record<Exclude<StopReason, "lost">, ReportedError> = {
  cancelled: { name: "Cancelled", message: "the task was cancelled", retryable: false },
  shutdown: {
    name: "WorkerShutdown",
    message: "the worker shut down before the task finished",
    retryable: true,
  },
  timedOut: { name: "TimeoutError", message: "the task ran past its deadline", retryable: true },
};

const ABORTED = Symbol("aborted");
/** The longest a Node timer waits (about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

export class ExternalWorker {
  private readonly api: WorkerApi;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly pollWaitSeconds: number;
  private readonly idleBackoff: Backoff;
  private readonly retryBackoff: Backoff;
  private readonly drainMs: number;
  private workerId: string | undefined;
  private heartbeatSeconds = 30;
  private readonly running = new Map<string, Running>();
  private readonly slotWaiters: Array<() => void> = [];
  /** Aborted when everything stops: heartbeats, retries. */
  private readonly halt = new AbortController();
  private reregistering: Promise<boolean> | undefined;
  private readonly tally: Omit<WorkerSummary, "workerId"> = { completed: 0, failed: 0, lost: 0 };

  constructor(
    private readonly settings: WorkerSettings,
    private readonly deps: WorkerDeps,
  ) {
    this.api = deps.api;
    this.clock = deps.clock ?? realClock;
    this.random = deps.random ?? Math.random;
    this.pollWaitSeconds = settings.pollWaitSeconds ?? WORKER_DEFAULTS.pollWaitSeconds;
    this.idleBackoff = settings.idleBackoff ?? WORKER_DEFAULTS.idleBackoff;
    this.retryBackoff = settings.retryBackoff ?? WORKER_DEFAULTS.retryBackoff;
    this.drainMs = settings.drainMs ?? WORKER_DEFAULTS.drainMs;
  }

  get id(): string | undefined {
    return this.workerId;
  }

  /** Tasks running now. */
  get busy(): number {
    return this.running.size;
  }

  /**
   * Runs until `shutdown` fires, then finishes (see the module's comment) and resolves. A
   * registration the API refuses (not transiently) is thrown.
   */
  async run(shutdown: AbortSignal): Promise<WorkerSummary> {
    if (await this.register(shutdown)) {
      const beats = this.heartbeatLoop();
      await this.pollLoop(shutdown);
      await this.drain();
      this.halt.abort();
      await beats;
      await this.deregister();
    }
    this.halt.abort();
    return { workerId: this.workerId, ...this.tally };
  }

  // ── registration ───────────────────────────────────────────────────────────────────────────

  private async register(signal: AbortSignal): Promise<boolean> {
    const { registration } = this.settings;
    const request = this.workerId === undefined ? registration : { ...registration, workerId: this.workerId };
    const answer = await this.retrying("register", () => this.api.register(request), signal);
    if (answer === ABORTED) return false;
    this.workerId = answer.workerId;
    this.heartbeatSeconds = Math.max(1, answer.heartbeatSeconds);
    this.deps.onRegistered?.(answer.workerId);
    return true;
  }

  /** The API no longer knows this worker (it was declared dead, or its record was lost): register again. */
  private reregister(why: string): Promise<boolean> {
    this.reregistering ??= (async () => {
      this.deps.log(`worker ${this.workerId} is not registered (${why}); registering again`);
      try {
        const registered = await this.register(this.halt.signal);
        if (registered) this.deps.log(`worker ${this.workerId} registered again`);
        return registered;
      } catch (error) {
        this.deps.log(`registering again failed: ${describeApiError(error)}`);
        return false;
      }
    })().finally(() => {
      this.reregistering = undefined;
    });
    return this.reregistering;
  }

  private async heartbeatLoop(): Promise<void> {
    let failures = 0;
    for (;;) {
      const beatMs = this.heartbeatSeconds * 1000;
      const delay =
        failures === 0 ? beatMs : Math.min(beatMs, backoffMs(this.retryBackoff, failures, this.random));
      if (!(await this.pause(delay, this.halt.signal))) return;
      try {
        const { cancellations } = await this.api.heartbeat(this.workerId!);
        failures = 0;
        this.cancel(cancellations);
      } catch (error) {
        if (statusOf(error) === 404) {
          await this.reregister("its heartbeat answered 404");
          continue;
        }
        failures++;
        this.deps.log(`heartbeat failed: ${describeApiError(error)}`);
      }
    }
  }

  /** The heartbeat's cancellations: those tasks' signals are aborted. */
  private cancel(cancellations: readonly TaskCancellation[]): void {
    for (const c of cancellations) {
      const entry = this.running.get(runningKey(c));
      if (!entry) continue;
      this.deps.log(`${label(entry.task)}: stopping (${c.reason})`);
      this.stop(entry, "cancelled");
    }
  }

  private async deregister(): Promise<void> {
    const id = this.workerId!;
    const limit = new AbortController();
    this.clock.sleep(this.drainMs, limit.signal).then(
      () => limit.abort(),
      () => {},
    );
    try {
      const done = await this.retrying("deregister", () => this.api.deregister(id), limit.signal);
      this.deps.log(
        done === ABORTED ? `worker ${id} did not deregister in time` : `worker ${id} deregistered`,
      );
    } catch (error) {
      this.deps.log(
        statusOf(error) === 404
          ? `worker ${id} was no longer registered`
          : `deregistering failed: ${describeApiError(error)}`,
      );
    } finally {
      limit.abort();
    }
  }

  // ── polling ────────────────────────────────────────────────────────────────────────────────

  private async pollLoop(shutdown: AbortSignal): Promise<void> {
    let empties = 0;
    let failures = 0;
    while (await this.freeSlot(shutdown)) {
      const polled = await this.pollOnce(shutdown);
      if (polled === ABORTED) return;
      if (polled === "again") continue;
      if (polled === "error") {
        failures++;
        await this.pause(backoffMs(this.retryBackoff, failures, this.random), shutdown);
      } else if (polled === undefined) {
        failures = 0;
        empties++;
        await this.pause(backoffMs(this.idleBackoff, empties, this.random), shutdown);
      } else {
        failures = 0;
        empties = 0;
        this.start(polled);
      }
    }
  }

  /**
   * One poll, called off when `shutdown` fires (the API stops waiting then); a task that arrives all
   * the same is handed back at once (and one taken as the poll was called off is released when the
   * worker deregisters).
   */
  private async pollOnce(
    shutdown: AbortSignal,
  ): Promise<ExternalTask | undefined | "again" | "error" | typeof ABORTED> {
    const polled = this.api.poll(this.workerId!, this.pollWaitSeconds, shutdown);
    try {
      const task = await raceAbort(polled, shutdown);
      if (task === ABORTED) polled.then((late) => late && this.handBack(late)).catch(() => {});
      return task;
    } catch (error) {
      if (shutdown.aborted) return ABORTED;
      if (statusOf(error) === 404)
        return (await this.reregister("its poll answered 404")) ? "again" : "error";
      this.deps.log(`poll failed: ${describeApiError(error)}`);
      return "error";
    }
  }

  private async handBack(task: ExternalTask): Promise<void> {
    this.deps.log(`${label(task)}: handed back (the worker is shutting down)`);
    await this.api.failTask(task.taskToken, STOPPED.shutdown).catch(() => {});
  }

  /** Waits for a free slot; false once `signal` fired. */
  private async freeSlot(signal: AbortSignal): Promise<boolean> {
    while (!signal.aborted && this.running.size >= this.settings.registration.maxParallel) {
      await new Promise<void>((resolve) => {
        const wake = () => {
          signal.removeEventListener("abort", wake);
          resolve();
        };
        this.slotWaiters.push(wake);
        signal.addEventListener("abort", wake, { once: true });
      });
    }
    return !signal.aborted;
  }

  // ── a task ─────────────────────────────────────────────────────────────────────────────────

  private start(task: ExternalTask): void {
    const key = runningKey(task);
    const entry: Running = {
      task,
      controller: new AbortController(),
      lost: new AbortController(),
      settled: new AbortController(),
    };
    this.running.set(key, entry);
    entry.done = this.runTask(entry)
      .catch((error) => this.deps.log(`${label(task)}: ${describeApiError(error)}`))
      .finally(() => {
        this.running.delete(key);
        for (const wake of this.slotWaiters.splice(0)) wake();
      });
  }

  private async runTask(entry: Running): Promise<void> {
    const { task } = entry;
    this.deps.log(`${label(task)}: started (${task.type})`);
    const beats = this.taskHeartbeats(entry);
    this.watchDeadline(entry);
    try {
      await this.report(entry, await this.execute(entry));
    } finally {
      entry.settled.abort();
      await beats;
    }
  }

  /** Runs the task's handler; what to report. */
  private async execute(entry: Running): Promise<Outcome> {
    const { task } = entry;
    const handler = this.deps.tasks.get(task.type);
    if (!handler || handler.inline === true || handler.composite !== undefined)
      return { kind: "failed", error: this.unknownType(task.type) };
    const params = z.ownSafeParse(handler.params, task.params);
    if (!params.success) {
      return {
        kind: "failed",
        error: { name: "ValidationError", message: issuesText(params.error), retryable: false },
      };
    }
    const signal = entry.controller.signal;
    const aborted = new Promise<never>((_, reject) => {
      signal.addEventListener("abort", () => reject(signal.reason), { once: true });
    });
    aborted.catch(() => {});
    try {
      const output = await Promise.race([
        Promise.resolve().then(() =>
          handler.run({
            params: params.data,
            input: task.input,
            deps: task.deps,
            context: this.contextOf(task, signal),
          }),
        ),
        aborted,
      ]);
      return entry.stopped === "lost" ? { kind: "lost" } : { kind: "completed", output };
    } catch (error) {
      if (entry.stopped === undefined) return { kind: "failed", error: reportedError(error) };
      return entry.stopped === "lost" ? { kind: "lost" } : { kind: "failed", error: STOPPED[entry.stopped] };
    }
  }

  private contextOf(task: ExternalTask, signal: AbortSignal) {
    const deadline = Date.parse(task.deadline);
    return {
      executionId: task.executionId,
      nodeId: task.nodeId,
      attempt: task.attempt,
      idempotencyKey: task.idempotencyKey,
      signal,
      deadline: Number.isFinite(deadline) ? deadline : Number.MAX_SAFE_INTEGER,
      sleep: (ms: number) => this.clock.sleep(ms, signal),
      now: () => this.clock.now(),
    };
  }

  private unknownType(type: string): ReportedError {
    const known = this.deps.tasks.names?.();
    const list = known === undefined ? "" : ` (it runs: ${known.join(", ") || "none"})`;
    return {
      name: "UnknownTaskType",
      message: `this worker has no task type "${type}"${list}`,
      retryable: false,
    };
  }

  /** Stops the task (its signal aborted) for `reason`; the first reason wins. */
  private stop(entry: Running, reason: StopReason): void {
    if (entry.settled.signal.aborted || entry.stopped !== undefined) return;
    entry.stopped = reason;
    if (reason === "lost") entry.lost.abort();
    entry.controller.abort(new TaskStopped(reason));
  }

  /**
   * Heartbeats the task every heartbeatSeconds until it reported; told to stop (or 409), stops it.
   * Beats keep a fixed rate (start to start): a slow answer does not push the next beat later, so a
   * lease two beats long survives one answer as slow as a whole beat.
   */
  private async taskHeartbeats(entry: Running): Promise<void> {
    const { task } = entry;
    const beatMs = Math.max(1, task.heartbeatSeconds) * 1000;
    let failures = 0;
    let lastBeat = this.clock.now();
    for (;;) {
      const delay =
        failures === 0
          ? Math.max(0, lastBeat + beatMs - this.clock.now())
          : Math.min(beatMs, backoffMs(this.retryBackoff, failures, this.random));
      if (!(await this.pause(delay, entry.settled.signal))) return;
      try {
        lastBeat = this.clock.now();
        const { cancelRequested } = await this.api.heartbeatTask(task.taskToken);
        failures = 0;
        if (cancelRequested) {
          this.deps.log(`${label(task)}: cancellation requested`);
          return this.stop(entry, "cancelled");
        }
      } catch (error) {
        if (isLostAttempt(error)) {
          if (!entry.settled.signal.aborted)
            this.deps.log(`${label(task)}: lost (its heartbeat answered ${statusOf(error)})`);
          return this.stop(entry, "lost");
        }
        failures++;
        this.deps.log(`${label(task)}: heartbeat failed: ${describeApiError(error)}`);
      }
    }
  }

  /** Stops the task at its deadline (waiting in steps: a timer cannot wait a year at once). */
  private watchDeadline(entry: Running): void {
    const deadline = Date.parse(entry.task.deadline);
    if (!Number.isFinite(deadline)) return;
    void (async () => {
      for (let left = deadline - this.clock.now(); left > 0; left = deadline - this.clock.now())
        if (!(await this.pause(Math.min(left, MAX_TIMER_MS), entry.settled.signal))) return;
      this.stop(entry, "timedOut");
    })();
  }

  // ── reporting ──────────────────────────────────────────────────────────────────────────────

  private async report(entry: Running, outcome: Outcome): Promise<void> {
    const { task } = entry;
    if (outcome.kind === "lost") {
      this.tally.lost++;
      return this.deps.log(`${label(task)}: the attempt is no longer this worker's; not reported`);
    }
    if (outcome.kind === "completed") {
      const unsendable = jsonProblem(outcome.output);
      if (unsendable === undefined) return this.reportCompletion(entry, outcome.output);
      return this.reportFailure(entry, { name: "InvalidOutput", message: unsendable, retryable: false });
    }
    return this.reportFailure(entry, outcome.error);
  }

  private async reportCompletion(entry: Running, output: unknown): Promise<void> {
    const { task } = entry;
    const sent = await this.settle(entry, "complete", () => this.api.completeTask(task.taskToken, output));
    if (sent === "rejected") {
      // The API refused the output itself (too large, not JSON it takes): the attempt fails instead.
      return this.reportFailure(entry, {
        name: "InvalidOutput",
        message: "the API refused the task's output",
        retryable: false,
      });
    }
    if (sent === "ok") {
      this.tally.completed++;
      this.deps.log(`${label(task)}: completed`);
    }
  }

  private async reportFailure(entry: Running, error: ReportedError): Promise<void> {
    const { task } = entry;
    const sent = await this.settle(entry, "fail", () => this.api.failTask(task.taskToken, error));
    if (sent === "ok") {
      this.tally.failed++;
      this.deps.log(`${label(task)}: failed with ${error.name}${error.retryable ? "" : " (not retryable)"}`);
    }
  }

  /** One report, retried while transient; a 409 (or 404) means the attempt was lost. */
  private async settle(
    entry: Running,
    what: string,
    send: () => Promise<void>,
  ): Promise<"ok" | "lost" | "rejected" | "gave up"> {
    const signal = AbortSignal.any([this.halt.signal, entry.lost.signal]);
    try {
      const sent = await this.retrying(`${label(entry.task)}: ${what}`, send, signal);
      if (sent !== ABORTED) return "ok";
      if (entry.lost.signal.aborted) {
        this.tally.lost++;
        return "lost";
      }
      this.deps.log(`${label(entry.task)}: gave up reporting (the worker is stopping)`);
      return "gave up";
    } catch (error) {
      if (isLostAttempt(error)) {
        this.tally.lost++;
        this.deps.log(`${label(entry.task)}: the attempt was lost (${what} answered ${statusOf(error)})`);
        return "lost";
      }
      this.deps.log(`${label(entry.task)}: ${what} refused: ${describeApiError(error)}`);
      return what === "complete" && statusOf(error) !== undefined ? "rejected" : "gave up";
    }
  }

  // ── shutdown ───────────────────────────────────────────────────────────────────────────────

  /** Lets the running tasks finish for the grace period, then stops them and waits for their reports. */
  private async drain(): Promise<void> {
    if (this.running.size === 0) return;
    const graceSeconds = Math.round(this.settings.graceMs / 1000);
    this.deps.log(`shutting down: waiting up to ${graceSeconds} s for ${this.running.size} running task(s)`);
    if (await this.within(this.allDone(), this.settings.graceMs)) return;
    this.deps.log(`shutting down: stopping ${this.running.size} task(s) still running`);
    for (const entry of this.running.values()) this.stop(entry, "shutdown");
    if (!(await this.within(this.allDone(), this.drainMs)))
      this.deps.log(`shutting down: ${this.running.size} task(s) did not report in time`);
  }

  private allDone(): Promise<unknown> {
    return Promise.all([...this.running.values()].map((entry) => entry.done));
  }

  /** True when `promise` settled within `ms`. */
  private async within(promise: Promise<unknown>, ms: number): Promise<boolean> {
    const timer = new AbortController();
    const elapsed = this.clock.sleep(ms, timer.signal).then(
      () => false,
      () => false,
    );
    try {
      return await Promise.race([promise.then(() => true), elapsed]);
    } finally {
      timer.abort();
    }
  }

  // ── helpers ────────────────────────────────────────────────────────────────────────────────

  /** Sleeps; false when `signal` fired (at once or meanwhile). */
  private async pause(ms: number, signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return false;
    try {
      await this.clock.sleep(ms, signal);
      return true;
    } catch {
      return false;
    }
  }

  /** `call`, retried with backoff while it fails transiently; ABORTED once `signal` fired. */
  private async retrying<T>(
    what: string,
    call: () => Promise<T>,
    signal: AbortSignal,
  ): Promise<T | typeof ABORTED> {
    for (let failures = 1; ; failures++) {
      if (signal.aborted) return ABORTED;
      try {
        return await call();
      } catch (error) {
        if (!isTransient(error)) throw error;
        const delay = backoffMs(this.retryBackoff, failures, this.random);
        this.deps.log(
          `${what} failed (${describeApiError(error)}); retrying in ${(delay / 1000).toFixed(1)} s`,
        );
        if (!(await this.pause(delay, signal))) return ABORTED;
      }
    }
  }
}

/** Why a task's signal was aborted. */
export class TaskStopped extends Error {
  override readonly name = "TaskStopped";
  constructor(readonly reason: StopReason) {
    super(`the task was stopped: ${reason}`);
  }
}

/** `promise`'s value, or ABORTED as soon as `signal` fires. */
async function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | typeof ABORTED> {
  if (signal.aborted) return ABORTED;
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<typeof ABORTED>((resolve) => {
    onAbort = () => resolve(ABORTED);
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([promise, aborted]);
  } finally {
    if (onAbort) signal.removeEventListener("abort", onAbort);
  }
}

function runningKey(task: Pick<ExternalTask, "executionId" | "nodeId" | "attempt">): string {
  return `${task.executionId}/${task.nodeId}#${task.attempt}`;
}

/** A task in the log: execution, node and attempt (never its token). */
function label(task: Pick<ExternalTask, "executionId" | "nodeId" | "attempt">): string {
  return `task ${task.executionId}/${task.nodeId} attempt ${task.attempt}`;
}

/** Why a value cannot be sent as JSON, or undefined. */
function jsonProblem(value: unknown): string | undefined {
  try {
    JSON.stringify(value);
    return undefined;
  } catch (error) {
    return `the task's output is not JSON: ${error instanceof Error ? error.message : String(error)}`;
  }
}

/** A params schema's issues, one line each (zod's, or another copy's of the same shape). */
function issuesText(error: unknown): string {
  const issues = (error as { issues?: Array<{ path?: PropertyKey[]; message?: string }> }).issues ?? [];
  const lines = issues.map((issue) => {
    const at = (issue.path ?? []).map(String).join(".");
    return `${at === "" ? "params" : `params.${at}`}: ${issue.message ?? "invalid"}`;
  });
  const text = lines.length > 0 ? lines.join("; ") : "the params are invalid";
  return `the task's params are invalid for this worker's task type: ${text}`.slice(0, MAX_ERROR_MESSAGE);
}
