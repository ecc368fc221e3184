/**
 * External workers (domain/placement.ts): long-running processes anywhere that run nodes placed
 * with `runsOn`, for as long as a year, heartbeating.
 *
 * - A node with `runsOn` is queued like a deferred one (dispatch-mode.ts); its task message, on the
 *   Lambda worker, offers it to its pool (`offer`): an entry in a small per-pool index. Retries,
 *   backoff and the sweeper's resends therefore work as for any node: each resend offers again,
 *   and an offer is kept once per node attempt.
 * - A worker polls (`poll`): the oldest offers of its pool (a store may shard a pool: then of a
 *   shard picked at random, and the next ones), matched against its registration
 *   (placement, its own limits), and taken in one atomic write — the offer withdrawn, the node
 *   claimed QUEUED → RUNNING with a fresh lease, the hold added to the worker at the version whose
 *   counts were checked (Store.takeTask). The worker gets the attempt's token (domain/attempt-
 *   token.ts): every later write it asks for is fenced on it.
 * - The attempt's heartbeats renew its lease (never past its timeout) and tell it when to stop;
 *   its end (`complete`, `fail`) is the same fenced write as the Lambda worker's (AttemptEndings).
 *   A worker that stops heartbeating loses the attempt to the sweeper like any expired lease: a new
 *   attempt, with a new idempotency key, offered again.
 * - A hold is released after the attempt ends; one left by a crash is found at the worker's next
 *   poll (its node no longer RUNNING under that lease) and released then.
 */
import { encodeAttemptToken } from "../domain/attempt-token.js";
import { conflict, notFound, RequestError, RetryableError, TerminalError } from "../domain/errors.js";
import type { GraphNode, WorkflowGraph } from "../domain/graph.js";
import { PayloadError } from "../domain/json.js";
import {
  capacityRefusal,
  deadBefore,
  type Hold,
  holdKey,
  PLACEMENT_LIMITS,
  placementKey,
  placementRefusal,
  type ReadyTask,
  slotOf,
  type WorkerRecord,
  type WorkerRegistration,
  workerExpired,
  workerHealth,
} from "../domain/placement.js";
import type { ExecutionRecord, Lease, NodeRecord } from "../domain/records.js";
import { classifyError } from "../domain/retry.js";
import { attemptTrace } from "../domain/trace.js";
import type { TaskMessage } from "../ports.js";
import { assignAtEnd } from "./assign-at-end.js";
import { attemptKey } from "./attempt.js";
import type { AttemptEndings } from "./attempt-endings.js";
import { readAttempt } from "./attempt-token-reads.js";
import type { EngineContext } from "./context.js";
import { loadDeps } from "./dep-outputs.js";
import { depIndexesOf, dispatchMode } from "./dispatch-mode.js";
import type { ExternalTask, RegisteredWorker, TaskCancellation, WorkerView } from "./external-views.js";
import { HISTORY, nodeEvent, publishNodeEvent, traced } from "./lifecycle.js";
import { nodeStarted, workerLeft } from "./metrics.js";
import { prepareRun } from "./prepare.js";
import { sendTasks, taskMessage } from "./send.js";

// The shapes its API hands out live in external-views.ts (the HTTP contract names them from there).
export type {
  ExternalTask,
  RegisteredWorker,
  TaskCancellation,
  TaskErrorReport,
  WorkerView,
} from "./external-views.js";

/** How often a task's heartbeat is asked for when its node says nothing. */
export const DEFAULT_TASK_HEARTBEAT_SECONDS = 30;
/** Offers a poll reads at once, the oldest of its shard of the pool: offers no worker of the pool fits (yet) must not hide the others. */
const OFFERS_PER_POLL = 100;
/** A long poll looks again after these pauses (then the last, repeated): an idle fleet reads little. */
const POLL_PAUSES_MS = [250, 500, 1000, 2000, 4000];
export const MAX_POLL_SECONDS = 20;

export class ExternalWorkers {
  constructor(
    private readonly ctx: EngineContext,
    private readonly endings: AttemptEndings,
  ) {}

  // ── the registry ─────────────────────────────────────────────────────────────────────────────

  /**
   * Registers a worker, or the same worker again. A live registration's id is never taken over
   * with another placement (409 WorkerIdTaken, decided by the store's conditional write); a pool
   * takes at most maxWorkersPerPool live workers (409 TooManyWorkers). A worker joining a pool is
   * counted before its write and again after it: one that finds the pool over the bound once
   * written withdraws (before it could take anything), so registrations racing for the last
   * places never leave the pool over it — at worst both withdraw, and one registers again.
   */
  async register(registration: WorkerRegistration): Promise<RegisteredWorker> {
    const now = this.ctx.clock.now();
    const heartbeatSeconds = PLACEMENT_LIMITS.workerHeartbeatSeconds;
    const workerId = registration.workerId ?? `w-${this.ctx.ids.token().slice(0, 16)}`;
    const existing = await this.ctx.store.getWorker(workerId);
    const live = existing !== undefined && !workerExpired(existing, now) ? existing : undefined;
    // A dead worker freed its place: coming back, it joins its pool again like a new one.
    const joining = live?.pool !== registration.pool || workerHealth(live, now) === "dead";
    if (joining) await this.checkPoolRoom(registration.pool, now, 0);
    const written = await this.ctx.store.putWorker(
      {
        workerId,
        pool: registration.pool,
        executors: registration.executors,
        capabilities: registration.capabilities,
        labels: registration.labels,
        maxParallel: registration.maxParallel,
        registeredAt: live?.registeredAt ?? now,
        heartbeatAt: now,
        heartbeatSeconds,
        placement: placementKey(registration),
      },
      deadBefore(now, heartbeatSeconds),
    );
    if (!written.ok) {
      const holder = written.current;
      throw new RequestError(
        "WorkerIdTaken",
        `worker "${workerId}" is registered and alive${holder ? ` in pool "${holder.pool}"` : ""} with another placement (pool, executors, capabilities, labels); register under another id, or deregister it first (DELETE /workers/${workerId})`,
      );
    }
    if (joining) {
      try {
        await this.checkPoolRoom(registration.pool, now, 1);
      } catch (error) {
        // Over the bound with itself counted: it withdraws (it has taken nothing yet).
        await this.ctx.store.deleteWorker(workerId, written.record.version);
        throw error;
      }
    }
    return { workerId, heartbeatSeconds };
  }

  /** Refuses when the pool's live workers, less `self` (0 or 1: the joiner, written already), are at the bound. */
  private async checkPoolRoom(pool: string, now: number, self: 0 | 1): Promise<void> {
    const max = PLACEMENT_LIMITS.maxWorkersPerPool;
    const members = (await this.ctx.store.listWorkers()).filter(
      (worker) => worker.pool === pool && workerHealth(worker, now) !== "dead",
    ).length;
    if (members - self >= max)
      throw new RequestError(
        "TooManyWorkers",
        `pool "${pool}" has ${members - self} live workers; a pool takes at most ${max} (dead ones free their place)`,
      );
  }

  /** Renews the worker's registration; answers the tasks it holds that it must stop. */
  async heartbeat(workerId: string): Promise<{ cancellations: TaskCancellation[] }> {
    const worker = await this.touch(workerId);
    const cancellations: TaskCancellation[] = [];
    for (const hold of Object.values(worker.holds)) {
      const record = await this.ctx.store.getNode(hold.executionId, hold.nodeId);
      const reason = stopReason(record, hold);
      if (reason !== undefined) cancellations.push({ ...taskOf(hold), reason });
    }
    return { cancellations };
  }

  /** The worker leaves: each task it holds is given up at once (retried elsewhere by policy), then it is gone. */
  async deregister(workerId: string): Promise<{ released: number }> {
    let released = 0;
    let pool: string | undefined;
    // Until no take races it: a task taken while it gave up the others is given up too, and the
    // registration is deleted only at the version whose holds were all given up.
    for (let look = 0; look < 16; look++) {
      const worker = await this.ctx.store.getWorker(workerId);
      if (!worker) {
        if (look === 0) throw notFound(`worker "${workerId}" is not registered`);
        break;
      }
      pool = worker.pool;
      const holds = Object.values(worker.holds);
      if (holds.length === 0 && (await this.ctx.store.deleteWorker(workerId, worker.version))) break;
      for (const hold of holds) {
        if (await this.giveUp(hold, "WorkerDeregistered", `worker "${workerId}" deregistered`)) released++;
        await this.ctx.store.releaseHold(workerId, holdKey(hold.executionId, hold.nodeId), hold.leaseToken);
      }
    }
    // The pool's metric series go with its last worker (metrics.ts).
    if (pool !== undefined) await workerLeft(this.ctx, pool);
    return { released };
  }

  /** A page of the registry, by worker id; expired registrations are gone. */
  async list(page: { limit: number; next?: string }): Promise<{ workers: WorkerView[]; next?: string }> {
    const now = this.ctx.clock.now();
    const found = await this.ctx.store.pageWorkers(page, now);
    const workers = found.items.map((worker) => viewOf(worker, now));
    return found.next === undefined ? { workers } : { workers, next: found.next };
  }

  // ── offers and polls ─────────────────────────────────────────────────────────────────────────

  /** The Lambda worker got the task message of an external node: it is offered to its pool. */
  async offer(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    message: TaskMessage,
  ): Promise<NodeRecord | undefined> {
    const runsOn = node.runsOn;
    if (!runsOn) return undefined;
    const record = await this.ctx.store.getNode(execution.executionId, node.id);
    if (record?.status === "RUNNING" && record.attempt === message.attempt && record.lease) {
      if (message.lease !== record.lease.token) return undefined;
      await this.checkLease(execution, graph, node, record, record.lease);
      return undefined;
    }
    // A message of an attempt that is over, or of a node that ended: nothing to offer; the record
    // goes back to the caller (a check drives what its end left undone).
    if (record?.status !== "QUEUED" || record.attempt !== message.attempt) return record;
    await this.ctx.store.offerTask({
      pool: runsOn.pool,
      executionId: execution.executionId,
      nodeId: node.id,
      attempt: record.attempt,
      workflow: execution.workflow,
      version: execution.version,
      runsOn,
      offeredAt: this.ctx.clock.now(),
    });
    return undefined;
  }

  /**
   * The attempt's timer, at its lease's expiry: a worker that stops heartbeating (or passes the
   * task's timeout, which no renewal passes) loses it then, to the second. Heartbeats move no timer:
   * the timer they outlived arms the next (checkLease).
   */
  private armLeaseTimer(execution: ExecutionRecord, nodeId: string, attempt: number, lease: Lease) {
    // A check, too: after the attempt ends (by the api, outside any message) it drives the end's
    // propagation again, in case the api died before it.
    const message: TaskMessage = {
      ...taskMessage(execution, nodeId, attempt),
      check: true,
      lease: lease.token,
    };
    return sendTasks(this.ctx, [{ message, notBefore: lease.expiresAt + 1 }]);
  }

  /** A taken attempt's timer came: recovered when its lease expired, else armed for its new expiry. */
  private async checkLease(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    record: NodeRecord,
    lease: Lease,
  ): Promise<void> {
    if (lease.expiresAt < this.ctx.clock.now()) {
      // Its hold on the worker goes at the worker's next poll (pruneHolds), as after any end.
      await this.endings.recoverExpiredLease(execution, graph, node, record);
      return;
    }
    await this.armLeaseTimer(execution, node.id, record.attempt, lease);
  }

  /**
   * A long poll: at most one task the worker may run, taken for it, or undefined once `waitSeconds`
   * passed with none. Each look reads the oldest offers of its pool; between looks it pauses longer
   * and longer, so an idle fleet costs a few reads a minute per worker.
   */
  async poll(
    workerId: string,
    options: { waitSeconds?: number; signal?: AbortSignal } = {},
  ): Promise<ExternalTask | undefined> {
    const { clock } = this.ctx;
    const waitMs = Math.min(options.waitSeconds ?? MAX_POLL_SECONDS, MAX_POLL_SECONDS) * 1000;
    const until = clock.now() + waitMs;
    let worker = await this.touch(workerId);
    for (let look = 0; ; look++) {
      const task = await this.takeOne(worker);
      if (task) return task;
      const left = until - clock.now();
      if (left <= 0 || options.signal?.aborted) return undefined;
      const pause = POLL_PAUSES_MS[Math.min(look, POLL_PAUSES_MS.length - 1)]!;
      try {
        await clock.sleep(Math.min(pause, left), options.signal);
      } catch {
        return undefined; // the caller went away
      }
      worker = (await this.ctx.store.getWorker(workerId)) ?? worker;
    }
  }

  private async takeOne(first: WorkerRecord): Promise<ExternalTask | undefined> {
    let worker = first;
    // From a random shard of the pool (the store's): polls spread over its shards, none waits.
    const offers = await this.ctx.store.listReadyTasks(worker.pool, OFFERS_PER_POLL, this.ctx.ids.token());
    let pruned = false;
    for (const offer of offers) {
      if (placementRefusal(offer.runsOn, worker) !== undefined) continue;
      const slot = slotOf(offer.workflow, offer.nodeId);
      if (capacityRefusal(worker, offer.runsOn, slot) !== undefined) {
        if (pruned) continue;
        // Full by its record: a hold left by a crash may be what fills it.
        worker = await this.pruneHolds(worker);
        pruned = true;
        if (capacityRefusal(worker, offer.runsOn, slot) !== undefined) continue;
      }
      const taken = await this.take(worker, offer, slot);
      if (taken.worker) worker = taken.worker;
      if (taken.task) return taken.task;
    }
    return undefined;
  }

  /** Tries one offer; answers the task, and the worker as it now is when that changed. */
  private async take(
    worker: WorkerRecord,
    offer: ReadyTask,
    slot: string,
  ): Promise<{ task?: ExternalTask; worker?: WorkerRecord }> {
    const { store, clock, ids } = this.ctx;
    const execution = await store.getExecution(offer.executionId);
    if (execution?.status !== "RUNNING") {
      // Its execution ended: its cleanup cancels the node; the offer is only in the way.
      await store.withdrawTask(offer);
      return {};
    }
    const graph = await this.ctx.graphs.get(execution.workflow, execution.version);
    const node = graph.byId.get(offer.nodeId);
    if (!node) {
      await store.withdrawTask(offer);
      return {};
    }
    const now = clock.now();
    const lease: Lease = { token: ids.token(), expiresAt: now + leaseMsOf(node), workerId: worker.workerId };
    const hold: Hold = {
      executionId: offer.executionId,
      nodeId: offer.nodeId,
      attempt: offer.attempt,
      leaseToken: lease.token,
      slot,
      claimedAt: now,
    };
    // Armed before the take, so no take goes without it (the api may die right after); a take that
    // loses its race leaves a timer that finds another lease and does nothing.
    await this.armLeaseTimer(execution, node.id, offer.attempt, lease);
    const taken = await store.takeTask({
      task: offer,
      workerId: worker.workerId,
      workerVersion: worker.version,
      hold,
      claim: {
        condition: { status: ["QUEUED"], attempt: offer.attempt, dueBy: now },
        patch: { status: "RUNNING", lease, startedAt: now },
        event: traced(
          nodeEvent(this.ctx, HISTORY.nodeStarted, now, node.id, offer.attempt, {
            workerId: worker.workerId,
          }),
          attemptTrace(execution, node.id, offer.attempt),
        ),
      },
    });
    if (!taken.ok) {
      if (taken.refused === "worker") {
        const fresh = await store.getWorker(worker.workerId);
        return fresh ? { worker: fresh } : {};
      }
      const current = taken.node;
      // The node moved on from that attempt (taken, cancelled, retried): the offer is stale. One
      // not due yet (a retry's backoff) stays offered.
      if (taken.refused === "node" && (current?.status !== "QUEUED" || current.attempt !== offer.attempt))
        await store.withdrawTask(offer);
      return {};
    }
    // A take that came after its lease's end (this process stalled between arming and taking) may
    // have been preceded by its timer, which then found the node still QUEUED: armed again (due at
    // once, it recovers the attempt). A take before that end is the one its timer finds.
    if (this.ctx.clock.now() > lease.expiresAt)
      await this.armLeaseTimer(execution, node.id, offer.attempt, lease);
    nodeStarted(this.ctx, taken.node, offer.pool);
    await publishNodeEvent(this.ctx, execution, graph, "Node Started", node.id, offer.attempt);
    const task = await this.prepare(execution, graph, node, taken.node, lease);
    return task ? { task, worker: taken.worker } : { worker: taken.worker };
  }

  /** The task's inputs, `when` and params (prepare.ts); an attempt with nothing to run ends here. */
  private async prepare(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    record: NodeRecord,
    lease: Lease,
  ): Promise<ExternalTask | undefined> {
    const mode = dispatchMode(this.ctx, node);
    let prepared: Awaited<ReturnType<typeof prepareRun>>;
    try {
      const deps = await loadDeps(
        this.ctx,
        execution.executionId,
        graph,
        depIndexesOf(mode, node, record.okDeps),
        node,
      );
      prepared = await prepareRun(this.ctx, execution, node, this.ctx.tasks.get(node.type), deps);
    } catch (error) {
      const { retryAfterSeconds, ...failure } = classifyError(error, node.retry);
      await this.endings.retryOrFail(execution, graph, node, record, lease, failure, retryAfterSeconds);
      await this.release(lease, execution.executionId, node.id);
      return undefined;
    }
    if ("skip" in prepared) {
      await this.endings.skipClaimed(execution, graph, node, record, lease, prepared.skip);
      await this.release(lease, execution.executionId, node.id);
      return undefined;
    }
    return {
      taskToken: encodeAttemptToken({
        executionId: execution.executionId,
        nodeId: node.id,
        attempt: record.attempt,
        leaseToken: lease.token,
      }),
      executionId: execution.executionId,
      nodeId: node.id,
      attempt: record.attempt,
      idempotencyKey: attemptKey(execution.executionId, node.id, record.attempt),
      type: node.type,
      params: prepared.params ?? null,
      input: prepared.input,
      deps: prepared.deps,
      deadline: iso(deadlineOf(node, record)),
      heartbeatSeconds: node.heartbeatSeconds ?? DEFAULT_TASK_HEARTBEAT_SECONDS,
      trace: attemptTrace(execution, node.id, record.attempt),
    };
  }

  // ── a task's heartbeats and end ──────────────────────────────────────────────────────────────

  /** Renews the attempt's lease (never past its timeout); answers whether it must stop. */
  async heartbeatTask(taskToken: string): Promise<{ cancelRequested: boolean }> {
    const held = await readAttempt(this.ctx, taskToken, "task", "heartbeat");
    const { execution, graph, node, record, lease } = held;
    const now = this.ctx.clock.now();
    const deadline = deadlineOf(node, record);
    if (now >= deadline) {
      await this.endings.retryOrFail(execution, graph, node, record, lease, {
        name: "TimeoutError",
        message: `attempt ${record.attempt} exceeded the node timeout of ${node.timeoutSeconds} s`,
        retryable: true,
      });
      await this.release(lease, execution.executionId, node.id);
      return { cancelRequested: true };
    }
    const renewed = await this.ctx.store.transitionNode(
      execution.executionId,
      node.id,
      { status: ["RUNNING"], leaseToken: lease.token },
      { lease: { ...lease, expiresAt: Math.min(now + leaseMsOf(node), deadline) } },
    );
    if (!renewed.ok) throw staleToken(node.id, record.attempt);
    return { cancelRequested: renewed.record.cancelRequested === true || execution.status !== "RUNNING" };
  }

  async completeTask(taskToken: string, output: unknown): Promise<void> {
    const { execution, graph, node, record, lease } = await readAttempt(
      this.ctx,
      taskToken,
      "task",
      "complete",
    );
    let saved: Awaited<ReturnType<typeof this.ctx.payloads.save>>;
    try {
      saved = await this.ctx.payloads.save(execution.executionId, output, `the output of node "${node.id}"`);
    } catch (error) {
      // An output over the limit of a value ends the attempt as the Lambda worker's would.
      if (!(error instanceof PayloadError)) throw error;
      await this.endings.retryOrFail(execution, graph, node, record, lease, classifyError(error, node.retry));
      await this.release(lease, execution.executionId, node.id);
      return;
    }
    const refused = await assignAtEnd(this.ctx, execution, graph, node, record, saved);
    if (refused) {
      // Its assign refused (an expression, a limit, a secret-looking value): the attempt's failure.
      await this.endings.retryOrFail(
        execution,
        graph,
        node,
        record,
        lease,
        classifyError(refused, node.retry),
      );
      await this.release(lease, execution.executionId, node.id);
      return;
    }
    const done = await this.endings.complete(execution, graph, node, record, lease, saved);
    await this.release(lease, execution.executionId, node.id);
    // Refused between the read and the write (told to stop, or its lease passed on): not accepted.
    if (!done.completed) throw notAccepted(node.id, record.attempt, "completion");
  }

  async failTask(
    taskToken: string,
    error: { name: string; message: string; retryable?: boolean },
  ): Promise<void> {
    const { execution, graph, node, record, lease } = await readAttempt(this.ctx, taskToken, "task", "fail");
    let ended: boolean;
    if (record.cancelRequested === true) {
      // Told to stop, it stopped: cancelled, not failed.
      ended = await this.endings.stopCancelled(execution, node, record, lease);
    } else {
      const thrown =
        error.retryable === false
          ? new TerminalError(error.message, { code: error.name })
          : new RetryableError(error.message, { code: error.name });
      const { retryAfterSeconds, ...failure } = classifyError(thrown, node.retry);
      const end = await this.endings.retryOrFail(
        execution,
        graph,
        node,
        record,
        lease,
        failure,
        retryAfterSeconds,
      );
      ended = end !== "refused";
    }
    await this.release(lease, execution.executionId, node.id);
    if (!ended) throw notAccepted(node.id, record.attempt, "failure");
  }

  // ── helpers ──────────────────────────────────────────────────────────────────────────────────

  private async touch(workerId: string): Promise<WorkerRecord> {
    const worker = await this.ctx.store.touchWorker(workerId, this.ctx.clock.now());
    if (!worker) throw notFound(`worker "${workerId}" is not registered; register it again (POST /workers)`);
    return worker;
  }

  /** Releases the holds whose attempt is over (a release a crash cut short); the worker as it is then. */
  private async pruneHolds(worker: WorkerRecord): Promise<WorkerRecord> {
    let pruned = false;
    for (const [key, hold] of Object.entries(worker.holds)) {
      const record = await this.ctx.store.getNode(hold.executionId, hold.nodeId);
      if (record?.status === "RUNNING" && record.lease?.token === hold.leaseToken) continue;
      await this.ctx.store.releaseHold(worker.workerId, key, hold.leaseToken);
      pruned = true;
    }
    return pruned ? ((await this.ctx.store.getWorker(worker.workerId)) ?? worker) : worker;
  }

  /** Gives up an attempt a worker holds (it left): retried by policy, elsewhere. True when it was live. */
  private async giveUp(hold: Hold, name: string, message: string): Promise<boolean> {
    const record = await this.ctx.store.getNode(hold.executionId, hold.nodeId);
    if (record?.status !== "RUNNING" || record.lease?.token !== hold.leaseToken) return false;
    const execution = await this.ctx.store.getExecution(hold.executionId);
    if (!execution || !record.lease) return false;
    const graph = await this.ctx.graphs.get(execution.workflow, execution.version);
    const node = graph.byId.get(hold.nodeId);
    if (!node) return false;
    await this.endings.retryOrFail(execution, graph, node, record, record.lease, {
      name,
      message,
      retryable: true,
    });
    return true;
  }

  private async release(lease: Lease, executionId: string, nodeId: string): Promise<void> {
    if (lease.workerId)
      await this.ctx.store.releaseHold(lease.workerId, holdKey(executionId, nodeId), lease.token);
  }
}

/** Why a held attempt must stop, or undefined while it is the worker's to run. */
function stopReason(record: NodeRecord | undefined, hold: Hold): string | undefined {
  if (record?.status !== "RUNNING" || record.lease?.token !== hold.leaseToken)
    return `attempt ${hold.attempt} is no longer this worker's (the node is ${record?.status ?? "gone"})`;
  if (record.cancelRequested === true) return "cancellation was requested";
  return undefined;
}

function taskOf(hold: Hold): Omit<TaskCancellation, "reason"> {
  return {
    taskToken: encodeAttemptToken({
      executionId: hold.executionId,
      nodeId: hold.nodeId,
      attempt: hold.attempt,
      leaseToken: hold.leaseToken,
    }),
    executionId: hold.executionId,
    nodeId: hold.nodeId,
    attempt: hold.attempt,
  };
}

/** An external attempt's lease: two heartbeats long, so one late heartbeat does not lose it. */
function leaseMsOf(node: GraphNode): number {
  return 2 * (node.heartbeatSeconds ?? DEFAULT_TASK_HEARTBEAT_SECONDS) * 1000;
}

function deadlineOf(node: GraphNode, record: NodeRecord): number {
  return (record.startedAt ?? 0) + node.timeoutSeconds * 1000;
}

function staleToken(nodeId: string, attempt: number) {
  return conflict(`the token is stale: attempt ${attempt} of node "${nodeId}" is no longer held by it`);
}

const iso = (ms: number) => new Date(ms).toISOString();

/** A report that did not take: the attempt ended otherwise between its read and its write. */
function notAccepted(nodeId: string, attempt: number, what: string) {
  return conflict(
    `the ${what} of attempt ${attempt} of node "${nodeId}" came after the attempt ended otherwise`,
  );
}

/** A registration as GET /workers shows it. */
function viewOf(worker: WorkerRecord, now: number): WorkerView {
  const holds = Object.values(worker.holds).sort((a, b) => a.claimedAt - b.claimedAt);
  return {
    workerId: worker.workerId,
    pool: worker.pool,
    status: workerHealth(worker, now),
    executors: worker.executors,
    capabilities: worker.capabilities,
    labels: worker.labels,
    maxParallel: worker.maxParallel,
    registeredAt: iso(worker.registeredAt),
    lastHeartbeatAt: iso(worker.heartbeatAt),
    tasks: holds.slice(0, PLACEMENT_LIMITS.maxTasksPerWorkerView).map((h) => ({
      executionId: h.executionId,
      nodeId: h.nodeId,
      attempt: h.attempt,
      claimedAt: iso(h.claimedAt),
    })),
    taskCount: holds.length,
  };
}
