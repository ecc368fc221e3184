/**
 * The test runtime: the real engine on the in-memory adapters and a virtual clock, with the real
 * task registry (built-ins, `http`, `emit`, `lambda` on the test's functions, the test's task
 * types), driven to an execution's end in one call (testkit/driver.ts). What a unit test of a
 * workflow needs, and nothing it has to start or stop besides `close()`.
 */

import { MemoryBlobStore } from "../shared/adapters/memory/blobs.js";
import { MemoryEventPublisher } from "../shared/adapters/memory/events.js";
import { MemoryQueue } from "../shared/adapters/memory/queue.js";
import { MemoryStore } from "../shared/adapters/memory/store.js";
import { TASK_MAX_RECEIVE_COUNT } from "../shared/config/delivery.js";
import { localEgressPolicy } from "../shared/config/egress.js";
import { workflowDefinitionSchema } from "../shared/domain/definition.js";
import type { ProblemDetail } from "../shared/domain/errors.js";
import type { ExecutionRecord } from "../shared/domain/records.js";
import { isTerminalExecution } from "../shared/domain/states.js";
import { Engine } from "../shared/engine/engine.js";
import type { TaskErrorReport } from "../shared/engine/external.js";
import { checkWorkerTimeout, DEFAULT_WORKER_TIMEOUT_SECONDS } from "../shared/engine/worker-time.js";
import type { LifecycleEvent, TaskQueue } from "../shared/ports.js";
import { type EmitEntry, MemoryEventSender } from "../shared/tasks/emit.js";
import { buildTaskRegistry } from "../shared/tasks/loader.js";
import { Activity } from "./activity.js";
import { VirtualClock } from "./clock.js";
import type { WorkflowDefinition } from "./definition.js";
import { type Done, Driver, type Goal } from "./driver.js";
import { asInvalidWorkflow, ExecutionWaitingError } from "./errors.js";
import { RunningHandlers } from "./handlers.js";
import { testIds } from "./ids.js";
import { FunctionMapInvoker } from "./lambda.js";
import { parseOptions, type TestRuntimeOptions } from "./options.js";
import { readRun, type TestRun } from "./run.js";
import { waitingNodes } from "./waiting.js";

/** The bus `emit` nodes send to when they name none (the lifecycle bus). */
const EVENT_BUS = "weft-test-events";
/**
 * The sweeper's idle revisit of a running execution. Deployed, it is a backstop for work lost to a
 * crash; nothing is ever lost in memory, and every time the engine does need a look (a far-off
 * wait or retry, a callback's timeout, a lease, the execution's deadline) is asked for explicitly.
 * At a year, the sweeper only runs when something is due, so an execution waiting a day takes a
 * handful of steps, not one every five minutes.
 */
const IDLE_REVISIT_MS = 366 * 24 * 3600 * 1000;
/**
 * Steps of virtual time an ended execution may take to settle (running leftovers stopping at their
 * next heartbeat, its onFailure handler with its retries) before its run is answered as it is.
 */
const SETTLE_ADVANCES = 1000;

/** The virtual clock as a test sees it. */
export interface TestClock {
  /** Virtual time, epoch ms (what the engine, `context.now()` and `$now()` see). */
  now(): number;
  /**
   * Lets `ms` of virtual time pass, running everything that comes due meanwhile in order (retries,
   * waits, sweeps, a callback's timeout). Resolves once virtual time is `now() + ms` and the runtime
   * is quiet.
   */
  advance(ms: number): Promise<void>;
}

export interface StartOptions {
  /** With a workflow name: the version to run (default the latest). */
  version?: number;
  /** As `POST /executions`: the same key (and request) again returns the same execution. */
  idempotencyKey?: string;
}

export interface RegisteredWorkflow {
  name: string;
  version: number;
  /** False when the same content was registered already (same version). */
  created: boolean;
  /** What registration allowed but looks wrong (a `workflow` node naming a workflow not registered). */
  warnings: readonly ProblemDetail[];
}

/** An error a test reports for a callback it fails. */
export interface CallbackError {
  /** Stored as the node error's name (default "CallbackFailed"). */
  name?: string;
  message: string;
  /** True: retried by the node's policy (a new wait, a new token). Default false: fails for good. */
  retryable?: boolean;
}

export interface TestCallbacks {
  /**
   * Runs the execution until a `callback` node (`nodeId`, or any) waits for its settlement, and
   * returns its token. Throws when the execution ends first, or would wait on something else.
   */
  waitFor(executionId: string, nodeId?: string): Promise<string>;
  /** Completes the waiting callback with `output` (POST /callbacks/complete). */
  complete(token: string, output?: unknown): Promise<void>;
  /** Fails the waiting callback (POST /callbacks/fail). */
  fail(token: string, error: CallbackError): Promise<void>;
  /** Pushes a callback's heartbeat due time on (POST /callbacks/heartbeat). */
  heartbeat(token: string): Promise<void>;
}

export interface TestRuntime {
  readonly clock: TestClock;
  readonly callbacks: TestCallbacks;
  /** Lifecycle events published so far (what EventBridge would carry), oldest first. */
  readonly events: readonly LifecycleEvent[];
  /** Events `emit` nodes sent, oldest first. */
  readonly emitted: readonly EmitEntry[];
  /**
   * Registers a definition (the same content again: the same version). Throws InvalidWorkflowError
   * listing every problem when it is not valid.
   */
  register(definition: WorkflowDefinition): Promise<RegisteredWorkflow>;
  /** Registers (a definition) and starts an execution; returns its id. Nothing runs until driven. */
  start(workflow: string | WorkflowDefinition, input?: unknown, options?: StartOptions): Promise<string>;
  /**
   * Runs the execution to its end on virtual time, and returns it. Throws ExecutionWaitingError when
   * it cannot end by itself (a callback not settled before its timeout would fire).
   */
  runToEnd(executionId: string): Promise<TestRun>;
  /** `start`, then `runToEnd`. */
  run(workflow: string | WorkflowDefinition, input?: unknown, options?: StartOptions): Promise<TestRun>;
  /** The execution as it is now (nothing is run). */
  execution(executionId: string): Promise<TestRun>;
  /** Cancels the execution (POST /executions/{id}/cancel) and returns it once it has settled. */
  cancel(executionId: string, reason?: string): Promise<TestRun>;
  /** Stops the runtime: handlers parked on the virtual clock are aborted. Idempotent. */
  close(): Promise<void>;
}

/**
 * Creates a test runtime: the real engine and task registry (built-ins, `http`, `emit`, `lambda` on
 * the functions given, and your task types) on in-memory adapters and a virtual clock. Each runtime
 * is on its own: two in one process share nothing but the modules of a `tasksDir` they both load.
 */
export async function createTestRuntime(options: TestRuntimeOptions = {}): Promise<TestRuntime> {
  const parsed = parseOptions(options);
  const activity = new Activity();
  const startAt = parsed.startAt === undefined ? Date.now() : new Date(parsed.startAt).getTime();
  const clock = new VirtualClock(startAt, () => activity.bump());
  const deadLetterQueue = new MemoryQueue({ clock });
  const taskQueue = new MemoryQueue({
    clock,
    maxReceiveCount: TASK_MAX_RECEIVE_COUNT,
    deadLetter: deadLetterQueue,
  });
  // Every send is progress the driver must see before it may move time.
  const queue: TaskQueue = {
    async send(messages, sendOptions) {
      await taskQueue.send(messages, sendOptions);
      activity.bump();
    },
  };
  const events = new MemoryEventPublisher();
  const emitted = new MemoryEventSender();
  const handlers = new RunningHandlers(activity);
  const registry = await buildTaskRegistry({
    ...(parsed.tasksDir === undefined ? {} : { customTasksDir: parsed.tasksDir }),
    ...(parsed.tasks === undefined ? {} : { customTasks: parsed.tasks }),
    lambda: new FunctionMapInvoker(parsed.lambda ?? {}),
    events: emitted,
    lifecycleBusName: EVENT_BUS,
    // As `npm start`: public addresses and loopback (a stub server in the test), not the shell's
    // WEFT_HTTP_ALLOW, so a test behaves the same on every machine.
    http: { egress: localEgressPolicy({}) },
  });
  const workerTimeoutSeconds = checkWorkerTimeout(
    parsed.workerTimeoutSeconds ?? DEFAULT_WORKER_TIMEOUT_SECONDS,
  );
  const store = new MemoryStore();
  const engine = new Engine(
    {
      store,
      blobs: new MemoryBlobStore({ now: () => clock.now() }),
      queue,
      events,
      clock,
      ids: testIds(parsed.seed),
    },
    handlers.wrap(registry),
    {
      workerTimeoutSeconds,
      sweep: { idleMs: IDLE_REVISIT_MS },
      ...(parsed.leaseSeconds === undefined ? {} : { leaseSeconds: parsed.leaseSeconds }),
      ...(parsed.defaultMaxAttempts === undefined ? {} : { defaultMaxAttempts: parsed.defaultMaxAttempts }),
    },
  );
  const driver = new Driver({
    engine,
    store,
    clock,
    taskQueue,
    deadLetterQueue,
    activity,
    handlers,
    workerTimeoutSeconds,
  });
  return new InMemoryTestRuntime(engine, store, clock, driver, events, emitted);
}

class InMemoryTestRuntime implements TestRuntime {
  readonly clock: TestClock;
  readonly callbacks: TestCallbacks;

  constructor(
    private readonly engine: Engine,
    private readonly store: MemoryStore,
    private readonly virtual: VirtualClock,
    private readonly driver: Driver,
    private readonly publisher: MemoryEventPublisher,
    private readonly sender: MemoryEventSender,
  ) {
    this.clock = {
      now: () => virtual.now(),
      advance: (ms) => this.advance(ms),
    };
    this.callbacks = {
      waitFor: (executionId, nodeId) => this.driver.drive(this.untilCallback(executionId, nodeId)),
      complete: (token, output) => engine.completeCallback(token, output ?? null),
      fail: (token, error) => engine.failCallback(token, callbackFailure(error)),
      heartbeat: (token) => engine.heartbeatCallback(token),
    };
  }

  get events(): readonly LifecycleEvent[] {
    return this.publisher.events;
  }

  get emitted(): readonly EmitEntry[] {
    return this.sender.sent;
  }

  async register(definition: WorkflowDefinition): Promise<RegisteredWorkflow> {
    refuseExternalNodes(definition);
    try {
      const result = await this.engine.registerWorkflow(definition);
      return {
        name: result.name,
        version: result.version,
        created: result.created,
        warnings: result.warnings ?? [],
      };
    } catch (error) {
      throw asInvalidWorkflow(error);
    }
  }

  async start(
    workflow: string | WorkflowDefinition,
    input?: unknown,
    options: StartOptions = {},
  ): Promise<string> {
    const target =
      typeof workflow === "string"
        ? { workflow, ...(options.version === undefined ? {} : { version: options.version }) }
        : await this.register(workflow).then(({ name, version }) => ({ workflow: name, version }));
    const summary = await this.engine.createExecution({
      ...target,
      ...(input === undefined ? {} : { input }),
      ...(options.idempotencyKey === undefined ? {} : { idempotencyKey: options.idempotencyKey }),
    });
    return summary.executionId;
  }

  runToEnd(executionId: string): Promise<TestRun> {
    return this.driver.drive(this.untilEnd(executionId));
  }

  async run(
    workflow: string | WorkflowDefinition,
    input?: unknown,
    options?: StartOptions,
  ): Promise<TestRun> {
    return this.runToEnd(await this.start(workflow, input, options));
  }

  execution(executionId: string): Promise<TestRun> {
    return readRun(this.engine, executionId);
  }

  async cancel(executionId: string, reason?: string): Promise<TestRun> {
    await this.engine.cancelExecution(executionId, reason);
    return this.runToEnd(executionId);
  }

  close(): Promise<void> {
    return this.driver.close();
  }

  private advance(ms: number): Promise<void> {
    if (!Number.isFinite(ms) || ms < 0)
      return Promise.reject(new RangeError(`clock.advance takes a duration of 0 ms or more, got ${ms}`));
    let target: number | undefined;
    return this.driver.drive<undefined>({
      reached: async () => undefined,
      beforeAdvance: async (at) => {
        // Computed once the drive's turn came: `now` is where the previous drive left the clock.
        target ??= this.virtual.now() + ms;
        if (at !== undefined && at <= target) return undefined;
        if (target > this.virtual.now()) this.virtual.advanceTo(target);
        return { done: undefined };
      },
    });
  }

  /** Until the execution has ended and settled (nothing of it running or queued any more). */
  private untilEnd(executionId: string): Goal<TestRun> {
    let settling = 0;
    return {
      reached: async () => {
        const execution = await this.read(executionId);
        if (!isTerminalExecution(execution.status) || !(await this.settled(executionId))) return undefined;
        return { done: await readRun(this.engine, executionId) };
      },
      beforeAdvance: async (at) => {
        const execution = await this.read(executionId);
        if (isTerminalExecution(execution.status)) {
          // Ended, with leftovers still stopping or its onFailure handler running: on within bounds.
          if (at === undefined || ++settling > SETTLE_ADVANCES)
            return { done: await readRun(this.engine, executionId) };
          return undefined;
        }
        return this.refuseToWait(executionId, at);
      },
    };
  }

  /** Until a callback of the execution (`nodeId`, or any) waits: its token. */
  private untilCallback(executionId: string, nodeId: string | undefined): Goal<string> {
    const which = nodeId === undefined ? "a callback node" : `node "${nodeId}"`;
    return {
      reached: async () => {
        const waiting = await waitingNodes(this.engine, this.store, executionId);
        const found = waiting.find(
          (node) => node.callbackToken !== undefined && (nodeId === undefined || node.nodeId === nodeId),
        );
        if (found?.callbackToken !== undefined) return { done: found.callbackToken };
        const execution = await this.read(executionId);
        if (isTerminalExecution(execution.status))
          throw new Error(
            `execution ${executionId} ended ${execution.status} before ${which} waited for its callback`,
          );
        return undefined;
      },
      beforeAdvance: (at) => this.refuseToWait(executionId, at),
    };
  }

  /**
   * Time moves on to `at` only if that cannot fire a callback's timeout the test has not asked for,
   * and only if something is due at all; otherwise the test hears what the execution waits on.
   */
  private async refuseToWait<T>(executionId: string, at: number | undefined): Promise<Done<T> | undefined> {
    const waiting = await waitingNodes(this.engine, this.store, executionId);
    const callbackDue = waiting.flatMap((node) => (node.dueAt === undefined ? [] : [node.dueAt]));
    if (at !== undefined && (callbackDue.length === 0 || at < Math.min(...callbackDue))) return undefined;
    throw new ExecutionWaitingError(await readRun(this.engine, executionId), waiting, this.virtual.now());
  }

  /** Nothing of the execution is in flight, running or queued. */
  private async settled(executionId: string): Promise<boolean> {
    if (this.driver.busy(executionId)) return false;
    const nodes = await this.store.listNodes(executionId);
    return nodes.every((node) => node.status !== "RUNNING" && node.status !== "QUEUED");
  }

  private async read(executionId: string): Promise<ExecutionRecord> {
    const execution = await this.store.getExecution(executionId);
    if (!execution) throw new Error(`execution ${executionId} does not exist in this test runtime`);
    return execution;
  }
}

/** External worker nodes need a worker polling for them, which a test runtime does not have. */
function refuseExternalNodes(definition: WorkflowDefinition): void {
  const parsed = workflowDefinitionSchema.safeParse(definition);
  // An invalid definition is left to the engine's validation, which lists every problem.
  if (!parsed.success) return;
  const external = parsed.data.nodes.filter((node) => node.runsOn !== undefined).map((node) => node.id);
  if (external.length > 0)
    throw new Error(
      `the test runtime cannot run nodes on external workers (runsOn): ${external.map((id) => `"${id}"`).join(", ")}`,
    );
}

function callbackFailure(error: CallbackError): TaskErrorReport {
  return {
    name: error.name ?? "CallbackFailed",
    message: error.message,
    ...(error.retryable === undefined ? {} : { retryable: error.retryable }),
  };
}
