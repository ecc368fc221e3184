/**
 * One Lambda execution environment: a child Node process running bootstrap.mjs with the function's
 * environment and no other. It handles one invocation at a time, is frozen (SIGSTOP) between
 * invocations as Lambda freezes its sandboxes — so nothing a handler left running after it returned
 * goes on in the background — and is killed when an invocation times out or it crashes.
 */
import { type ChildProcess, fork } from "node:child_process";
import { randomUUID } from "node:crypto";
import type { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { CLOCK_OFFSET_ENV, clockOffsetFile } from "./clock.js";

const BOOTSTRAP = fileURLToPath(new URL("./bootstrap.mjs", import.meta.url));
/** Lambda gives the init phase 10 seconds; a loaded machine gets a little more. */
const INIT_TIMEOUT_MS = 20_000;
/** Synchronous invocations carry at most 6 MB each way. */
export const INVOKE_PAYLOAD_LIMIT = 6 * 1024 * 1024;

export type InvokeOutcome =
  | { ok: true; result: unknown; durationMs: number }
  | { ok: false; errorType: string; errorMessage: string; durationMs: number };

interface ResultMessage {
  type: "result";
  id: string;
  ok: boolean;
  result?: unknown;
  error?: { errorType: string; errorMessage: string };
}

export interface ContainerSpec {
  functionName: string;
  functionArn: string;
  timeoutMs: number;
  /** The whole environment of the process: nothing is inherited. */
  env: Record<string, string>;
  /** This environment's own access key id (so its calls can be told from its siblings'). */
  accessKeyId: string;
  log: Writable;
}

const live = new Set<ChildProcess>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // A frozen child cannot notice that its parent is gone: kill them all on the way out.
  process.on("exit", () => {
    for (const child of live) child.kill("SIGKILL");
  });
}

export class Container {
  private busy = false;
  private dead = false;
  readonly id = randomUUID().slice(0, 8);

  private constructor(
    private readonly child: ChildProcess,
    private readonly spec: ContainerSpec,
  ) {}

  static async start(spec: ContainerSpec): Promise<Container> {
    installExitHook();
    const child = fork(BOOTSTRAP, [], {
      env: { ...spec.env, AWS_ACCESS_KEY_ID: spec.accessKeyId, [CLOCK_OFFSET_ENV]: clockOffsetFile() },
      cwd: spec.env.LAMBDA_TASK_ROOT,
      stdio: ["ignore", "pipe", "pipe", "ipc"],
      serialization: "json",
    });
    live.add(child);
    child.once("exit", () => live.delete(child));
    child.stdout?.pipe(spec.log, { end: false });
    child.stderr?.pipe(spec.log, { end: false });
    const container = new Container(child, spec);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        reject(new Error(`${spec.functionName}: init did not finish within ${INIT_TIMEOUT_MS} ms`));
      }, INIT_TIMEOUT_MS);
      child.once(
        "message",
        (message: { type: string; error?: { errorType: string; errorMessage: string } }) => {
          clearTimeout(timer);
          if (message.type === "ready") resolve();
          else
            reject(
              new Error(
                `${spec.functionName}: init failed: ${message.error?.errorType}: ${message.error?.errorMessage}`,
              ),
            );
        },
      );
      child.once("exit", (code, signal) => {
        clearTimeout(timer);
        reject(
          new Error(`${spec.functionName}: the runtime exited during init (code ${code}, signal ${signal})`),
        );
      });
    });
    child.kill("SIGSTOP");
    return container;
  }

  get accessKeyId(): string {
    return this.spec.accessKeyId;
  }

  get idle(): boolean {
    return !this.busy && !this.dead;
  }

  get alive(): boolean {
    return !this.dead;
  }

  get running(): boolean {
    return this.busy && !this.dead;
  }

  /** Runs one invocation; a timeout or a crash kills the environment (it is never reused). */
  invoke(event: unknown): Promise<InvokeOutcome> {
    if (!this.idle) throw new Error("a Lambda environment runs one invocation at a time");
    this.busy = true;
    const started = Date.now();
    const deadline = started + this.spec.timeoutMs;
    const id = randomUUID();
    const elapsed = () => Date.now() - started;
    return new Promise<InvokeOutcome>((resolve) => {
      let settled = false;
      const finish = (outcome: InvokeOutcome, keep: boolean) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.child.off("message", onMessage);
        this.child.off("exit", onExit);
        if (keep) {
          this.child.kill("SIGSTOP");
          this.busy = false;
        } else this.kill();
        resolve(outcome);
      };
      const onMessage = (message: ResultMessage) => {
        if (message.type !== "result" || message.id !== id) return;
        if (!message.ok) {
          const error = message.error ?? { errorType: "Error", errorMessage: "unknown" };
          return finish({ ok: false, ...error, durationMs: elapsed() }, true);
        }
        const size = Buffer.byteLength(JSON.stringify(message.result));
        if (size > INVOKE_PAYLOAD_LIMIT) {
          return finish(
            {
              ok: false,
              errorType: "Function.ResponseSizeTooLarge",
              errorMessage: `Response payload size (${size} bytes) exceeded maximum allowed payload size (${INVOKE_PAYLOAD_LIMIT} bytes).`,
              durationMs: elapsed(),
            },
            true,
          );
        }
        finish({ ok: true, result: message.result, durationMs: elapsed() }, true);
      };
      const onExit = (code: number | null, signal: string | null) =>
        finish(
          {
            ok: false,
            errorType: "Runtime.ExitError",
            errorMessage: `RequestId: ${id} Error: Runtime exited (code ${code}, signal ${signal})`,
            durationMs: elapsed(),
          },
          false,
        );
      const timer = setTimeout(
        () =>
          finish(
            {
              ok: false,
              errorType: "Sandbox.Timedout",
              errorMessage: `RequestId: ${id} Error: Task timed out after ${(this.spec.timeoutMs / 1000).toFixed(2)} seconds`,
              durationMs: elapsed(),
            },
            false,
          ),
        this.spec.timeoutMs,
      );
      this.child.on("message", onMessage);
      this.child.once("exit", onExit);
      this.child.kill("SIGCONT");
      this.child.send({
        type: "invoke",
        id,
        event,
        deadline,
        requestId: id,
        invokedFunctionArn: this.spec.functionArn,
        traceId: `Root=1-${Math.floor(started / 1000).toString(16)}-${randomUUID().replace(/-/g, "").slice(0, 24)};Sampled=0`,
      });
    });
  }

  /** Ends the environment at once (a crash, a timeout, the end of the rehearsal). */
  kill(): void {
    this.dead = true;
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGKILL");
  }

  exited(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => this.child.once("exit", () => resolve()));
  }
}
