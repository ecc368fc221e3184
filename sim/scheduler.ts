/**
 * The deterministic scheduler. A simulated world runs many concurrent processes (worker
 * invocations, sweeper runs, API calls) on one set of adapters; every port call the engine makes
 * first awaits a gate here, and every sleep is a virtual timer. Each step the scheduler picks, from
 * its seeded stream, one thing to let go — a gate, a due timer, or a world action (a message
 * received, a sweeper tick, an API call) — then lets the microtask queue drain before the next, so
 * only one process runs between yield points and a run is a pure function of the seed.
 *
 * Faults live here too: a process may be crashed at any step (its continuation is dropped forever)
 * or stalled (it stops in virtual time while the world goes on, so its lease can expire: a zombie).
 * Virtual time advances only when nothing can run (to the next timer, visibility or tick) or by a
 * random small step.
 */
import type { Rng } from "./prng.js";
import type { Trace } from "./trace.js";

/** "external": an external worker's process (sim/externals.ts), outside the engine's Lambdas. */
export type ProcessKind = "worker" | "sweeper" | "api" | "dlq" | "external";

export interface SimProcess {
  readonly id: number;
  readonly kind: ProcessKind;
  readonly label: string;
  state: "live" | "crashed" | "done";
  /** While later than now, none of its gates or timers may run. */
  stalledUntil: number;
  /**
   * Lambda's function timeout: the process is killed at its first step at or after this time (a
   * worker invocation, with its whole batch). Unset: never.
   */
  killAt?: number;
  /** Its stalls, [from, until], in virtual time. */
  stalls: Array<[number, number]>;
  /**
   * Processes of one group die together: a crash of any of them kills them all (an external
   * worker's processes are one machine's). Unset: it dies alone.
   */
  group?: string;
  error?: unknown;
}

interface Gate {
  seq: number;
  proc: SimProcess;
  label: string;
  resolve: () => void;
}

interface Timer {
  seq: number;
  proc: SimProcess;
  at: number;
  resolve: () => void;
  detach?: () => void;
}

export interface WorldAction {
  label: string;
  run: () => void;
}

/** What the world (queues, clients, the sweeper schedule) offers the scheduler. */
export interface WorldSource {
  /** Things that may happen now, in a stable order. */
  actions(now: number): WorldAction[];
  /** The earliest later time at which the world has something to do. */
  nextTime(now: number): number | undefined;
  /** True when there is nothing left to do: the run ends. */
  finished(): boolean;
}

export interface SchedulerFaults {
  /** Chance, per step of a process, that it is killed there. */
  crash: number;
  /** Chance, per step of a process, that it stalls there for `stallMs()` of virtual time. */
  stall: number;
  stallMs: () => number;
  /** Chance, per step, that virtual time moves on by `tickMs()` instead. */
  tick: number;
  tickMs: () => number;
}

export interface RunLimits {
  maxSteps: number;
  maxTime: number;
}

export type RunEnd = "finished" | "idle" | "maxSteps" | "maxTime";

export interface SchedulerStats {
  steps: number;
  processes: number;
  crashes: number;
  /** Processes killed at their `killAt` (a Lambda invocation at its function timeout). */
  kills: number;
  stalls: number;
  ticks: number;
}

export class AbortError extends Error {
  constructor(readonly reason?: unknown) {
    super("aborted");
    this.name = "AbortError";
  }
}

const drain = () => new Promise<void>((resolve) => setImmediate(resolve));

export class Scheduler {
  now = 0;
  /** False while the world is being set up: gates open at once. */
  active = false;
  readonly stats: SchedulerStats = { steps: 0, processes: 0, crashes: 0, kills: 0, stalls: 0, ticks: 0 };
  private current: SimProcess | undefined;
  private seq = 0;
  private readonly gates = new Map<number, Gate>();
  private readonly timers = new Map<number, Timer>();
  private readonly processes: SimProcess[] = [];

  constructor(
    private readonly rng: Rng,
    private readonly faults: SchedulerFaults,
    private readonly trace: Trace,
  ) {}

  /** The process whose code is running (the one let go by the current step). */
  get running(): SimProcess | undefined {
    return this.current;
  }

  liveProcesses(kind?: ProcessKind): number {
    return this.processes.filter((p) => p.state === "live" && (kind === undefined || p.kind === kind)).length;
  }

  /** True while some process still has a gate or a timer (crashed ones have none). */
  hasPendingWork(): boolean {
    return this.gates.size > 0 || this.timers.size > 0;
  }

  /** Starts a process: its body runs at once, up to its first yield point. */
  spawn(
    kind: ProcessKind,
    label: string,
    body: () => Promise<void>,
    options: { group?: string } = {},
  ): SimProcess {
    const proc: SimProcess = {
      id: ++this.stats.processes,
      kind,
      label,
      state: "live",
      stalledUntil: 0,
      stalls: [],
      ...(options.group !== undefined ? { group: options.group } : {}),
    };
    this.processes.push(proc);
    const previous = this.current;
    this.current = proc;
    this.trace.add(`${this.stats.steps} @${this.now} spawn p${proc.id} ${kind} ${label}`);
    try {
      body().then(
        () => this.settle(proc),
        (error: unknown) => this.settle(proc, error),
      );
    } finally {
      this.current = previous;
    }
    return proc;
  }

  /** A yield point: resolves when the scheduler lets the calling process go on. */
  gate(label: string): Promise<void> {
    if (!this.active) return Promise.resolve();
    const proc = this.current;
    if (!proc) throw new Error(`port call outside any simulated process: ${label}`);
    return new Promise<void>((resolve) => {
      const seq = ++this.seq;
      this.gates.set(seq, { seq, proc, label, resolve });
    });
  }

  /** A virtual timer for the Clock port; rejects with an AbortError when `signal` fires. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(new AbortError(signal.reason));
    const proc = this.current;
    if (!proc) throw new Error("clock.sleep outside any simulated process");
    return new Promise<void>((resolve, reject) => {
      const seq = ++this.seq;
      const timer: Timer = { seq, proc, at: this.now + Math.max(0, ms), resolve };
      if (signal) {
        const onAbort = () => {
          this.timers.delete(seq);
          reject(new AbortError(signal.reason));
        };
        signal.addEventListener("abort", onAbort, { once: true });
        timer.detach = () => signal.removeEventListener("abort", onAbort);
      }
      this.timers.set(seq, timer);
    });
  }

  /** Runs the world until it is finished, idle, or out of steps or time. */
  async run(world: WorldSource, limits: RunLimits): Promise<RunEnd> {
    this.active = true;
    try {
      for (;;) {
        if (world.finished()) return "finished";
        if (this.stats.steps >= limits.maxSteps) return "maxSteps";
        const gates = [...this.gates.values()].filter((g) => this.runnable(g.proc));
        const timers = [...this.timers.values()]
          .filter((t) => t.at <= this.now && this.runnable(t.proc))
          .sort((a, b) => a.at - b.at || a.seq - b.seq);
        const actions = world.actions(this.now);
        const total = gates.length + timers.length + actions.length;
        if (total === 0 || this.rng.chance(this.faults.tick)) {
          const next = total === 0 ? this.nextTime(world) : this.now + this.faults.tickMs();
          if (next === undefined) return "idle";
          if (next > limits.maxTime) return "maxTime";
          if (total > 0) this.stats.ticks++;
          this.now = Math.max(this.now, next);
          continue;
        }
        this.stats.steps++;
        const index = Math.floor(this.rng.next() * total);
        if (index < gates.length) await this.step(gates[index]!.proc, gates[index]!);
        else if (index < gates.length + timers.length)
          await this.step(timers[index - gates.length]!.proc, timers[index - gates.length]!);
        else {
          const action = actions[index - gates.length - timers.length]!;
          this.trace.add(`${this.stats.steps} @${this.now} world ${action.label}`);
          this.current = undefined;
          action.run();
          await drain();
          this.current = undefined;
        }
      }
    } finally {
      this.active = false;
    }
  }

  private async step(proc: SimProcess, item: Gate | Timer): Promise<void> {
    const what = "label" in item ? item.label : "timer";
    const where = `${this.stats.steps} @${this.now} p${proc.id}`;
    if (proc.killAt !== undefined && this.now >= proc.killAt) {
      // Past its function timeout: Lambda has killed it. No draw from the stream, so worlds whose
      // processes are never killed run as before.
      this.trace.add(`${where} KILLED at its function timeout (@${proc.killAt}) before ${what}`);
      this.crash(proc);
      this.stats.crashes--;
      this.stats.kills++;
      return;
    }
    if (this.rng.chance(this.faults.crash)) {
      this.trace.add(`${where} CRASH before ${what}`);
      this.crash(proc);
      return;
    }
    if (this.rng.chance(this.faults.stall)) {
      proc.stalledUntil = this.now + this.faults.stallMs();
      proc.stalls.push([this.now, proc.stalledUntil]);
      this.stats.stalls++;
      this.trace.add(`${where} STALL until @${proc.stalledUntil} before ${what}`);
      return;
    }
    this.trace.add(`${where} ${what}`);
    if ("label" in item) this.gates.delete(item.seq);
    else {
      this.timers.delete(item.seq);
      item.detach?.();
    }
    this.current = proc;
    item.resolve();
    await drain();
    this.current = undefined;
  }

  /**
   * Kills every live process of `group` at once (a machine dying), counted as one crash; the
   * caller, when it is one of them, must return without doing anything more.
   */
  crashGroup(group: string, why: string): void {
    const first = this.processes.find((p) => p.group === group && p.state === "live");
    if (!first) return;
    this.trace.add(`${this.stats.steps} @${this.now} p${first.id} CRASH of ${group} (${why})`);
    this.crash(first);
  }

  /**
   * A killed process: its gates and timers are dropped, so its code never runs again; so are
   * those of its group's other live processes.
   */
  private crash(proc: SimProcess): void {
    this.stats.crashes++;
    const dying =
      proc.group === undefined
        ? [proc]
        : this.processes.filter((p) => p === proc || (p.group === proc.group && p.state === "live"));
    for (const p of dying) {
      p.state = "crashed";
      for (const [seq, gate] of this.gates) if (gate.proc === p) this.gates.delete(seq);
      for (const [seq, timer] of this.timers) {
        if (timer.proc === p) {
          timer.detach?.();
          this.timers.delete(seq);
        }
      }
    }
  }

  private settle(proc: SimProcess, error?: unknown): void {
    if (proc.state !== "live") return;
    proc.state = "done";
    if (error !== undefined) proc.error = error;
    this.trace.add(`${this.stats.steps} @${this.now} p${proc.id} ${error === undefined ? "done" : "threw"}`);
  }

  private runnable(proc: SimProcess): boolean {
    return proc.state !== "crashed" && proc.stalledUntil <= this.now;
  }

  private nextTime(world: WorldSource): number | undefined {
    let next = world.nextTime(this.now);
    const consider = (at: number) => {
      if (at > this.now && (next === undefined || at < next)) next = at;
    };
    for (const gate of this.gates.values()) consider(gate.proc.stalledUntil);
    for (const timer of this.timers.values()) consider(Math.max(timer.at, timer.proc.stalledUntil));
    return next;
  }
}
