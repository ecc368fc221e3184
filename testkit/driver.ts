/**
 * Drives the test runtime as the deployed event sources would, on virtual time. Each step it hands
 * every visible task message to the engine — batches of ten, one worker invocation each, as the SQS
 * event source does (functions/worker/app.ts, local/poller.ts) — and every dead-lettered one to the
 * DLQ path, then waits for them to settle. Only when nothing is visible and nothing in flight can
 * move without time does it advance the clock, to the next due thing: a delayed (or returning)
 * message, a virtual sleep, or a sweeper run on the EventBridge rule's minute schedule (one with
 * something due). It never advances while a task handler does real work: a handler may only be
 * parked in `context.sleep` (testkit/handlers.ts).
 */

import { parseTaskMessage } from "../functions/common/task-message.js";
import type { MemoryQueue } from "../shared/adapters/memory/queue.js";
import { VISIBILITY_TO_TIMEOUT_RATIO } from "../shared/config/delivery.js";
import type { Engine } from "../shared/engine/engine.js";
import { nextTimerSweepAt } from "../shared/engine/timers.js";
import { invocationDeadline } from "../shared/engine/worker-time.js";
import type { ReceivedMessage, Store, TaskMessage } from "../shared/ports.js";
import { type Activity, macrotask } from "./activity.js";
import type { VirtualClock } from "./clock.js";
import type { RunningHandlers } from "./handlers.js";

/** The EventBridge rule's schedule of the sweeper: every minute (local/runtime.ts, infra). */
export const SWEEP_INTERVAL_MS = 60_000;
/** Records per worker invocation: SQS's largest batch. */
const BATCH_SIZE = 10;
/**
 * Steps of virtual time one drive may take before it gives up: far more than any workflow a test
 * runs needs, and a clear error instead of a test spinning until its timeout.
 */
const MAX_ADVANCES = 100_000;
/** How long `close` waits for deliveries still running (real time). */
const CLOSE_WAIT_MS = 1000;
/** Real timers, taken at load: fake timers a test installs later must not hold `close` up. */
const realSetTimeout = globalThis.setTimeout;
const realClearTimeout = globalThis.clearTimeout;

/** Ends a drive with a value. */
export interface Done<T> {
  done: T;
}

/** What a drive is for. */
export interface Goal<T> {
  /** Looked at whenever the runtime is quiet; a Done ends the drive with its value. */
  reached(): Promise<Done<T> | undefined>;
  /**
   * Looked at before virtual time moves on to `at` (undefined: nothing is due at any time); a Done
   * ends the drive instead, and a throw ends it with that error.
   */
  beforeAdvance(at: number | undefined): Promise<Done<T> | undefined>;
}

export interface DriverParts {
  engine: Engine;
  store: Store;
  clock: VirtualClock;
  taskQueue: MemoryQueue;
  deadLetterQueue: MemoryQueue;
  activity: Activity;
  handlers: RunningHandlers;
  workerTimeoutSeconds: number;
}

export class Driver {
  /** Deliveries under way, with the execution each is for. */
  private readonly inFlight = new Map<Promise<void>, string | undefined>();
  /** The sweeper's schedule counts from here. */
  private readonly epoch: number;
  private lastSweep: number;
  /** Drives run one at a time: two would race for the same messages and the same clock. */
  private turn: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** The latest delivery and sweep failures, for the error of a drive that gives up. */
  private readonly failures: string[] = [];

  constructor(private readonly parts: DriverParts) {
    this.epoch = parts.clock.now();
    this.lastSweep = this.epoch;
  }

  drive<T>(goal: Goal<T>): Promise<T> {
    const run = this.turn.then(() => this.loop(goal));
    this.turn = run.catch(() => {});
    return run;
  }

  /** True while a delivery for this execution is under way. */
  busy(executionId: string): boolean {
    return [...this.inFlight.values()].includes(executionId);
  }

  /**
   * Stops driving: parked handlers are woken with an AbortError (their attempts end), and
   * deliveries still running get a moment to finish.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.parts.clock.abortAll();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.inFlight.keys()]),
      new Promise((resolve) => {
        timer = realSetTimeout(resolve, CLOSE_WAIT_MS);
      }),
    ]);
    realClearTimeout(timer);
  }

  private async loop<T>(goal: Goal<T>): Promise<T> {
    const { clock, handlers, activity } = this.parts;
    for (let advances = 0; ; ) {
      if (this.closed) throw new Error("the test runtime is closed");
      if ((await this.deliver()) > 0) {
        await macrotask();
        continue;
      }
      if (this.inFlight.size > 0) {
        // A handler doing real work: wait for it to end or park, in real time.
        if (handlers.active > 0) {
          await activity.next();
          continue;
        }
        if (!(await this.quiet())) continue;
      }
      const reached = await goal.reached();
      if (reached) return reached.done;
      const next = await this.nextDue();
      const stop = await goal.beforeAdvance(next?.at);
      if (stop) return stop.done;
      if (next === undefined) throw new Error("nothing is due in the test runtime");
      if (++advances > MAX_ADVANCES)
        throw new Error(
          `gave up after ${MAX_ADVANCES} steps of virtual time (now ${new Date(clock.now()).toISOString()}): something keeps coming due${
            this.failures.length > 0 ? `; latest failures: ${this.failures.join("; ")}` : ""
          }`,
        );
      if (next.at > clock.now()) clock.advanceTo(next.at);
      if (next.sweep) await this.sweep();
    }
  }

  /**
   * Nothing moved for two turns of the event loop, and no handler is doing real work: whatever is in
   * flight waits on virtual time (in-memory adapters settle within a turn).
   */
  private async quiet(): Promise<boolean> {
    const before = this.parts.activity.version;
    await macrotask();
    await macrotask();
    return this.parts.activity.version === before && this.parts.handlers.active === 0;
  }

  /** Hands every visible message over; how many there were. */
  private async deliver(): Promise<number> {
    const { taskQueue, deadLetterQueue, workerTimeoutSeconds } = this.parts;
    const receive = (queue: MemoryQueue) =>
      queue.receive({
        maxMessages: BATCH_SIZE,
        waitSeconds: 0,
        visibilityTimeoutSeconds: workerTimeoutSeconds * VISIBILITY_TO_TIMEOUT_RATIO,
      });
    let count = 0;
    for (let batch = await receive(taskQueue); batch.length > 0; batch = await receive(taskQueue)) {
      this.invokeWorker(batch);
      count += batch.length;
    }
    for (
      let batch = await receive(deadLetterQueue);
      batch.length > 0;
      batch = await receive(deadLetterQueue)
    ) {
      this.invokeDeadLetters(batch);
      count += batch.length;
    }
    return count;
  }

  /** One worker invocation: its records at once, in one engine scope, under its deadline. */
  private invokeWorker(batch: readonly ReceivedMessage[]): void {
    const { engine, clock, taskQueue, workerTimeoutSeconds } = this.parts;
    const scope = engine.invocation();
    const deadline = invocationDeadline(clock.now(), workerTimeoutSeconds * 1000);
    for (const received of batch) {
      const message = parsed(received);
      this.track(message?.executionId, async () => {
        // A malformed body fails on every receive until SQS moves it to the dead-letter queue.
        if (!message) throw new Error(`malformed task message ${received.messageId}`);
        await scope.handleTask(message, {
          receiveCount: received.receiveCount,
          sentAt: received.sentAt,
          deadline,
        });
        // Failed: not deleted, so it comes back after its visibility timeout (virtual), as on SQS.
        await taskQueue.delete([received.receiptHandle]);
      });
    }
  }

  /** The DLQ function: each dead-lettered task fails its node and is kept for a redrive. */
  private invokeDeadLetters(batch: readonly ReceivedMessage[]): void {
    const { engine, deadLetterQueue } = this.parts;
    for (const received of batch) {
      const message = parsed(received);
      this.track(message?.executionId, async () => {
        // Not a task message: nothing to fail, and nothing a retry would change (functions/dlq).
        if (message)
          await engine.recordDeadLetter(message, {
            messageId: received.messageId,
            receiveCount: received.receiveCount,
          });
        await deadLetterQueue.delete([received.receiptHandle]);
      });
    }
  }

  private track(executionId: string | undefined, work: () => Promise<void>): void {
    const job: Promise<void> = work()
      .catch((error: unknown) => this.noteFailure("delivery", error))
      .finally(() => {
        this.inFlight.delete(job);
        this.parts.activity.bump();
      });
    this.inFlight.set(job, executionId);
  }

  /** The next time something is due, and whether the sweeper runs then. */
  private async nextDue(): Promise<{ at: number; sweep: boolean } | undefined> {
    const { taskQueue, deadLetterQueue, clock } = this.parts;
    const sweepAt = await this.nextSweep();
    const times = [taskQueue.nextVisibleAt(), deadLetterQueue.nextVisibleAt(), clock.nextTimerAt(), sweepAt];
    const due = times.filter((at): at is number => at !== undefined);
    if (due.length === 0) return undefined;
    const at = Math.min(...due);
    return { at, sweep: sweepAt !== undefined && sweepAt <= at };
  }

  /**
   * The first run of the sweeper's schedule that finds something due (the earliest `sweepAt`, or a
   * durable timer coming within reach): the runs before it would find nothing, so skipping them
   * changes nothing.
   */
  private async nextSweep(): Promise<number | undefined> {
    const now = this.parts.clock.now();
    const [earliest] = await this.parts.store.listDueExecutions(Number.MAX_SAFE_INTEGER, 1);
    const timers = await nextTimerSweepAt(this.parts.store, now);
    const due = [earliest?.sweepAt, timers].filter((at): at is number => at !== undefined);
    if (due.length === 0) return undefined;
    const from = Math.max(Math.min(...due), this.lastSweep + 1, now);
    const ticks = Math.max(1, Math.ceil((from - this.epoch) / SWEEP_INTERVAL_MS));
    return this.epoch + ticks * SWEEP_INTERVAL_MS;
  }

  private async sweep(): Promise<void> {
    this.lastSweep = this.parts.clock.now();
    try {
      await this.parts.engine.sweep();
    } catch (error) {
      // As a failed scheduled invocation: logged, and the next run of the schedule tries again.
      this.noteFailure("sweep", error);
    }
  }

  private noteFailure(where: string, error: unknown): void {
    this.failures.push(`${where}: ${error instanceof Error ? error.message : String(error)}`);
    if (this.failures.length > 5) this.failures.shift();
  }
}

function parsed(received: ReceivedMessage): TaskMessage | undefined {
  try {
    return parseTaskMessage(received.body);
  } catch {
    return undefined;
  }
}
