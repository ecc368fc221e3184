/**
 * One function's execution environments, as the Lambda service keeps them: an invocation takes an
 * idle (warm) environment or starts a new one (a cold start) up to the function's concurrency, and
 * waits for one otherwise; an environment that timed out or crashed is discarded.
 */
import { randomBytes } from "node:crypto";
import type { Writable } from "node:stream";
import { Container, type InvokeOutcome } from "./container.js";

export interface FunctionSpec {
  logicalId: string;
  functionName: string;
  functionArn: string;
  timeoutSeconds: number;
  memorySize: number;
  runtime: string;
  /** The asset directory of the bundled code (LAMBDA_TASK_ROOT). */
  codeDir: string;
  handler: string;
  /** The function's environment (template variables resolved, runtime variables, endpoint, credentials). */
  env: Record<string, string>;
}

export interface PoolStats {
  invocations: number;
  coldStarts: number;
  errors: number;
  timeouts: number;
  crashes: number;
}

export class FunctionPool {
  private readonly containers = new Set<Container>();
  private readonly waiting: Array<() => void> = [];
  private starting = 0;
  private stopped = false;
  readonly stats: PoolStats = { invocations: 0, coldStarts: 0, errors: 0, timeouts: 0, crashes: 0 };

  constructor(
    readonly spec: FunctionSpec,
    private readonly options: { maxConcurrency: number; log: Writable },
  ) {}

  async invoke(event: unknown): Promise<InvokeOutcome> {
    const container = await this.acquire();
    this.stats.invocations++;
    const outcome = await container.invoke(event);
    if (!container.alive) this.containers.delete(container);
    if (!outcome.ok) {
      this.stats.errors++;
      if (outcome.errorType === "Sandbox.Timedout") this.stats.timeouts++;
      if (outcome.errorType === "Runtime.ExitError") this.stats.crashes++;
    }
    this.waiting.shift()?.();
    return outcome;
  }

  /** Kills every environment that is running an invocation now (a crash); returns how many. */
  killRunning(): number {
    let killed = 0;
    for (const container of this.containers) {
      if (container.running) {
        container.kill();
        killed++;
      }
    }
    return killed;
  }

  /** Kills the environment that signs with this access key (a crash at one of its calls). */
  kill(accessKeyId: string): boolean {
    for (const container of this.containers) {
      if (container.accessKeyId === accessKeyId && container.alive) {
        container.kill();
        return true;
      }
    }
    return false;
  }

  get running(): number {
    return [...this.containers].filter((c) => c.running).length;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const all = [...this.containers];
    for (const container of all) container.kill();
    await Promise.all(all.map((container) => container.exited()));
    for (const wake of this.waiting.splice(0)) wake();
  }

  private async acquire(): Promise<Container> {
    for (;;) {
      if (this.stopped) throw new Error(`${this.spec.functionName} is stopped`);
      const idle = [...this.containers].find((c) => c.idle);
      if (idle) return idle;
      if (this.containers.size + this.starting < this.options.maxConcurrency) {
        this.starting++;
        try {
          const container = await Container.start({
            functionName: this.spec.functionName,
            functionArn: this.spec.functionArn,
            timeoutMs: this.spec.timeoutSeconds * 1000,
            env: this.spec.env,
            accessKeyId: `ASIA${randomBytes(8).toString("hex").toUpperCase()}`,
            log: this.options.log,
          });
          this.stats.coldStarts++;
          this.containers.add(container);
          if (this.stopped) container.kill();
        } finally {
          this.starting--;
        }
        continue;
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }
}
