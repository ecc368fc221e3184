/**
 * External workers and callbacks in a simulated world (a draw of their own: `WorldOptions.externals`).
 *
 * The fleet: one to four workers (`xw0`…), each in a pool ("p0", "p1") with executors, capabilities,
 * labels and a `maxParallel`. Some nodes of the world's workflows (only types a worker can run:
 * pass, fail, sleep, noop) get a `runsOn` that one of the workers satisfies — its pool, some of its
 * executors, capabilities and labels, now and then a list of allowed workers naming it or of
 * forbidden ones leaving it out, a `maxParallelPerWorker` of 1 or 2 — and a `heartbeatSeconds` of a
 * few seconds; some others become `callback` nodes (a timeout of seconds, a heartbeat in some).
 * Every worker comes back after whatever befalls it, so every placement is eventually served.
 *
 * A worker runs in sessions, woken while its pool holds offers: a session registers the worker
 * when it does not know itself registered (first, after a crash, after it deregistered), then runs
 * slots — `maxParallel` of them, one more in a greedy session, so the engine's limits are what
 * holds them — each polling (`pollTask`, waits of 0–2 s), running the task with the built-in
 * handler of its type (the same task files as the Lambda worker's: createTaskRegistry, watched),
 * heartbeating it, and reporting it (`completeTask` / `failTask`). A session heartbeats its
 * registration too, and stops the tasks the answers name. Its processes are one machine: they die
 * together (`Scheduler` groups).
 *
 * Faults: a worker dies before, while or after running a task (never deregistering: its leases
 * expire, the sweeper recovers them, and it registers again under its id); it stalls before its
 * report for longer than its lease and a sweep (a zombie, whose report must be refused); its
 * heartbeats come late (up to two and a half times the node's interval, past the lease); it reports
 * after its heartbeat was refused (a stale token); it deregisters at the end of a session, or in the
 * middle of one, giving up what it holds. The scheduler's own crashes and stalls apply to its
 * processes as to any.
 *
 * The settler: for each callback attempt the audit sees waiting, a client reads its token from
 * `describeExecution` and, after a delay, completes it (with an output it records), fails it
 * (retryable or not), or lets it time out; heartbeats it when its node asks for heartbeats (or
 * forgets to); and sometimes settles it a second time, which must be refused. Each call carries an
 * actor (audit-store.ts): the checker ties every write to the call and token that made it.
 */
import { type AttemptToken, decodeAttemptToken, encodeAttemptToken } from "../shared/domain/attempt-token.js";
import type { NodeDefinition, WorkflowDefinition } from "../shared/domain/definition.js";
import { hasCode } from "../shared/domain/errors.js";
import type { RunsOn } from "../shared/domain/placement.js";
import * as z from "../shared/domain/zod.js";
import type { Engine } from "../shared/engine/engine.js";
import type { ExternalTask, TaskErrorReport } from "../shared/engine/external.js";
import type { Clock } from "../shared/ports.js";
import { TerminalError } from "../shared/tasks/errors.js";
import type { TaskRegistry } from "../shared/tasks/task-type.js";
import type { Actor, AuditStore } from "./audit-store.js";
import type { Rng } from "./prng.js";
import type { Scheduler, SimProcess, WorldAction } from "./scheduler.js";
import type { Trace } from "./trace.js";

/** The share of worlds with external workers and callbacks. */
export const EXTERNAL_WORLDS = 0.3;
/** Types a worker can run (checkPlacement: not inline, deferred or composite). */
const RUNNABLE_OUTSIDE = new Set(["pass", "fail", "sleep", "noop"]);
/** Types a node may be turned into a callback from (their outputs are not relied on elsewhere). */
const CALLBACK_FROM = new Set(["pass", "noop", "sleep"]);
const EXECUTORS = ["ffmpeg", "python", "blender"] as const;
const LABELS = ["fast", "eu", "spot"] as const;
const POOLS = ["p0", "p1"] as const;

export interface WorkerSpec {
  workerId: string;
  pool: string;
  executors: string[];
  capabilities: Record<string, string>;
  labels: string[];
  maxParallel: number;
}

/** The world's workers and the rates of their faults. */
export interface Fleet {
  workers: WorkerSpec[];
  /** Share of eligible nodes placed on workers, and made callbacks. */
  placed: number;
  callbacks: number;
  /** Per task: the worker dies (before, while or after running it). */
  crash: number;
  /** Per task: it stalls before its report past its lease (a zombie). */
  zombie: number;
  /** Per task: its heartbeats come late (past its lease now and then). */
  slowBeats: number;
  /** Per task whose heartbeat was refused: it reports all the same (a stale token). */
  staleReport: number;
  /** Per session: it deregisters at its end (or, a fifth of those, in the middle). */
  deregister: number;
  /** Per session: one slot more than maxParallel. */
  greedy: number;
}

export function drawFleet(rng: Rng): Fleet {
  const count = rng.int(1, 4);
  const workers = Array.from({ length: count }, (_, i): WorkerSpec => {
    const capabilities: Record<string, string> = { arch: rng.pick(["arm", "x86"]) };
    if (rng.chance(0.5)) capabilities.gpu = rng.pick(["none", "a10"]);
    return {
      workerId: `xw${i}`,
      pool: i === 0 ? "p0" : rng.pick([...POOLS, "p0"]),
      executors: EXECUTORS.filter(() => rng.chance(0.6)),
      capabilities,
      labels: LABELS.filter(() => rng.chance(0.5)),
      maxParallel: rng.int(1, 3),
    };
  });
  const level = rng.pick([0, 1, 1, 2]);
  const rate = (low: number, high: number) => (level === 0 ? 0 : rng.pick([low, high]) * level);
  return {
    workers,
    placed: rng.pick([0.4, 0.6, 0.9]),
    callbacks: rng.pick([0.15, 0.3, 0.5]),
    crash: rate(0.03, 0.08),
    zombie: rate(0.05, 0.12),
    slowBeats: rate(0.1, 0.25),
    staleReport: rng.pick([0, 0.5, 1]),
    deregister: rate(0.05, 0.12),
    greedy: rng.pick([0, 0.3, 0.6]),
  };
}

function subset<T>(rng: Rng, items: readonly T[], p: number): T[] {
  return items.filter(() => rng.chance(p));
}

/** A placement `target` satisfies (and, by chance, others of the fleet). */
function runsOnFor(rng: Rng, target: WorkerSpec, fleet: Fleet): RunsOn {
  const others = fleet.workers.filter((w) => w.workerId !== target.workerId).map((w) => w.workerId);
  const runsOn: RunsOn = { pool: target.pool };
  if (rng.chance(0.5)) {
    const executors = subset(rng, target.executors, 0.6);
    if (executors.length > 0) runsOn.executors = executors;
  }
  if (rng.chance(0.5)) {
    const capabilities = Object.fromEntries(subset(rng, Object.entries(target.capabilities), 0.6));
    if (Object.keys(capabilities).length > 0) runsOn.capabilities = capabilities;
  }
  if (rng.chance(0.4)) {
    const labels = subset(rng, target.labels, 0.6);
    if (labels.length > 0) runsOn.labels = labels;
  }
  if (rng.chance(0.15)) runsOn.allowedWorkers = [target.workerId, ...subset(rng, others, 0.5)];
  if (rng.chance(0.2)) {
    const forbidden = subset(rng, others, 0.6);
    if (forbidden.length > 0) runsOn.forbiddenWorkers = forbidden;
  }
  if (rng.chance(0.5)) runsOn.maxParallelPerWorker = rng.int(1, 2);
  return runsOn;
}

/**
 * The definition with some nodes placed on the fleet's workers and some made callbacks. Ids stay
 * (expressions and dependencies name them).
 */
export function placeExternals(definition: WorkflowDefinition, rng: Rng, fleet: Fleet): WorkflowDefinition {
  const nodes = definition.nodes.map((node): NodeDefinition => {
    if (RUNNABLE_OUTSIDE.has(node.type) && rng.chance(fleet.placed))
      return {
        ...node,
        runsOn: runsOnFor(rng, rng.pick(fleet.workers), fleet),
        heartbeatSeconds: rng.int(2, 5),
      };
    if (CALLBACK_FROM.has(node.type) && rng.chance(fleet.callbacks)) {
      const timeoutSeconds = rng.int(4, 40);
      const { params: _replaced, ...rest } = node;
      return {
        ...rest,
        type: "callback",
        params: {
          timeoutSeconds,
          ...(rng.chance(0.3) && timeoutSeconds > 3 ? { heartbeatSeconds: rng.int(2, 5) } : {}),
        },
      };
    }
    return node;
  });
  return { ...definition, nodes };
}

/** A worker's report of a task, as it heard the answer. */
export interface Report {
  workerId: string;
  token: AttemptToken;
  kind: "complete" | "fail";
  /** "error": a transient fault (it may have taken effect); "none": the worker died in the call. */
  answer: "ok" | "conflict" | "error" | "none";
  /** It stalled past its lease before reporting. */
  zombie: boolean;
  /** Its heartbeat had been refused (or it was told the task was no longer its). */
  afterLost: boolean;
  callId: number;
}

/** A settler's call on a callback, as it heard the answer. */
export interface Settlement {
  executionId: string;
  nodeId: string;
  attempt: number;
  token: AttemptToken;
  kind: "complete" | "fail" | "heartbeat";
  output?: unknown;
  error?: TaskErrorReport;
  /** "error": a transient fault (it may have taken effect); "none": the settler died in the call. */
  answer: "ok" | "conflict" | "error" | "none";
  /** A settlement after one already made for this attempt (it must be refused). */
  second: boolean;
  callId: number;
}

export interface ExternalFacts {
  fleet: Fleet;
  reports: Report[];
  settlements: Settlement[];
}

export interface ExternalsContext {
  fleet: Fleet;
  scheduler: Scheduler;
  clock: Clock;
  trace: Trace;
  rng: Rng;
  engines: readonly Engine[];
  /** The world's (watched) task registry: the same handlers the Lambda worker runs. */
  tasks: TaskRegistry;
  audit: AuditStore;
  /** The actor of each running process's current call (read by the audit store). */
  actors: Map<number, Actor>;
  /** The api function's timeout (profile.ts apiTimeoutMs): a settling call is killed then. */
  apiTimeoutMs: number;
  /** How long a zombie stalls, given the task's lease: past it and past a sweep. */
  zombieMs: (leaseMs: number) => number;
  /** The callback params of each workflow's callback nodes, by `<workflow>/<node>`. */
  callbackParams: ReadonlyMap<string, { timeoutSeconds: number; heartbeatSeconds?: number }>;
  /** The workflow of an execution, by its id (undefined: not created yet). */
  workflowOf: (executionId: string) => string | undefined;
  /** True once every execution ended: no new session or settlement starts. */
  done: () => boolean;
}

interface SimWorker {
  spec: WorkerSpec;
  rng: Rng;
  /** What the worker believes (lost when it dies). */
  registered: boolean;
  /** It died since it last registered: its next registration is a re-registration. */
  died: boolean;
  session?: Session;
  sessions: number;
  nextAt: number;
  backoffMs: number;
  /** Tasks its slots run now, by token: a stop request its slot picks up (at its next beat). */
  running: Map<string, { stop?: "cancel" | "lost" }>;
}

interface Session {
  main: SimProcess;
  group: string;
  slotsLeft: number;
  took: number;
}

interface CallbackPlan {
  executionId: string;
  nodeId: string;
  attempt: number;
  /** The calls still to make, each at its time. */
  ops: Array<{ at: number; kind: "heartbeat" | "complete" | "fail"; second?: boolean; tries?: number }>;
  proc?: SimProcess;
}

const initialBackoffMs = 500;
const maxBackoffMs = 30_000;

/** The fleet and the settler of one world. */
export class Externals {
  readonly stats = {
    externalWorkers: 0,
    sessions: 0,
    greedySessions: 0,
    externalTasks: 0,
    externalCrashes: 0,
    reRegistrations: 0,
    deregistrations: 0,
    zombies: 0,
    zombieReportsRefused: 0,
    zombieReportsAccepted: 0,
    staleReportsRefused: 0,
    reportsAccepted: 0,
    heartbeatsRefused: 0,
    slowHeartbeats: 0,
    tasksStopped: 0,
    settlements: 0,
    secondSettlementsRefused: 0,
    lateSettlementsRefused: 0,
    callbackHeartbeats: 0,
  };
  readonly reports: Report[] = [];
  readonly settlements: Settlement[] = [];
  private readonly workers: SimWorker[];
  private readonly plans = new Map<string, CallbackPlan>();
  private callIds = 0;

  constructor(private readonly ctx: ExternalsContext) {
    this.workers = ctx.fleet.workers.map((spec) => ({
      spec,
      rng: ctx.rng.fork(spec.workerId),
      registered: false,
      died: false,
      sessions: 0,
      nextAt: 0,
      backoffMs: initialBackoffMs,
      running: new Map(),
    }));
    this.stats.externalWorkers = this.workers.length;
  }

  facts(): ExternalFacts {
    return { fleet: this.ctx.fleet, reports: this.reports, settlements: this.settlements };
  }

  // ── the world's side ─────────────────────────────────────────────────────────────────────────

  actions(now: number): WorldAction[] {
    const actions: WorldAction[] = [];
    for (const w of this.workers) {
      const session = w.session;
      if (session) {
        if (session.main.state === "crashed") {
          // The machine died (the scheduler's crash, or its own): it forgets it was registered.
          w.session = undefined;
          w.registered = false;
          w.died = true;
          w.running.clear();
          this.stats.externalCrashes++;
          w.nextAt = now + w.rng.int(500, 20_000);
        } else if (session.main.state === "done") {
          w.session = undefined;
          w.backoffMs = session.took > 0 ? initialBackoffMs : Math.min(maxBackoffMs, w.backoffMs * 2);
          w.nextAt = now + w.backoffMs;
        }
      }
      if (w.session || now < w.nextAt || this.ctx.done()) continue;
      if (this.ctx.audit.offersIn(w.spec.pool) === 0) continue;
      actions.push({ label: `external ${w.spec.workerId} wakes`, run: () => this.startSession(w) });
    }
    if (!this.ctx.done()) {
      for (const [key, attempt] of this.ctx.audit.waitingCallbacks) {
        const planKey = `${key}#${attempt}`;
        if (!this.plans.has(planKey)) this.plans.set(planKey, this.planCallback(key, attempt, now));
      }
      for (const [planKey, plan] of this.plans) {
        if (plan.proc) {
          if (plan.proc.state === "live") continue;
          plan.proc = undefined;
        }
        const op = plan.ops[0];
        if (!op || op.at > now) continue;
        actions.push({ label: `settler ${planKey} ${op.kind}`, run: () => this.settle(plan) });
      }
    }
    return actions;
  }

  nextTime(now: number): number[] {
    if (this.ctx.done()) return [];
    const times: number[] = [];
    for (const w of this.workers)
      if (!w.session && w.nextAt > now && this.ctx.audit.offersIn(w.spec.pool) > 0) times.push(w.nextAt);
    for (const plan of this.plans.values()) {
      const at = plan.ops[0]?.at;
      if (!plan.proc && at !== undefined && at > now) times.push(at);
    }
    return times;
  }

  // ── a worker's session ───────────────────────────────────────────────────────────────────────

  private engine(rng: Rng): Engine {
    return rng.pick(this.ctx.engines);
  }

  /**
   * Runs `call` as the running process's actor: the audit names it on every write it makes. Its
   * callId is `actor.callId` when given (to record beside its answer), else a new one.
   */
  private async as<T>(
    actor: Omit<Actor, "callId"> & { callId?: number },
    call: () => Promise<T>,
  ): Promise<T> {
    const proc = this.ctx.scheduler.running;
    const callId = actor.callId ?? ++this.callIds;
    if (proc) this.ctx.actors.set(proc.id, { ...actor, callId });
    try {
      return await call();
    } finally {
      if (proc) this.ctx.actors.delete(proc.id);
    }
  }

  private newCallId(): number {
    return ++this.callIds;
  }

  /** Kills the worker's machine (every process of its session); never returns. */
  private die(w: SimWorker, session: Session, why: string): Promise<never> {
    this.ctx.scheduler.crashGroup(session.group, `${w.spec.workerId} ${why}`);
    return new Promise<never>(() => {});
  }

  private startSession(w: SimWorker): void {
    const { scheduler, fleet, trace } = this.ctx;
    const n = ++w.sessions;
    this.stats.sessions++;
    const group = `${w.spec.workerId}/s${n}`;
    const greedy = w.rng.chance(fleet.greedy);
    if (greedy) this.stats.greedySessions++;
    const slots = w.spec.maxParallel + (greedy ? 1 : 0);
    const beatMs = w.rng.pick([2_000, 5_000, 15_000]);
    const deregister = w.rng.chance(fleet.deregister);
    const midway = deregister && w.rng.chance(0.2);
    const engine = this.engine(w.rng);
    const session: Session = {
      main: undefined as unknown as SimProcess,
      group,
      slotsLeft: slots,
      took: 0,
    };
    w.session = session;
    session.main = scheduler.spawn(
      "external",
      `${w.spec.workerId} session ${n}`,
      async () => {
        const id = w.spec.workerId;
        if (!w.registered) {
          try {
            await this.as({ who: id, call: "register" }, () => engine.registerWorker({ ...w.spec }));
          } catch {
            return; // a transient fault: it tries again at its next wake
          }
          w.registered = true;
          if (w.died) this.stats.reRegistrations++;
          w.died = false;
        }
        for (let i = 0; i < slots; i++)
          scheduler.spawn(
            "external",
            `${id} slot ${n}.${i}`,
            async () => {
              try {
                await this.slot(w, session, engine);
              } finally {
                session.slotsLeft--;
              }
            },
            { group },
          );
        // The registration's heartbeats while the slots run (a stop it answers reaches its slot at
        // that slot's next beat: processes only signal each other through state).
        let beats = 0;
        while (session.slotsLeft > 0) {
          await this.ctx.clock.sleep(beatMs);
          if (session.slotsLeft === 0) break;
          beats++;
          if (midway && beats === 1 && w.registered) {
            await this.deregister(w, engine, "in the middle of its session");
            continue;
          }
          if (!w.registered) continue;
          try {
            const { cancellations } = await this.as({ who: id, call: "worker-heartbeat" }, () =>
              engine.workerHeartbeat(id),
            );
            for (const c of cancellations) {
              const task = w.running.get(c.taskToken);
              if (task) task.stop ??= /cancellation was requested/.test(c.reason) ? "cancel" : "lost";
            }
          } catch (error) {
            if (hasCode(error, "NotFound")) w.registered = false;
          }
        }
        if (deregister && !midway && w.registered)
          await this.deregister(w, engine, "at the end of its session");
        trace.add(`@${scheduler.now} ${id} session ${n} ends (${session.took} task(s))`);
      },
      { group },
    );
  }

  private async deregister(w: SimWorker, engine: Engine, when: string): Promise<void> {
    const id = w.spec.workerId;
    try {
      const { released } = await this.as({ who: id, call: "deregister" }, () => engine.deregisterWorker(id));
      this.ctx.trace.add(`@${this.ctx.scheduler.now} ${id} deregistered ${when}, giving up ${released}`);
      this.stats.deregistrations++;
      w.registered = false;
    } catch (error) {
      if (hasCode(error, "NotFound")) w.registered = false;
    }
  }

  /** One slot: polls and runs tasks, one at a time, until a poll brings none (or its budget). */
  private async slot(w: SimWorker, session: Session, engine: Engine): Promise<void> {
    const id = w.spec.workerId;
    const budget = w.rng.int(2, 6);
    for (let n = 0; n < budget; n++) {
      if (!w.registered) return;
      let task: ExternalTask | undefined;
      try {
        const waitSeconds = w.rng.int(0, 2);
        task = await this.as({ who: id, call: "poll" }, () => engine.pollTask(id, { waitSeconds }));
      } catch (error) {
        if (hasCode(error, "NotFound")) w.registered = false;
        return;
      }
      if (!task) return;
      session.took++;
      this.stats.externalTasks++;
      await this.run(w, session, task, engine);
    }
  }

  /** Runs one task as a real worker does: the handler, its heartbeats, its report. */
  private async run(w: SimWorker, session: Session, task: ExternalTask, engine: Engine): Promise<void> {
    const { clock, fleet, scheduler, trace } = this.ctx;
    const id = w.spec.workerId;
    const token = decodeAttemptToken(task.taskToken);
    if (!token) throw new Error(`external ${id}: a task token that does not decode`);
    const where = `${task.executionId}/${task.nodeId}#${task.attempt}`;
    const dies = w.rng.chance(fleet.crash) ? w.rng.pick(["before", "while", "after"] as const) : undefined;
    if (dies === "before") await this.die(w, session, `dies before running ${where}`);
    const heartbeatMs = task.heartbeatSeconds * 1000;
    const slow = w.rng.chance(fleet.slowBeats);
    if (slow) this.stats.slowHeartbeats++;
    const beatEvery = Math.round(
      heartbeatMs * (slow ? w.rng.pick([1.5, 2.2, 2.5]) : w.rng.pick([0.5, 0.8, 1])),
    );
    const state: { stop?: "cancel" | "lost" } = {};
    w.running.set(task.taskToken, state);
    const controller = new AbortController();
    const beatsOver = new AbortController();
    // Heartbeats, in the slot's own process: a stop (the task's answer, or the registration's
    // relayed through `state`) aborts the handler here.
    const beats = (async () => {
      for (;;) {
        try {
          await clock.sleep(beatEvery, beatsOver.signal);
        } catch {
          return;
        }
        if (dies === "while") await this.die(w, session, `dies while running ${where}`);
        if (state.stop) {
          controller.abort();
          return;
        }
        try {
          const { cancelRequested } = await this.as({ who: id, call: "heartbeat", token }, () =>
            engine.heartbeatTask(task.taskToken),
          );
          if (cancelRequested) state.stop ??= "cancel";
        } catch (error) {
          if (hasCode(error, "Conflict")) {
            this.stats.heartbeatsRefused++;
            state.stop ??= "lost";
          }
        }
        if (state.stop) {
          controller.abort();
          return;
        }
      }
    })();
    const handler = this.ctx.tasks.get(task.type);
    let outcome: { output: unknown } | { error: unknown };
    try {
      if (!handler) throw new TerminalError(`no handler for task type "${task.type}" on this worker`);
      // No params travel as null; a handler's schema takes them as absent.
      const params = z.ownParse(handler.params, task.params === null ? undefined : task.params);
      const deadline = Date.parse(task.deadline);
      const output = await handler.run({
        input: task.input,
        params,
        deps: task.deps,
        context: {
          executionId: task.executionId,
          nodeId: task.nodeId,
          attempt: task.attempt,
          idempotencyKey: task.idempotencyKey,
          signal: controller.signal,
          deadline,
          sleep: (ms) => clock.sleep(ms, controller.signal),
          now: () => clock.now(),
        },
      });
      outcome = { output: output ?? null };
    } catch (error) {
      outcome = { error };
    }
    beatsOver.abort();
    await beats;
    w.running.delete(task.taskToken);
    if (dies === "after") await this.die(w, session, `dies after running ${where}`);
    if (state.stop === "cancel") this.stats.tasksStopped++;
    // Told the task is no longer its: most workers drop it; some report all the same.
    const afterLost = state.stop === "lost";
    if (afterLost && !w.rng.chance(fleet.staleReport)) return;
    const zombie = w.rng.chance(fleet.zombie);
    if (zombie) {
      this.stats.zombies++;
      const ms = this.ctx.zombieMs(2 * heartbeatMs);
      trace.add(`@${scheduler.now} ${id} stalls ${ms} ms before reporting ${where} (a zombie)`);
      await clock.sleep(ms);
    }
    const kind = "output" in outcome ? "complete" : "fail";
    for (let tries = 0; ; tries++) {
      // Recorded before the call: a worker that dies in it never hears its answer ("none").
      const report: Report = {
        workerId: id,
        token,
        kind,
        answer: "none",
        zombie,
        afterLost,
        callId: this.newCallId(),
      };
      this.reports.push(report);
      try {
        await this.as({ who: id, call: kind, token, callId: report.callId }, () =>
          "output" in outcome
            ? engine.completeTask(task.taskToken, outcome.output)
            : engine.failTask(task.taskToken, errorReport(outcome.error, state.stop === "cancel")),
        );
        report.answer = "ok";
      } catch (error) {
        report.answer = hasCode(error, "Conflict") ? "conflict" : "error";
      }
      if (report.answer === "ok") {
        this.stats.reportsAccepted++;
        if (zombie) this.stats.zombieReportsAccepted++;
      }
      if (report.answer === "conflict") {
        this.stats.staleReportsRefused++;
        if (zombie) this.stats.zombieReportsRefused++;
      }
      // A transient fault: it tries again (a refusal then may mean the first got through).
      if (report.answer !== "error" || tries >= 2) return;
      await clock.sleep(w.rng.int(100, 2_000));
    }
  }

  // ── the callbacks' settler ───────────────────────────────────────────────────────────────────

  /** What the settler will do with a callback attempt it saw waiting: its calls and their times. */
  private planCallback(key: string, attempt: number, now: number): CallbackPlan {
    const rng = this.ctx.rng;
    const slash = key.indexOf("/");
    const executionId = key.slice(0, slash);
    const nodeId = key.slice(slash + 1);
    const params = this.ctx.callbackParams.get(`${this.ctx.workflowOf(executionId)}/${nodeId}`) ?? {
      timeoutSeconds: 30,
    };
    const timeoutMs = params.timeoutSeconds * 1000;
    const heartbeatMs = params.heartbeatSeconds === undefined ? undefined : params.heartbeatSeconds * 1000;
    const plan: CallbackPlan = { executionId, nodeId, attempt, ops: [] };
    const draw = rng.next();
    const decision = draw < 0.55 ? "complete" : draw < 0.72 ? "fail" : "ignore";
    // Heartbeats let a settlement come later than one interval; a settler that forgets them lets
    // the callback time out at its first missed heartbeat.
    const beats = heartbeatMs !== undefined && rng.chance(0.8);
    const latest =
      heartbeatMs === undefined
        ? timeoutMs * 1.2
        : beats
          ? Math.min(timeoutMs * 1.2, heartbeatMs * 4)
          : heartbeatMs * 1.3;
    const settleAt = now + rng.int(0, Math.round(latest));
    if (beats && heartbeatMs !== undefined)
      for (let at = now + Math.round(heartbeatMs * 0.6); at < settleAt; at += Math.round(heartbeatMs * 0.6))
        plan.ops.push({ at, kind: "heartbeat" });
    if (decision !== "ignore") {
      plan.ops.push({ at: settleAt, kind: decision });
      if (rng.chance(0.25))
        plan.ops.push({
          at: settleAt + rng.int(0, 3_000),
          kind: rng.pick(["complete", "fail"]),
          second: true,
        });
    }
    return plan;
  }

  /**
   * The settler's next call on a callback: the token read from the execution's view (once: a
   * client keeps it), then a heartbeat, a completion or a failure with it.
   */
  private settle(plan: CallbackPlan): void {
    const { scheduler, rng } = this.ctx;
    const op = plan.ops[0]!;
    const engine = this.engine(rng);
    const where = `${plan.executionId}/${plan.nodeId}#${plan.attempt}`;
    plan.proc = scheduler.spawn("api", `settle ${where} ${op.kind}${op.second ? " again" : ""}`, async () => {
      let token = this.tokens.get(where);
      if (!token) {
        let text: string | undefined;
        try {
          const view = await this.as({ who: "settler", call: "describe" }, () =>
            engine.describeExecution(plan.executionId),
          );
          text = view.nodes.find((n) => n.id === plan.nodeId)?.callbackToken;
        } catch {
          this.retryOp(plan);
          return;
        }
        const read = text === undefined ? undefined : decodeAttemptToken(text);
        if (!read || read.attempt !== plan.attempt) {
          // No longer waiting (or waiting in a later attempt, which has a plan of its own).
          plan.ops = [];
          return;
        }
        token = read;
        this.tokens.set(where, token);
      }
      await this.call(plan, op, token, engine);
    });
    plan.proc.killAt = scheduler.now + this.ctx.apiTimeoutMs;
  }

  /** Tokens the settler read, by `<execution>/<node>#<attempt>`. */
  private readonly tokens = new Map<string, AttemptToken>();

  private async call(
    plan: CallbackPlan,
    op: CallbackPlan["ops"][number],
    token: AttemptToken,
    engine: Engine,
  ): Promise<void> {
    const rng = this.ctx.rng;
    const text = encodeAttemptToken(token);
    const output =
      op.kind === "complete"
        ? {
            settledBy: "settler",
            attempt: plan.attempt,
            n: rng.int(0, 999),
            ...(op.second ? { again: true } : {}),
          }
        : undefined;
    const error: TaskErrorReport | undefined =
      op.kind === "fail"
        ? {
            name: rng.pick(["Rejected", "Declined"]),
            message: `the settler says no (${plan.nodeId})`,
            retryable: rng.chance(0.5),
          }
        : undefined;
    const call: Actor["call"] =
      op.kind === "complete"
        ? "callback-complete"
        : op.kind === "fail"
          ? "callback-fail"
          : "callback-heartbeat";
    // Settled already: a settlement of this attempt that was not refused (or whose answer was lost).
    const settled = this.settlements.some(
      (s) =>
        s.executionId === plan.executionId &&
        s.nodeId === plan.nodeId &&
        s.attempt === plan.attempt &&
        s.kind !== "heartbeat" &&
        s.answer !== "conflict",
    );
    // Recorded before the call: what the settler sent is a fact even if it never hears the answer.
    const settlement: Settlement = {
      executionId: plan.executionId,
      nodeId: plan.nodeId,
      attempt: plan.attempt,
      token,
      kind: op.kind,
      ...(output !== undefined ? { output } : {}),
      ...(error !== undefined ? { error } : {}),
      answer: "none",
      second: op.kind !== "heartbeat" && settled,
      callId: this.newCallId(),
    };
    this.settlements.push(settlement);
    try {
      await this.as({ who: "settler", call, token, callId: settlement.callId }, () =>
        op.kind === "complete"
          ? engine.completeCallback(text, output)
          : op.kind === "fail"
            ? engine.failCallback(text, error!)
            : engine.heartbeatCallback(text),
      );
      settlement.answer = "ok";
    } catch (e) {
      settlement.answer = hasCode(e, "Conflict") ? "conflict" : "error";
    }
    const answer = settlement.answer;
    if (op.kind === "heartbeat") this.stats.callbackHeartbeats++;
    else this.stats.settlements++;
    if (answer === "conflict" && op.kind !== "heartbeat") {
      if (settled) this.stats.secondSettlementsRefused++;
      else this.stats.lateSettlementsRefused++;
    }
    if (answer === "error" && (op.tries ?? 0) < 2) {
      this.retryOp(plan);
      return;
    }
    plan.ops.shift();
    // Refused: the attempt is over (timed out, cancelled) or settled already; nothing more to send,
    // but a second settlement after a first that was answered.
    if (answer === "conflict") plan.ops = op.second ? [] : plan.ops.filter((o) => o.second && settled);
  }

  /** A transient fault: the same call again in a moment. */
  private retryOp(plan: CallbackPlan): void {
    const op = plan.ops[0];
    if (!op) return;
    op.tries = (op.tries ?? 0) + 1;
    if (op.tries > 3) {
      plan.ops.shift();
      return;
    }
    op.at = this.ctx.scheduler.now + this.ctx.rng.int(500, 3_000);
  }
}

/** What a worker reports for a handler's error: its name and message; retryable unless terminal. */
function errorReport(error: unknown, stopped: boolean): TaskErrorReport {
  if (stopped) return { name: "Stopped", message: "stopped: cancellation was requested", retryable: true };
  const e = error instanceof Error ? error : new Error(String(error));
  const terminal = e instanceof TerminalError || (e as { terminal?: unknown }).terminal === true;
  return { name: e.name, message: e.message, retryable: !terminal };
}
