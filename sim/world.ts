/**
 * One simulated world, built from a seed: random workflows, a few executions created (and maybe
 * triggered, cancelled) by clients that retry and reuse idempotency keys, worker invocations for every delivered message,
 * periodic and random sweeps, a dead-letter consumer — all on one MemoryStore, one MemoryBlobStore
 * (large values, at an inline threshold drawn per world) and one SimQueue,
 * driven by the deterministic scheduler with seeded faults. In a share of the worlds, a fleet of
 * external workers runs the nodes placed on it and a client settles the callback nodes
 * (sim/externals.ts). After the world runs out of work the invariants are checked.
 * `runWorld(seed)` is a pure function of the seed.
 */
import { MemoryBlobStore } from "../shared/adapters/memory/blobs.js";
import { MemoryEventPublisher } from "../shared/adapters/memory/events.js";
import { MemoryStore } from "../shared/adapters/memory/store.js";
import type { WorkflowDefinition } from "../shared/domain/definition.js";
import { hasCode } from "../shared/domain/errors.js";
import { Engine, type EngineOptions } from "../shared/engine/engine.js";
import { loadInThreadExpressions } from "../shared/engine/expressions.js";
import { invocationDeadline, WORKER_TIMEOUT } from "../shared/engine/worker-time.js";
import type { BlobStore, Store, TaskMessage, TaskQueue } from "../shared/ports.js";
import { createTaskRegistry } from "../shared/tasks/builtins.js";
import { type Actor, AuditStore } from "./audit-store.js";
import { FakeClock, SIM_EPOCH } from "./clock.js";
import { childLibrary, fanOutTree, generateWorkflow } from "./dag.js";
import { drawFleet, EXTERNAL_WORLDS, Externals, type Fleet, placeExternals } from "./externals.js";
import { describeBlobCall, describeStoreCall, gatePort, type PortFaults } from "./gated-ports.js";
import { SimIds } from "./ids.js";
import { type CheckResult, checkInvariants, type Violation } from "./invariants.js";
import { LimitWatch, withConcurrencyLimits } from "./limit-invariants.js";
import { STEP_WORKFLOW, stepWorkflow, withLoopNodes } from "./loop-invariants.js";
import { Rng } from "./prng.js";
import { apiTimeoutMs, drawProfile, type Profile } from "./profile.js";
import { withStaleReads } from "./stale-reads.js";
import { checkTimers } from "./timer-invariants.js";
import { drawTimerWorld, farWait, inOutage, timerLateBoundMs, withFarWaits } from "./timer-worlds.js";
import { checkVariables, withIncrNodes } from "./vars-invariants.js";
import { type HandlerRun, watchedTasks } from "./watched-tasks.js";

/**
 * The worker function's timeout, drawn per world from its own stream: the deployed default, or
 * short ones, so that sleeps, continuations, ticks and stalls reach the end of invocations and
 * attempts are cut there (a WorkerTimeout) or, past it, the invocation is killed (as Lambda does).
 */
const WORKER_TIMEOUTS_SECONDS = [300, 60, 20, 12] as const;

import { type RunEnd, Scheduler, type SimProcess, type WorldAction } from "./scheduler.js";
import { type SimMessage, SimQueue } from "./sim-queue.js";
import { Trace } from "./trace.js";

export interface WorldOptions {
  seed: number;
  /** Wraps the store beneath the audit layer: how the checker's tests plant a bug. */
  plant?: (store: Store) => Store;
  /**
   * Wraps the store the engines use, above the audit (over the stale-read replica): a planted bug
   * in the engine's own use of the store — what it reads, the conditions it writes with — which the
   * audit records as the engine's.
   */
  plantEngineStore?: (store: Store, audit: AuditStore) => Store;
  /** Wraps the blob store beneath the gates (the checker reads the store itself): a planted bug. */
  plantBlobs?: (blobs: BlobStore) => BlobStore;
  /** Changes the world's engines' options (not the checker's view of them): a planted bug. */
  plantEngine?: (options: EngineOptions) => EngineOptions;
  /**
   * Changes the deadline the world's worker invocations give the engine (not the one the checker
   * holds their attempts to): a planted bug, as an engine ignoring its invocation's end would be.
   */
  plantInvocationDeadline?: (deadline: number) => number;
  /** Adjusts the drawn profile (e.g. more zombies for a test). */
  adjust?: (profile: Profile) => Profile;
  /** Adjusts the drawn fleet of external workers, in worlds that drew one (e.g. more zombies). */
  adjustFleet?: (fleet: Fleet) => Fleet;
  /** Keep every trace line (for printing), not only the last ones. */
  keepTrace?: boolean;
  /** Called with the world's store once it ran (a debugging aid: print what a seed left). */
  inspect?: (store: Store) => Promise<void>;
  maxSteps?: number;
  /** Virtual time limit in ms. */
  maxTime?: number;
  /**
   * Let an operator redrive dead letters, at the profile's rate (default true). Off replays the
   * worlds of seeds found before redrives were simulated (test/sim/regressions.test.ts).
   */
  redrive?: boolean;
  /**
   * Workflows with `when`, `onError: "continue"` and params expressions in a share of them
   * (default true). Off replays the worlds from before flow control (test/sim/regressions.test.ts).
   */
  flowControl?: boolean;
  /**
   * Catch edges in a share of the workflows with flow control (default true). Off replays the
   * worlds from before catch edges (seeds pinned then: test/sim/flow-control.test.ts, externals).
   */
  catchEdges?: boolean;
  /**
   * Workflows with `map` nodes in a share of them (default true). Off replays the worlds from
   * before maps (test/sim/regressions.test.ts, test/sim/flow-control.test.ts).
   */
  maps?: boolean;
  /**
   * Child workflows (`workflow` nodes, maps over a workflow, a workflow that nests to the depth
   * limit) in a share of the worlds (default true). Off replays the worlds from before children.
   */
  children?: boolean;
  /**
   * External workers and callbacks (sim/externals.ts) in a share of the worlds (default true): nodes
   * placed on a fleet of simulated workers, `callback` nodes and their settler. Off replays the
   * worlds from before them; "always": every world has them (a hunt for their findings — the worlds
   * that draw a fleet anyway keep theirs).
   */
  externals?: boolean | "always";
  /**
   * Fan-out trees (sim/dag.ts fanOutTree) under a small fan-out budget in a share of the worlds
   * (default true; "always": every world). Off replays the worlds from before them.
   */
  fanOut?: boolean | "always";
  /**
   * Timer worlds (sim/timer-worlds.ts) in a share of the worlds (default true): far waits through
   * the due index, a sweeper outage. Off replays the worlds from before them.
   */
  timers?: boolean;
  /**
   * `vars` nodes incrementing one counter in some workflows (sim/vars-invariants.ts): in a share of
   * the worlds when true, in every one with "always". Off by default, so every world (and pinned
   * seed) of before replays as it was; `npm run sim -- --vars` runs them.
   */
  vars?: boolean | "always";
  /**
   * `loop` nodes over a small library workflow in some workflows (sim/loop-invariants.ts): in a
   * share of the worlds when true, in every one with "always". Off by default, so every world (and
   * pinned seed) of before replays as it was; `npm run sim -- --loops` runs them.
   */
  loops?: boolean | "always";
  /**
   * `concurrency` limits on some handler-run nodes (sim/limit-invariants.ts): in a share of the
   * worlds when true, in every one with "always". Off by default, so every world (and pinned seed)
   * of before replays as it was; `npm run sim -- --limits` runs them.
   */
  limits?: boolean | "always";
}

/** The share of worlds (with `vars` on) whose workflows carry incr nodes. */
const VARS_WORLDS = 0.5;
/** The share of worlds (with `loops` on) whose workflows carry loop nodes. */
const LOOP_WORLDS = 0.5;
/** The share of worlds (with `limits` on) whose workflows carry concurrency limits. */
const LIMIT_WORLDS = 0.5;

/** The share of worlds with child workflows to call. */
const CHILD_WORLDS = 0.35;
/** The share of worlds with a fan-out tree under a small budget. */
const FAN_OUT_WORLDS = 0.12;

export interface RunResult extends CheckResult {
  seed: number;
  end: RunEnd;
  traceHash: string;
  trace: string[];
  steps: number;
  virtualMs: number;
  profile: Profile;
  workflows: WorkflowDefinition[];
  executions: Array<{ executionId: string; workflow: string; status: string }>;
  stats: Record<string, number>;
}

interface ClientOp {
  /** "conflict": a create with the plan's key but another input or start flag (refused, 409). */
  /** "cancel-child": a client cancels a running child execution of the plan's (by its id). */
  kind: "create" | "conflict" | "trigger" | "cancel" | "cancel-child" | "redrive";
  plan: number;
  /** What a "conflict" changes from the plan's request. */
  differs?: "input" | "start";
  at: number;
  /** A redrive looks a few times for dead letters before giving up. */
  tries?: number;
  proc?: SimProcess;
  done?: boolean;
}

interface PlannedExecution {
  workflow: string;
  input: unknown;
  /** Unique within the workflow; the same text is another workflow's key too (keys are per workflow). */
  key: string;
  twoStep: boolean;
  executionId?: string;
  /** The execution every answer to this plan's creates named, in order. */
  answers: string[];
}

/**
 * Steps, the campaign's bound on time. The busiest world (seed 5771: children calling themselves
 * ten deep under stalls, mapped) takes about 290,000 steps to its day's end: an ended execution's
 * cleanup writes every node it never started (docs/guarantees.md, History), and each of its
 * thousands of sweeps reads every timer shard (engine/timers.ts).
 */
const DEFAULT_MAX_STEPS = 400_000;
/**
 * A day of virtual time. The slowest worlds (a process stalls for minutes at one port call in
 * twenty, with one to three workers) take up to half a day to finish their executions: a shorter
 * horizon failed them for being slow, not stuck. A stuck execution stays stuck however long the
 * run; the step limit still bounds the campaign's time.
 */
const DEFAULT_MAX_TIME = 24 * 3600_000;

export async function runWorld(options: WorldOptions): Promise<RunResult> {
  // Loaded before the world starts: the first evaluation of a process would otherwise take a turn
  // of the event loop that later ones do not, and a seed would replay differently alone.
  await loadInThreadExpressions();
  const root = new Rng(options.seed);
  // The fan-in widths from their own stream, so the other draws of a seed stay as they were.
  const drawn = drawProfile(
    root.fork("profile"),
    root.fork("fan-in"),
    root.fork("operator"),
    root.fork("replica"),
    root.fork("payloads"),
    root.fork("clients"),
  );
  const profile = options.adjust ? options.adjust(drawn) : drawn;
  const trace = new Trace(300, options.keepTrace ?? false);
  const durations = root.fork("durations");
  const scheduler = new Scheduler(
    root.fork("schedule"),
    {
      crash: profile.crash,
      stall: profile.stall,
      // long enough for the lease to expire, so the stalled process comes back a zombie
      stallMs: () =>
        durations.int(profile.leaseSeconds * 1000 + 1, profile.leaseSeconds * 1000 * profile.stallMaxLeases),
      tick: profile.tick,
      tickMs: () => durations.int(1, profile.tickMaxMs),
    },
    trace,
  );
  const world = root.fork("world");
  const clock = new FakeClock(scheduler);
  const ids = new SimIds(root.fork("ids"));
  const memory = new MemoryStore();
  const processName = () => {
    const p = scheduler.running;
    return p ? `p${p.id} ${p.kind} ${p.label}` : "setup";
  };
  // The external workers' and settler's calls in flight, by process: the audit names them.
  const actors = new Map<number, Actor>();
  const audit = new AuditStore(
    options.plant ? options.plant(memory) : memory,
    () => clock.now(),
    processName,
    () => {
      const p = scheduler.running;
      return p ? actors.get(p.id) : undefined;
    },
  );
  const portFaults: PortFaults = {
    rng: root.fork("ports"),
    before: profile.portErrorBefore,
    after: profile.portErrorAfter,
    stats: { before: 0, after: 0 },
  };
  const visibilityMs = profile.visibilitySeconds * 1000;
  const deadLetterQueue = new SimQueue(() => scheduler.now, root.fork("dlq"), {
    name: "d",
    visibilityMs,
    duplicateSend: 0,
    duplicateReceive: 0,
    extraDelay: 0,
    extraDelayMaxMs: 1,
  });
  const queue = new SimQueue(() => scheduler.now, root.fork("queue"), {
    name: "m",
    visibilityMs,
    maxReceiveCount: profile.maxReceiveCount,
    deadLetter: deadLetterQueue,
    duplicateSend: profile.duplicateSend,
    duplicateReceive: profile.duplicateReceive,
    extraDelay: profile.extraDelay,
    extraDelayMaxMs: profile.extraDelayMaxMs,
  });
  const sqs = gatePort(
    {
      send: (messages: readonly TaskMessage[], o?: { delaySeconds?: number }) => queue.send(messages, o),
      deleteMessage: async (from: SimQueue, receipt: string) => from.delete(receipt),
    },
    "sqs",
    scheduler,
    portFaults,
    (method, args) =>
      method === "send"
        ? ` ${(args[0] as TaskMessage[]).map((m) => `${m.executionId}/${m.nodeId}#${m.attempt}`).join(",")}${
            (args[1] as { delaySeconds?: number } | undefined)?.delaySeconds
              ? ` delay ${(args[1] as { delaySeconds: number }).delaySeconds}s`
              : ""
          }`
        : ` ${args[1]}`,
  );
  const taskQueue: TaskQueue = { send: (messages, o) => sqs.send(messages, o) };
  const events = gatePort(new MemoryEventPublisher(), "events", scheduler, portFaults);
  const replica = withStaleReads(audit, root.fork("stale-reads"), profile.staleReads);
  const store = gatePort<Store>(
    options.plantEngineStore ? options.plantEngineStore(replica, audit) : replica,
    "store",
    scheduler,
    portFaults,
    describeStoreCall,
    audit.issuedBefore,
  );
  // One blob store for every engine (S3), its calls yield points with faults like any port's. Each
  // engine keeps its own cache of blob texts, as a Lambda container does.
  const blobStore = new MemoryBlobStore({ now: () => clock.now() });
  const blobs = gatePort<BlobStore>(
    options.plantBlobs ? options.plantBlobs(blobStore) : blobStore,
    "blobs",
    scheduler,
    portFaults,
    describeBlobCall,
  );
  const workerTimeoutSeconds = root.fork("worker-time").pick(WORKER_TIMEOUTS_SECONDS);
  // Fan-out trees and their small budget from their own stream, so the other draws of a seed stay
  // as they were.
  const fanOutDraw = root.fork("fan-out");
  // A tree is maps of children: none in worlds without either.
  const fanOutWorld =
    (options.children ?? true) &&
    (options.maps ?? true) &&
    (options.fanOut === "always" || ((options.fanOut ?? true) && fanOutDraw.chance(FAN_OUT_WORLDS)));
  const fanOut = fanOutWorld
    ? {
        tree: fanOutTree(fanOutDraw.seed32()),
        limits: { maxDescendants: fanOutDraw.int(2, 10), maxMapItemsInFlight: fanOutDraw.int(2, 8) },
        roots: fanOutDraw.int(1, 2),
      }
    : undefined;
  // Claims written before the run (0), or with the first write of a first attempt (attempt-fence.ts):
  // from a stream of its own, so the other draws of a seed stay as they were.
  const claimAfterSeconds = root.fork("claim").pick([0, 1, 5, 5]);
  const engineOptions: EngineOptions = {
    leaseSeconds: profile.leaseSeconds,
    claimAfterSeconds,
    sweep: profile.sweep,
    fanIn: profile.fanIn,
    payloads: profile.payloads,
    workerTimeoutSeconds,
    ...(fanOut ? { fanOut: fanOut.limits } : {}),
  };
  // Every handler run, with the deadline it was given and its invocation's: no attempt may be
  // given time past its invocation's deadline (checked below).
  const invocationDeadlines = new Map<number, number>();
  const runs: HandlerRun[] = [];
  // Concurrency limits from a stream of their own (drawn after everything else of a workflow): the
  // rest of a seed's world is as it was drawn. Their watch is told of each handler run as it starts.
  const limitsRng = root.fork("limits");
  const limitWorld =
    options.limits === "always" || (options.limits === true && limitsRng.fork("world").chance(LIMIT_WORLDS));
  const limitDefinitions = new Map<string, WorkflowDefinition>();
  // Reads the store beneath the audit and the gates: the watch's reads change nothing of the world.
  const limitWatch = limitWorld
    ? new LimitWatch(
        memory,
        (id) => audit.workflowOf.get(id),
        limitDefinitions,
        () => clock.now(),
      )
    : undefined;
  const tasks = () =>
    watchedTasks(
      () => scheduler.running,
      () => scheduler.now,
      invocationDeadlines,
      runs,
      () => audit.lastSeq,
      limitWatch ? (run) => limitWatch.onStart(run) : undefined,
    );
  const engines = Array.from(
    { length: profile.engines },
    () =>
      new Engine(
        { store, blobs, queue: taskQueue, events, clock, ids },
        tasks(),
        options.plantEngine ? options.plantEngine(engineOptions) : engineOptions,
      ),
  );
  const anyEngine = () => world.pick(engines);
  const continuation = world.chance(0.5);

  // ── workflows and the clients' plan ──────────────────────────────────────────────────────────
  // Child workflows from their own stream, so the other draws of a seed stay as they were.
  const family = root.fork("children");
  const library =
    (options.children ?? true) && family.chance(CHILD_WORLDS) ? childLibrary(family.seed32()) : [];
  // External workers and callbacks from their own stream, so the other draws of a seed stay as they were.
  const outside = root.fork("externals");
  const hasFleet = outside.chance(EXTERNAL_WORLDS);
  const drawnFleet =
    options.externals === "always" || ((options.externals ?? true) && hasFleet)
      ? drawFleet(outside)
      : undefined;
  const fleet = drawnFleet && options.adjustFleet ? options.adjustFleet(drawnFleet) : drawnFleet;
  const timerRng = root.fork("timers");
  const varsRng = root.fork("vars");
  const varsWorld =
    options.vars === "always" || (options.vars === true && varsRng.fork("world").chance(VARS_WORLDS));
  // Loops from a stream of their own (drawn after everything else of a workflow), over `step` and
  // the world's child library: the rest of a seed's world is as it was drawn.
  const loopsRng = root.fork("loops");
  const loopWorld =
    options.loops === "always" || (options.loops === true && loopsRng.fork("world").chance(LOOP_WORLDS));
  const loopLibrary = loopWorld ? [stepWorkflow()] : [];
  const callees = library.map((l) => l.definition.name).filter((name) => name !== STEP_WORKFLOW);
  const timerWorld = options.timers === false ? { farWaits: 0 } : drawTimerWorld(timerRng);
  const generated = Array.from({ length: profile.workflows }, (_, w) => {
    const drawn = generateWorkflow(root.fork(`dag${w}`).seed32(), `wf${w}`, {
      flowControl: options.flowControl ?? true,
      catchEdges: options.catchEdges ?? true,
      maps: options.maps ?? true,
      children: library.map((l) => l.definition.name),
    });
    const g = { ...drawn, definition: withFarWaits(drawn.definition, timerWorld, timerRng.fork(`dag${w}`)) };
    const placed = fleet
      ? { ...g, definition: placeExternals(g.definition, outside.fork(`dag${w}`), fleet) }
      : g;
    // Counters last, from a stream of their own: the rest of the workflow is as it was drawn.
    const counted =
      varsWorld && varsRng.fork(`dag${w}`).chance(0.7)
        ? { ...placed, definition: withIncrNodes(placed.definition, varsRng.fork(`incr${w}`)) }
        : placed;
    const looped =
      loopWorld && loopsRng.fork(`dag${w}`).chance(0.7)
        ? { ...counted, definition: withLoopNodes(counted.definition, loopsRng.fork(`loop${w}`), callees) }
        : counted;
    if (!limitWorld || !limitsRng.fork(`dag${w}`).chance(0.7)) return looped;
    const limited = withConcurrencyLimits(looped.definition, limitsRng.fork(`limits${w}`));
    limitDefinitions.set(limited.name, limited);
    return { ...looped, definition: limited };
  });
  // The children first: a workflow may name only registered ones without a warning.
  const fanOutLibrary = fanOut ? [fanOut.tree] : [];
  for (const { definition } of [...library, ...loopLibrary, ...fanOutLibrary, ...generated])
    await engines[0]!.registerWorkflow(definition);
  const plans: PlannedExecution[] = [];
  const ops: ClientOp[] = [];
  for (let i = 0; i < profile.executions; i++) {
    const workflow = world.pick(generated);
    const name = workflow.definition.name;
    plans.push({
      workflow: name,
      input: workflow.input,
      key: `key${plans.filter((p) => p.workflow === name).length}`,
      twoStep: world.chance(profile.twoStep),
      answers: [],
    });
    ops.push({ kind: "create", plan: i, at: world.int(0, 5_000) });
    if (world.chance(profile.cancel)) ops.push({ kind: "cancel", plan: i, at: world.int(0, 90_000) });
  }
  // The fan-out trees' roots, from their own stream: created, and cancelled in some worlds.
  for (let r = 0; fanOut && r < fanOut.roots; r++) {
    plans.push({
      workflow: fanOut.tree.definition.name,
      input: fanOut.tree.input,
      key: `key${r}`,
      twoStep: false,
      answers: [],
    });
    ops.push({ kind: "create", plan: plans.length - 1, at: fanOutDraw.int(0, 5_000) });
    if (fanOutDraw.chance(0.4))
      ops.push({ kind: "cancel", plan: plans.length - 1, at: fanOutDraw.int(1_000, 30_000) });
  }
  // Clients cancelling a child execution, from the children's stream (only worlds with children).
  if (library.length > 0)
    for (let i = 0; i < profile.executions; i++)
      if (family.chance(profile.cancel / 2))
        ops.push({ kind: "cancel-child", plan: i, at: family.int(2_000, 60_000) });
  // Clients reusing keys draw from their own stream, so the other draws of a seed stay as they were:
  // the same create again, racing the first; once it exists, the key with another input or start.
  const clients = root.fork("clients-plan");
  for (const op of [...ops]) {
    if (op.kind !== "create") continue;
    if (clients.chance(profile.duplicateCreate))
      ops.push({ kind: "create", plan: op.plan, at: op.at + clients.int(0, 50) });
    if (clients.chance(profile.conflictingCreate))
      ops.push({
        kind: "conflict",
        plan: op.plan,
        at: clients.int(0, 60_000),
        differs: clients.chance(0.5) ? "input" : "start",
      });
  }
  // The operator's redrives draw from their own stream, so the other draws of a seed stay as they were.
  const operator = root.fork("operator-plan");
  for (let i = 0; i < profile.executions; i++)
    if (operator.chance((options.redrive ?? true) ? profile.redrive : 0))
      ops.push({ kind: "redrive", plan: i, at: operator.int(20_000, 200_000), tries: 0 });
  const cancelRequested = new Set<string>();
  const cancelAccepted = new Set<string>();
  const counters = {
    workerErrors: 0,
    clientRetries: 0,
    sweeps: 0,
    doubleSweeps: 0,
    deadLetterRuns: 0,
    keyConflicts: 0,
  };
  /** Refusals of a plan's own create (the same request as the one that took its key): none may be. */
  const keyRefusals: Array<{ plan: number; message: string }> = [];
  /** Executions that answered a create with a reused key and another input or start (none may). */
  const conflictsAnswered: Array<{ plan: number; differs: string; executionId: string }> = [];

  /** A RUNNING execution started (maybe through others) by `executionId`, if any: the client's pick. */
  const runningChildOf = (executionId: string): string | undefined => {
    const descends = (id: string): boolean => {
      const parent = audit.parentOf.get(id);
      return parent !== undefined && (parent === executionId || descends(parent));
    };
    const running = [...audit.executionStatus]
      .filter(([id, status]) => status === "RUNNING" && descends(id))
      .map(([id]) => id);
    return running.length > 0 ? family.pick(running) : undefined;
  };
  const retryLater = (op: ClientOp, why: string) => {
    counters.clientRetries++;
    op.proc = undefined;
    op.at = scheduler.now + world.int(1_000, 10_000);
    trace.add(`@${scheduler.now} client retries ${op.kind} of plan ${op.plan} at @${op.at} (${why})`);
  };
  const runClientOp = (op: ClientOp) => {
    const plan = plans[op.plan]!;
    const engine = anyEngine();
    if (op.kind === "cancel") cancelRequested.add(plan.executionId!);
    const proc = scheduler.spawn("api", `${op.kind} plan${op.plan}`, async () => {
      try {
        if (op.kind === "create") {
          const summary = await engine.createExecution({
            workflow: plan.workflow,
            input: plan.input,
            idempotencyKey: plan.key,
            start: !plan.twoStep,
          });
          plan.executionId = summary.executionId;
          plan.answers.push(summary.executionId);
          if (plan.twoStep && summary.status === "PENDING")
            ops.push({ kind: "trigger", plan: op.plan, at: scheduler.now + world.int(0, 10_000) });
        } else if (op.kind === "conflict") {
          const summary = await engine.createExecution({
            workflow: plan.workflow,
            // Another input (one that cannot equal the plan's), or the other start flag.
            input: op.differs === "input" ? [plan.input] : plan.input,
            idempotencyKey: plan.key,
            start: op.differs === "start" ? plan.twoStep : !plan.twoStep,
          });
          conflictsAnswered.push({
            plan: op.plan,
            differs: op.differs ?? "",
            executionId: summary.executionId,
          });
        } else if (op.kind === "trigger") {
          await engine.triggerExecution(plan.executionId!);
        } else if (op.kind === "redrive") {
          // An operator redrives the execution's dead letters once it has some (looking a few times).
          const { items } = await engine.listDeadLetters({ limit: 100 });
          const ids = items.filter((d) => d.executionId === plan.executionId).map((d) => d.id);
          const result = ids.length > 0 ? await engine.redrive(ids) : undefined;
          if (result) trace.add(`@${scheduler.now} redrive plan${op.plan}: ${JSON.stringify(result)}`);
          // Nothing to redrive yet, or some refused (the execution failing again): look again later.
          op.tries = (op.tries ?? 0) + 1;
          if ((!result || result.skipped.length > 0) && op.tries < 5) {
            op.proc = undefined;
            op.at = scheduler.now + 30_000;
            return;
          }
        } else if (op.kind === "cancel-child") {
          // A running child of the plan's execution (or of its children), as its parent's view names it.
          const child = runningChildOf(plan.executionId!);
          if (child === undefined) {
            op.tries = (op.tries ?? 0) + 1;
            if (op.tries < 5) {
              op.proc = undefined;
              op.at = scheduler.now + 5_000;
              return;
            }
          } else {
            cancelRequested.add(child);
            await engine.cancelExecution(child, "a child cancelled by the simulation");
            cancelAccepted.add(child);
          }
        } else {
          await engine.cancelExecution(plan.executionId!, "cancelled by the simulation");
          cancelAccepted.add(plan.executionId!);
        }
        op.done = true;
      } catch (error) {
        if (hasCode(error, "Conflict")) op.done = true;
        else if (hasCode(error, "IdempotencyKeyConflict")) {
          // The answer a reused key with another request must get; the plan's own create, never.
          if (op.kind === "conflict") counters.keyConflicts++;
          else keyRefusals.push({ plan: op.plan, message: error.message });
          op.done = true;
        } else retryLater(op, error instanceof Error ? error.name : String(error));
      }
    });
    proc.killAt = scheduler.now + apiTimeoutMs(profile);
    op.proc = proc;
  };

  // ── the sweeper's schedule ───────────────────────────────────────────────────────────────────
  let nextSweep = world.int(0, profile.sweepEveryMs);
  const extraSweeps = Array.from({ length: profile.extraSweeps }, () => world.int(0, 150_000)).sort(
    (a, b) => a - b,
  );
  let sweepsDue = 0;
  const runSweep = () => {
    const count = world.chance(profile.doubleSweep) ? 2 : 1;
    if (count === 2) counters.doubleSweeps++;
    for (let i = 0; i < count; i++) {
      counters.sweeps++;
      const force = world.chance(profile.forceSweep);
      const engine = anyEngine();
      scheduler.spawn("sweeper", force ? "forced" : "", async () => {
        await engine.sweep({ force }).catch(() => {});
      });
    }
  };

  const receive = (from: SimQueue, message: SimMessage, kind: "worker" | "dlq") => {
    // A worker invocation takes a batch, as Lambda's SQS event source does: this message and up to
    // batchSize - 1 more that are visible now. They run at once in one process, sharing the
    // invocation's arrival batcher; a crash kills the whole invocation, as in Lambda.
    const batch =
      kind === "worker" ? [message, ...from.visible().filter((m) => m.id !== message.id)] : [message];
    const received = batch.slice(0, kind === "worker" ? profile.batchSize : 1).flatMap((m) => {
      const r = from.receive(m.id);
      if (r === "deadLettered") {
        trace.add(`@${scheduler.now} ${m.id} moved to the DLQ after ${m.receiveCount} receives`);
        return [];
      }
      return r ? [r] : [];
    });
    if (received.length === 0) return;
    const engine = anyEngine();
    const label = received
      .map(
        ({ message: m }) =>
          `${m.id} ${m.body.executionId}/${m.body.nodeId}#${m.body.attempt} rc${m.receiveCount}`,
      )
      .join(" + ");
    // Half the worlds give worker invocations a deadline (as Lambda does: its function timeout less
    // the worker's margin), which bounds every attempt and lets the engine run a ready child in the
    // same invocation (continuation); the others send every child. Those invocations are killed at
    // their function timeout, as Lambda kills them.
    const limited = continuation && kind === "worker";
    const deadline = limited
      ? { deadline: invocationDeadline(clock.now(), workerTimeoutSeconds * 1000) }
      : {};
    const proc = scheduler.spawn(kind, label, async () => {
      const invocation = engine.invocation();
      await Promise.all(
        received.map(async ({ message: m, receipt }) => {
          try {
            if (kind === "worker") {
              const given =
                deadline.deadline !== undefined && options.plantInvocationDeadline
                  ? { deadline: options.plantInvocationDeadline(deadline.deadline) }
                  : deadline;
              await invocation.handleTask(m.body, { receiveCount: m.receiveCount, ...given });
            } else {
              counters.deadLetterRuns++;
              await engine.recordDeadLetter(m.body, { messageId: m.id, receiveCount: m.receiveCount });
            }
          } catch {
            counters.workerErrors++;
            return; // not deleted: it comes back after the visibility timeout
          }
          await sqs.deleteMessage(from, receipt);
        }),
      );
    });
    if (limited) {
      proc.killAt = scheduler.now + workerTimeoutSeconds * 1000;
      invocationDeadlines.set(proc.id, deadline.deadline!);
    }
  };

  const executionsDone = () =>
    plans.every((p) => p.executionId !== undefined) &&
    [...audit.executionStatus.values()].every((s) => s !== "PENDING" && s !== "RUNNING");
  /** Every execution ended, its cleanup confirmed, every client done, nothing queued. */
  const settled = () =>
    executionsDone() &&
    // and every finished execution's cleanup confirmed (out of the sweeper's index)
    audit.sweepPending.size === 0 &&
    ops.every((o) => o.done || (o.kind === "cancel" && !o.proc)) &&
    queue.size === 0 &&
    deadLetterQueue.size === 0;

  // ── external workers and the callbacks' settler (only in worlds that drew a fleet) ───────────
  const callbackParams = new Map<string, { timeoutSeconds: number; heartbeatSeconds?: number }>();
  for (const { definition } of generated)
    for (const node of definition.nodes)
      if (node.type === "callback")
        callbackParams.set(
          `${definition.name}/${node.id}`,
          node.params as { timeoutSeconds: number; heartbeatSeconds?: number },
        );
  const runtime = outside.fork("runtime");
  const externals = fleet
    ? new Externals({
        fleet,
        scheduler,
        clock,
        trace,
        rng: runtime,
        engines,
        tasks: tasks(),
        audit,
        actors,
        // Past its lease, then past a sweep: the sweeper has had its chance to recover the attempt.
        apiTimeoutMs: apiTimeoutMs(profile),
        zombieMs: (leaseMs) =>
          leaseMs + profile.sweepEveryMs + profile.sweep.graceMs + runtime.int(1_000, 2 * leaseMs + 5_000),
        callbackParams,
        workflowOf: (executionId) => audit.workflowOf.get(executionId),
        done: executionsDone,
      })
    : undefined;

  const end = await scheduler.run(
    {
      actions(now): WorldAction[] {
        const actions: WorldAction[] = [];
        for (const op of ops) {
          if (op.done) continue;
          if (op.proc) {
            // a client whose call died never hears back: it times out and tries again
            if (op.proc.state === "crashed") retryLater(op, "no answer");
            // one that ended without being done asked to look again at `op.at` (a call that returned
            // before its first yield point had its `op.proc = undefined` overwritten by the spawn)
            else if (op.proc.state === "done" && !op.done) op.proc = undefined;
            else continue;
          }
          if (op.at > now) continue;
          if (op.kind !== "create" && plans[op.plan]!.executionId === undefined) {
            op.at = now + 5_000; // nothing to trigger or cancel yet
            continue;
          }
          actions.push({ label: `client ${op.kind} plan${op.plan}`, run: () => runClientOp(op) });
        }
        if (scheduler.liveProcesses("worker") < profile.workers)
          for (const message of queue.visible())
            actions.push({ label: `receive ${message.id}`, run: () => receive(queue, message, "worker") });
        for (const message of deadLetterQueue.visible())
          actions.push({
            label: `dlq receive ${message.id}`,
            run: () => receive(deadLetterQueue, message, "dlq"),
          });
        while (extraSweeps.length > 0 && extraSweeps[0]! <= now) {
          extraSweeps.shift();
          sweepsDue++;
        }
        while (nextSweep <= now) {
          nextSweep += profile.sweepEveryMs;
          sweepsDue++;
        }
        // Once everything has settled, the schedule's runs only keep the world from ending: the
        // ones in flight finish, no new one starts (a sweep reads every timer shard, so with
        // stalls some sweep would always be running).
        // A sweeper outage (timer worlds): the schedule's runs pile up and start once it is over.
        if (sweepsDue > 0 && !settled() && !inOutage(timerWorld, now))
          actions.push({
            label: "sweep",
            run: () => {
              sweepsDue--;
              runSweep();
            },
          });
        if (externals) actions.push(...externals.actions(now));
        return actions;
      },
      nextTime(now) {
        const times = [
          queue.nextVisibleAt(),
          deadLetterQueue.nextVisibleAt(),
          nextSweep,
          extraSweeps[0],
          ...ops.filter((o) => !o.done && !o.proc && o.at > now).map((o) => o.at),
          ...(externals ? externals.nextTime(now) : []),
        ].filter((t): t is number => t !== undefined && t > now);
        return times.length === 0 ? undefined : Math.min(...times);
      },
      finished() {
        return settled() && !scheduler.hasPendingWork() && scheduler.liveProcesses() === 0;
      },
    },
    { maxSteps: options.maxSteps ?? DEFAULT_MAX_STEPS, maxTime: options.maxTime ?? DEFAULT_MAX_TIME },
  );
  trace.add(`end ${end} @${scheduler.now} after ${scheduler.stats.steps} steps`);

  await options.inspect?.(memory);
  // ── the check ────────────────────────────────────────────────────────────────────────────────
  const reader = new Engine(
    {
      store: memory,
      blobs: blobStore,
      queue: { send: async () => {} },
      events: new MemoryEventPublisher(),
      clock,
      ids,
    },
    createTaskRegistry(),
    { payloads: profile.payloads },
  );
  const checked = await checkInvariants({
    store: memory,
    blobs: blobStore,
    payloads: profile.payloads,
    audit,
    engine: reader,
    definitions: new Map(
      [...library, ...loopLibrary, ...fanOutLibrary, ...generated].map((g) => [
        g.definition.name,
        g.definition,
      ]),
    ),
    inputs: new Map([...fanOutLibrary, ...generated].map((g) => [g.definition.name, g.input])),
    ...(fanOut ? { fanOut: fanOut.limits } : {}),
    cancelRequested,
    cancelAccepted,
    keys: { plans, refused: keyRefusals, answered: conflictsAnswered },
    handlerRuns: runs,
    claimAfterMs:
      ((options.plantEngine ? options.plantEngine(engineOptions) : engineOptions).claimAfterSeconds ?? 0) *
      1000,
    ...(externals ? { externals: externals.facts() } : {}),
  });
  const violations: Violation[] = [...checked.violations];
  if (limitWatch) violations.push(...limitWatch.violations);
  if (varsWorld)
    violations.push(
      ...(await checkVariables(
        memory,
        blobStore,
        new Map(generated.map((g) => [g.definition.name, g.definition])),
      )),
    );
  violations.push(
    ...checkTimers({
      armed: audit.timersArmed,
      sends: queue.sends.map((send) => ({
        ...send,
        sentAt: SIM_EPOCH + send.sentAt,
        dueAt: SIM_EPOCH + send.dueAt,
      })),
      cursor: await memory.getTimerCursor(),
      nodeWrites: audit.nodeWrites,
      lateBoundMs: timerLateBoundMs(profile, timerWorld),
    }),
  );
  for (const run of runs)
    if (run.invocationDeadline !== undefined && run.deadline > run.invocationDeadline)
      violations.push({
        rule: "deadline",
        executionId: run.executionId,
        nodeId: run.nodeId,
        message: `attempt ${run.attempt} was given until ${run.deadline - SIM_EPOCH}, past its worker invocation's deadline ${run.invocationDeadline - SIM_EPOCH}`,
      });
  if (end === "maxSteps")
    violations.push({
      rule: "progress",
      message: `the world did not settle within ${scheduler.stats.steps} steps`,
    });
  for (const [i, plan] of plans.entries())
    if (plan.executionId === undefined && end !== "maxSteps")
      violations.push({ rule: "terminal", message: `plan ${i}: the client never got its execution created` });

  const listed = await memory.listExecutions({ limit: 100 });
  return {
    seed: options.seed,
    end,
    traceHash: trace.hash(),
    trace: trace.lastLines(),
    steps: scheduler.stats.steps,
    virtualMs: scheduler.now,
    profile,
    workflows: [...library, ...loopLibrary, ...fanOutLibrary, ...generated].map((g) => g.definition),
    executions: listed.items
      .map((e) => ({ executionId: e.executionId, workflow: e.workflow, status: e.status }))
      .reverse(),
    violations,
    warnings: checked.warnings,
    stats: {
      ...scheduler.stats,
      ...counters,
      farWaits: [...generated].reduce(
        (n, g) =>
          n + g.definition.nodes.filter((node) => node.type === "wait" && farWait(node.params)).length,
        0,
      ),
      timersArmed: audit.timersArmed.length,
      sweepOutageMinutes: (timerWorld.outage?.forMs ?? 0) / 60_000,
      portErrorsBefore: portFaults.stats.before,
      portErrorsAfter: portFaults.stats.after,
      messagesSent: queue.stats.sent,
      duplicateSends: queue.stats.duplicateSends,
      duplicateReceives: queue.stats.duplicateReceives,
      delayedMessages: queue.stats.delayed,
      deliveries: queue.stats.received,
      deadLettered: queue.stats.deadLettered,
      writes: audit.nodeWrites.length + audit.executionWrites.length,
      workerTimeoutSeconds,
      // Handler runs ended by their invocation's deadline, and the attempts failed for it.
      runsCut: runs.filter((r) => r.cut && r.aborted).length,
      workerTimeouts: audit.nodeWrites.filter((w) => w.patch?.error?.name === WORKER_TIMEOUT).length,
      blobs: blobStore.count,
      ...(externals ? externals.stats : {}),
      ...(limitWatch
        ? {
            ...limitWatch.stats,
            // Nodes queued behind a full limit (their waitingFor written).
            slotWaits: audit.nodeWrites.filter((w) => w.patch?.waitingFor).length,
          }
        : {}),
      ...checked.counts,
    },
  };
}
