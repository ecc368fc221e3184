/**
 * Expressions evaluated in threads that can be stopped. The domain's guard bounds an evaluation from
 * inside (time between steps, recursion, what one step makes, the heap it adds); what it cannot see
 * is bounded here: a step that blocks (a backtracking regex) is stopped by ending its thread when
 * the time bound has passed, and a thread whose heap reaches its hard limit ends alone (V8 stops an
 * isolate at its `resourceLimits`, not the process). Either way the node fails with ExpressionError
 * naming the bound, a fresh thread takes the next request, and the process and every other
 * execution carry on.
 *
 * Threads start on first use (no cost at a cold start that evaluates nothing) and stay, each running
 * one evaluation at a time, so the common case costs a message each way and a copy of the scope.
 *
 * The thread runs this very module (it starts serving when it finds THREAD_MARK in its workerData):
 * the compiled file in the package, the source through tsx in this repository, and in a function's
 * bundle the bundle itself, so nothing has to ship beside it.
 */
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import {
  DEFAULT_EXPRESSION_LIMITS,
  type EvaluationOptions,
  ExpressionError,
  type ExpressionScope,
  expressionsIn,
  LIMIT_REASONS,
  stoppedExpression,
} from "../../domain/expressions.js";
import type { ExpressionEvaluator } from "../../ports.js";
import { crossing, type EvaluationReply, type EvaluationRequest, THREAD_MARK, uncross } from "./protocol.js";
import { serveEvaluations } from "./thread.js";

if (!isMainThread && parentPort && isThreadData(workerData)) serveEvaluations(parentPort);

function isThreadData(data: unknown): boolean {
  return typeof data === "object" && data !== null && (data as Record<string, unknown>)[THREAD_MARK] === true;
}

export interface IsolationSettings {
  /** Threads at most (each evaluates one request at a time; more requests wait their turn). */
  threads: number;
  /**
   * A thread's hard heap limit (V8 resourceLimits.maxOldGenerationSizeMb). Above the scope a node
   * can have plus the guard's maxMemoryMb, with room for one step's largest allocation.
   */
  heapMb: number;
  /** How long past the time bound a thread may take to stop by itself before it is ended. */
  graceMs: number;
}

export const DEFAULT_ISOLATION: IsolationSettings = { threads: 2, heapMb: 512, graceMs: 200 };

interface Job {
  request: EvaluationRequest;
  /** What the request evaluates, to name it when the thread has to be stopped. */
  expressions: { where: string; expression: string }[];
  at: number;
  maxMs: number;
  resolve(value: unknown): void;
  reject(error: Error): void;
}

class EvaluationThread {
  readonly worker: Worker;
  job: Job | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** Why the thread was ended, when this side ended it. */
  private ending: Error | undefined;
  /** The thread has loaded (its first message). */
  private ready = false;

  constructor(
    private readonly settings: IsolationSettings,
    private readonly onIdle: (thread: EvaluationThread) => void,
    private readonly onGone: (thread: EvaluationThread) => void,
  ) {
    this.worker = startWorker(settings.heapMb);
    this.worker.unref();
    this.worker.on("message", (reply: EvaluationReply) => this.reply(reply));
    this.worker.on("error", (error: Error & { code?: string }) => {
      const job = this.job;
      if (job === undefined) return;
      this.ending ??=
        error.code === "ERR_WORKER_OUT_OF_MEMORY"
          ? stoppedAt(job, LIMIT_REASONS.memory(this.settings.heapMb))
          : new Error(`weft: the expression thread failed (${error.code ?? error.name})`);
    });
    this.worker.on("exit", () => {
      const job = this.job;
      this.finish();
      this.onGone(this);
      job?.reject(this.ending ?? new Error("weft: the expression thread stopped"));
    });
  }

  run(job: Job): void {
    this.job = job;
    this.worker.ref();
    // A thread still loading (in a function's bundle, the whole bundle) gets the job once ready.
    if (this.ready) this.post(job);
  }

  private post(job: Job): void {
    this.arm(job);
    try {
      this.worker.postMessage(job.request);
    } catch (error) {
      // A scope that cannot be copied to the thread (never plain JSON): the caller's error.
      this.finish();
      job.reject(error instanceof Error ? error : new Error(String(error)));
      this.onIdle(this);
    }
  }

  private reply(reply: EvaluationReply): void {
    if (reply.kind === "ready") {
      this.ready = true;
      if (this.job !== undefined) this.post(this.job);
      return;
    }
    const job = this.job;
    if (job === undefined || reply.id !== job.request.id) return;
    if (reply.kind === "at") {
      // Each expression of a request has its own time bound, as in the domain's guard.
      job.at = reply.index;
      this.arm(job);
      return;
    }
    this.finish();
    if (reply.kind === "value") job.resolve(reply.value);
    else if (reply.kind === "exact-value") job.resolve(uncross(reply.json));
    else if (reply.kind === "expression-error")
      job.reject(new ExpressionError(reply.message, reply.path === undefined ? {} : { path: reply.path }));
    else job.reject(new Error(`weft: evaluating an expression failed in its thread (${reply.message})`));
    this.onIdle(this);
  }

  /** (Re)starts the time bound of the expression now running; past it, the thread is ended. */
  private arm(job: Job): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.ending = stoppedAt(job, LIMIT_REASONS.time(job.maxMs));
      void this.worker.terminate();
    }, job.maxMs + this.settings.graceMs);
  }

  private finish(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.job = undefined;
    this.worker.unref();
  }
}

function stoppedAt(job: Job, reason: string): ExpressionError {
  const at = job.expressions[job.at] ?? job.expressions[0];
  if (at === undefined) return new ExpressionError(`an expression was stopped: ${reason}`);
  return stoppedExpression(at.expression, at.where, reason);
}

/** A thread running this module (see the top of the file). */
function startWorker(heapMb: number): Worker {
  const options = {
    workerData: { [THREAD_MARK]: true },
    resourceLimits: { maxOldGenerationSizeMb: heapMb },
    // Its output is the process's: it writes nothing itself.
    stdout: false,
    stderr: false,
    // None of the process's flags: the thread runs one module, and some refuse one (--input-type,
    // --eval); tsx, where the source needs it, is registered by the thread itself (below).
    execArgv: [],
  };
  const self = import.meta.url;
  if (!self.endsWith(".ts")) return new Worker(new URL(self), options);
  // The TypeScript source (this repository's tests and `npm start`): tsx compiles it in the thread.
  // require.resolve finds the CommonJS build of tsx's API; its ES module (which registers the ESM
  // hooks a thread needs) is the index.mjs beside it.
  const api = path.join(path.dirname(createRequire(self).resolve("tsx/esm/api")), "index.mjs");
  const tsx = pathToFileURL(api).href;
  const code = `import { register } from ${JSON.stringify(tsx)}; register(); await import(${JSON.stringify(self)});`;
  return new Worker(code, { ...options, eval: true });
}

/** An evaluator with its own threads (see the top of the file). */
export class IsolatedExpressions implements ExpressionEvaluator {
  private readonly threads = new Set<EvaluationThread>();
  private readonly idle: EvaluationThread[] = [];
  private readonly waiting: Job[] = [];
  private nextId = 1;

  constructor(private readonly settings: IsolationSettings = DEFAULT_ISOLATION) {}

  resolve(
    value: unknown,
    scope: ExpressionScope,
    options: EvaluationOptions,
    path = "params",
  ): Promise<unknown> {
    return this.submit("resolve", value, path, scope, options, expressionsIn(value, path));
  }

  async condition(expression: string, scope: ExpressionScope, options: EvaluationOptions): Promise<boolean> {
    const result = await this.submit("condition", expression, "when", scope, options, [
      { where: "when", expression },
    ]);
    return result === true;
  }

  /** Ends every thread (tests and a runtime's shutdown; an idle pool never holds the process open). */
  async close(): Promise<void> {
    const threads = [...this.threads];
    this.threads.clear();
    this.idle.length = 0;
    await Promise.all(threads.map((thread) => thread.worker.terminate()));
  }

  private submit(
    kind: EvaluationRequest["kind"],
    value: unknown,
    path: string,
    scope: ExpressionScope,
    options: EvaluationOptions,
    expressions: Job["expressions"],
  ): Promise<unknown> {
    if (expressions.length === 0) return Promise.resolve(value);
    const data = { value, scope, bindings: options.bindings };
    // Exact numbers would lose their class in structured cloning: then the data crosses as text.
    const exactJson = crossing(data);
    const request: EvaluationRequest = {
      id: this.nextId++,
      kind,
      path,
      nowMs: options.now(),
      limits: options.limits,
      data: exactJson === undefined ? data : { exactJson },
    };
    const maxMs = options.limits?.maxMs ?? DEFAULT_EXPRESSION_LIMITS.maxMs;
    return new Promise((resolve, reject) => {
      this.waiting.push({ request, expressions, at: 0, maxMs, resolve, reject });
      this.dispatch();
    });
  }

  private dispatch(): void {
    while (this.waiting.length > 0) {
      let thread = this.idle.pop();
      if (thread === undefined && this.threads.size < this.settings.threads) {
        thread = new EvaluationThread(
          this.settings,
          (done) => {
            this.idle.push(done);
            this.dispatch();
          },
          (gone) => {
            this.threads.delete(gone);
            const at = this.idle.indexOf(gone);
            if (at >= 0) this.idle.splice(at, 1);
            this.dispatch();
          },
        );
        this.threads.add(thread);
      }
      if (thread === undefined) return;
      thread.run(this.waiting.shift()!);
    }
  }
}

let shared: IsolatedExpressions | undefined;

/** The process's isolated evaluator, made on first use: every engine in a process shares its threads. */
export function sharedIsolatedExpressions(): IsolatedExpressions {
  shared ??= new IsolatedExpressions();
  return shared;
}
