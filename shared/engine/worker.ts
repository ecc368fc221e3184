/**
 * The worker path for one task message: claim the node with a fenced lease, run the handler, then
 * complete, retry or fail it with writes conditioned on the lease token. A refused claim tells what
 * happened (duplicate, stale, early, or a crash before propagation) and is handled idempotently.
 */
import { failureGoesOn } from "../domain/edges.js";
import { TerminalError } from "../domain/errors.js";
import type { GraphNode, WorkflowGraph } from "../domain/graph.js";
import type { Payload } from "../domain/payload.js";
import type { ExecutionRecord, Lease, NodeRecord } from "../domain/records.js";
import { classifyError } from "../domain/retry.js";
import { attemptTrace } from "../domain/trace.js";
import type { Outcome, TaskMessage } from "../ports.js";
import type { TaskType } from "../tasks/task-type.js";
import type { ArrivalBatcher } from "./arrival-batcher.js";
import { runAttempt } from "./attempt.js";
import { AttemptEndings } from "./attempt-endings.js";
import { AttemptFence, type ClaimWay, claimable, type NodeWriter } from "./attempt-fence.js";
import { Callbacks } from "./callbacks.js";
import { CLEANUP_NODE_ID, cleanUpByMessage } from "./cancellation.js";
import { leaseWatch } from "./checks.js";
import { ChildWorkflows } from "./children.js";
import type { EngineContext } from "./context.js";
import type { ByMessage, FailAttempt } from "./contracts.js";
import type { DeadLetters } from "./dead-letters.js";
import { loadDeps } from "./dep-outputs.js";
import {
  claimedByMessage,
  depIndexesOf,
  dispatchMode,
  messageCarriesDeps,
  validMessageDeps,
} from "./dispatch-mode.js";
import { DEADLINE_NODE_ID, deadlineByMessage } from "./execution-deadline.js";
import { Executions } from "./executions.js";
import { ExternalWorkers } from "./external.js";
import { HISTORY, nodeEvent, publishNodeEvent, traced } from "./lifecycle.js";
import { Loops } from "./loop.js";
import { itemNode, Maps } from "./map.js";
import { nodeStarted } from "./metrics.js";
import { notifyParent } from "./parent-notice.js";
import { skipReason } from "./prepare.js";
import { needsFence, type Propagation } from "./propagation.js";
import { readExecutionForTask } from "./reads.js";
import { sendTasks, taskMessage } from "./send.js";
import { type AttemptLimit, Slots } from "./slots.js";
import { WaitingKinds } from "./waiting-kind.js";
import { expectedRunMs, mayContinue, RecentRunTimes, workerTimeoutError } from "./worker-time.js";

/**
 * A message for an execution not written yet is sent again this many times, 1 s later, then 2 s, 4 s…:
 * 17 minutes in all, past the 15 minutes no Lambda invocation (the api's included) outlives, so no
 * start can write its execution after its messages gave up.
 */
const EARLY_RESENDS = 10;
const EARLY_RESEND_MS = 1000;
/** The first handling of such a message reads again after 10, 20, 40, 80 and 160 ms. */
const EARLY_PAUSE_MS = 10;
const EARLY_PAUSE_MAX_MS = 160;

// A map's items share one key: their run times are alike, and one entry per item would pile up.
const runKey = (execution: ExecutionRecord, node: GraphNode) =>
  RecentRunTimes.key(execution.workflow, execution.version, node.item ? `${node.item.mapId}[]` : node.id);

/** How a task message arrived: from the worker handler (an SQS record and the Lambda context). */
export interface Delivery {
  /** SQS's receive count, this receive included; unknown, a refused claim is treated as a redelivery's. */
  receiveCount?: number;
  /** When the message was sent (SQS SentTimestamp): a direct node's queued time. */
  sentAt?: number;
  /**
   * When the invocation must be done with its nodes (epoch ms; its end less the worker's margin,
   * worker-time.ts): no attempt runs past it, and continuation runs a child only while it is
   * expected to fit before it.
   */
  deadline?: number;
  /** The invocation's shard-arrival batcher, shared by the messages of one SQS batch. */
  arrivals?: ArrivalBatcher;
}

export class TaskRunner {
  private readonly endings: AttemptEndings;

  private readonly maps: Maps;
  readonly callbacks: Callbacks;
  /** The waiting kinds this runner starts and checks (engine/waiting-kind.ts). */
  readonly waiting: WaitingKinds;
  /** External workers' registry, polls and tasks (engine/external.ts). */
  readonly external: ExternalWorkers;
  /** Concurrency limits (engine/slots.ts): passed before an attempt runs, given back after. */
  private readonly slots: Slots;

  constructor(
    private readonly ctx: EngineContext,
    private readonly propagation: Propagation,
    deadLetters: DeadLetters,
  ) {
    this.endings = new AttemptEndings(ctx, propagation, deadLetters);
    const failAttempt: FailAttempt = (execution, graph, node, record, lease, error) => {
      const { retryAfterSeconds, ...failure } = classifyError(error, node.retry);
      return this.endings.retryOrFail(execution, graph, node, record, lease, failure, retryAfterSeconds);
    };
    this.maps = new Maps(ctx, propagation, failAttempt);
    this.callbacks = new Callbacks(ctx, propagation, failAttempt);
    const executions = new Executions(ctx, propagation);
    this.waiting = new WaitingKinds([
      this.maps,
      new ChildWorkflows(ctx, propagation, executions, failAttempt),
      new Loops(ctx, propagation, executions, failAttempt),
      this.callbacks,
    ]);
    propagation.waiting = this.waiting;
    this.external = new ExternalWorkers(ctx, this.endings);
    this.slots = new Slots(ctx);
    propagation.itemEnded = (execution, graph, item, ended) =>
      item.item ? this.maps.afterItem(execution, graph, item.item, ended) : Promise.resolve();
  }

  /** A worker died holding the lease: count its attempt as failed and retry or fail by policy. */
  async recoverExpiredLease(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    current: NodeRecord,
  ): Promise<void> {
    // A map or a child's parent holds no worker: its lease is the time of its next check.
    if (current.composite) return this.checkComposite(execution, graph, node, current, true);
    if (await this.endings.recoverExpiredLease(execution, graph, node, current))
      await this.giveBackSlots(execution, graph, node, current.attempt);
  }

  /**
   * An attempt that runs no more — taken back from a dead worker, or handed a slot after its
   * execution ended: its concurrency slots go to the next waiters now, not at the next look for
   * stale holders.
   */
  private async giveBackSlots(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    attempt: number,
  ): Promise<void> {
    if (!node.concurrency || node.item) return;
    const limits = await this.slots.limitsOf(execution, graph, node).catch((error: unknown) => {
      if (error instanceof TerminalError) return [];
      throw error;
    });
    await this.slots.leave(execution.executionId, node.id, attempt, limits);
  }

  async handle(message: TaskMessage, delivery: Delivery = {}): Promise<void> {
    const { clock, logger } = this.ctx;
    if (message.nodeId === CLEANUP_NODE_ID)
      return cleanUpByMessage(this.ctx, this.propagation, message.executionId);
    if (message.nodeId === DEADLINE_NODE_ID)
      return deadlineByMessage(this.ctx, this.propagation, message.executionId);
    let execution = await readExecutionForTask(this.ctx, message.executionId);
    if (!execution && message.attempt === 1 && message.early === undefined)
      execution = await this.readWrittenLate(message.executionId);
    if (!execution) {
      // A start sends its entries' messages before it writes the execution (executions.ts): this
      // one may have outrun that write. Sent again a few times, later each time; then it follows a
      // start that died before its write, and is dropped.
      const early = message.early ?? 0;
      if (message.attempt === 1 && early < EARLY_RESENDS) {
        const notBefore = clock.now() + EARLY_RESEND_MS * 2 ** early;
        await sendTasks(this.ctx, [{ message: { ...message, early: early + 1 }, notBefore }]);
        return;
      }
      logger.warn("task for an unknown execution dropped", { ...message });
      return;
    }
    const graph = await this.ctx.graphs.get(execution.workflow, execution.version);
    const node = graph.byId.get(message.nodeId) ?? itemNode(graph, message.nodeId);
    if (!node) {
      logger.warn("task for a node the workflow does not have dropped", { ...message });
      return;
    }
    if (node.onFailureHandler) {
      // Runs only once its execution failed (propagation.ts dispatches it then).
      if (execution.status !== "FAILED") return;
    } else if (execution.status === "PENDING")
      throw new Error("execution is not started yet; the task will come back");
    else if (execution.status !== "RUNNING") {
      // Also a node whose worker died: nobody else would ever move it out of RUNNING.
      const reason = `execution ${execution.status.toLowerCase()}`;
      const now = this.ctx.clock.now();
      await this.propagation.cancelNode(execution.executionId, node.id, reason, {
        leaseExpiredBy: now,
        fenced: needsFence(execution.status),
      });
      // A waiter handed a slot after its execution ended passes it on (a key that cannot be
      // evaluated named no slot it could hold).
      await this.giveBackSlots(execution, graph, node, message.attempt);
      // Redelivered: its first handling may have ended the execution and died before telling the
      // parent, which nothing else tells (children.ts).
      if (delivery.receiveCount !== 1 || message.check) await notifyParent(this.ctx, execution);
      return;
    }
    if (node.runsOn) {
      // Run by external workers only: its message offers it to its pool (engine/external.ts).
      const left = await this.external.offer(execution, graph, node, message);
      if (left && left.status !== "RUNNING" && (message.check || delivery.receiveCount !== 1))
        await this.onClaimRefused(execution, graph, node, message, left, delivery);
      return;
    }
    const task = this.ctx.tasks.get(node.type);
    if (!task) {
      await this.endings.failUnclaimed(execution, graph, node, message.attempt, {
        name: "UnknownTaskType",
        message: `no handler for task type "${node.type}" in this worker`,
        retryable: false,
      });
      return;
    }

    if (node.concurrency && !node.item)
      return this.handleLimited(execution, graph, node, task, message, delivery);
    const claim = await this.claim(
      execution,
      graph,
      { node, deps: message.deps },
      message.attempt,
      delivery.sentAt,
      this.claimsLazily(node, task),
      // Copies are the rule for a join (its racing deciders) and for a redelivery or a check.
      dispatchMode(this.ctx, node) === "join" || delivery.receiveCount !== 1 || message.check === true,
    );
    if (!claim.ok) return this.onClaimRefused(execution, graph, node, message, claim.current, delivery);
    let next = await this.runClaimed(execution, graph, node, task, claim.record, claim.fence, delivery);
    // An attempt that ran before its claim was written (attempt-fence.ts) learns only now that the
    // claim is refused: handled as a claim refused up front would have been.
    const refused = claim.fence.refusal;
    if (refused) return this.onClaimRefused(execution, graph, node, message, refused.current, delivery);
    // Continuation: a ready direct child runs in this same invocation (no queue round trip), while
    // the budget allows and it is expected to fit in the invocation's remaining time (worker-time.ts:
    // by its expected run time, since under the deployed defaults its whole timeout never fits);
    // otherwise it is sent. One that overruns the guess is cut at the deadline like any attempt.
    //
    // The execution is not read again before the child. Nothing the child uses of it can have
    // changed (its id and input are fixed once it runs). Whether it ended meanwhile a read could not
    // settle either (an eventually consistent copy may predate the end), and it need not: the
    // parent's completion was conditioned on `notCancelRequested`, so no end had reached the parent
    // by then, and an end after it writes the execution first, then its cleanup
    // (Propagation.cancelOutstanding) visits what is outstanding — the child's record once it is
    // claimed (RUNNING: told to stop, which its heartbeat hears and its completion write refuses),
    // or, not claimed yet, the child itself as a node with no record whose parent completed
    // (cancelled, so the claim below is refused). A cleanup cut short is finished by the sweeper.
    for (let budget = this.ctx.maxContinuations; next; budget--) {
      const kept = next;
      const child = kept.node;
      next = undefined;
      const childTask = this.ctx.tasks.get(child.type);
      const fits =
        budget > 0 &&
        childTask !== undefined &&
        delivery.deadline !== undefined &&
        mayContinue(
          child,
          expectedRunMs(childTask, child, this.ctx.runTimes.longest(runKey(execution, child))),
          clock.now(),
          delivery.deadline,
        );
      if (!fits || !childTask) {
        await this.propagation.sendByMessage(execution, [kept]);
        return;
      }
      try {
        const lazy = this.claimsLazily(child, childTask);
        const childClaim = await this.claim(execution, graph, kept, 1, clock.now(), lazy);
        // Refused: another claim (a duplicate message of a join's racing deciders, a redelivery)
        // or an end got there first, and carries it on.
        if (!childClaim.ok) return;
        const { record, fence } = childClaim;
        next = await this.runClaimed(execution, graph, child, childTask, record, fence, delivery, true);
      } catch (error) {
        // The parent's work is done: a failure here must not fail the parent's message. The child
        // gets its own message instead (its own retries and dead-letter path); a duplicate of it,
        // if the child was claimed after all, is refused by its claim. A child that completed — or
        // was skipped (its `when`) — its propagation cut short, has it driven again here: a
        // first-time copy of its message would be dropped as a copy (onClaimRefused; simulation
        // seed 1541 with `--limits`: a skip's cascade cut by a store fault, its dependants never
        // decided).
        const status = (await this.ctx.store.getNode(execution.executionId, child.id))?.status;
        const ended = status === "COMPLETED" || status === "SKIPPED";
        logger.warn(
          ended
            ? "continuation failed after the child ended; its propagation is driven again"
            : "continuation failed; the child is sent as its own task",
          {
            executionId: execution.executionId,
            nodeId: child.id,
            error: error instanceof Error ? error.message : String(error),
          },
        );
        if (ended)
          await this.propagation.afterCompletion(execution, graph, child, {
            recovery: true,
            skipped: status === "SKIPPED",
          });
        else await this.propagation.sendByMessage(execution, [kept]);
        return;
      }
    }
  }

  /**
   * Claims a node with a new lease: from QUEUED at the message's attempt, or — the first attempt of
   * a direct or join node — straight from PENDING, recording when it was queued (its message's send
   * time) and, for an `any`/`count:N` join, the dependencies its message carries as its inputs.
   * Such a node cancelled before its claim and revived by a redrive is QUEUED at attempt 1.
   *
   * `lazy` (a handler's first attempt of such a node, neither a waiting kind nor a map's item): the
   * claim is not written here but with the attempt's first write (attempt-fence.ts); the record
   * answered is the one it will write.
   */
  private async claim(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    { node, deps }: ByMessage,
    attempt: number,
    queuedAt: number | undefined,
    lazy: boolean,
    /** Read the node before running it unclaimed: the message may be a copy (a redelivery, a join's). */
    peek = false,
  ): Promise<Outcome<NodeRecord> & { fence: AttemptFence }> {
    const now = this.ctx.clock.now();
    const lease: Lease = { token: this.ctx.ids.token(), expiresAt: now + this.ctx.leaseMs };
    // The event that begins the attempt carries its span (domain/trace.ts): once per attempt, as
    // every byte of a node's history is written again by each later write of its item.
    const span = attemptTrace(execution, node.id, attempt);
    const mode = dispatchMode(this.ctx, node);
    const carriesDeps = messageCarriesDeps(mode, node);
    const inputs = carriesDeps ? validMessageDeps(node, deps) : undefined;
    if (carriesDeps && deps !== undefined && !inputs)
      this.ctx.logger.warn("a join's message with invalid dependencies cannot claim it from PENDING", {
        executionId: execution.executionId,
        nodeId: node.id,
      });
    const byMessage = attempt === 1 && claimedByMessage(mode) && (!carriesDeps || inputs !== undefined);
    // Made with the write that carries them (history-stamps.ts): queued (by its message), then started.
    const started = () => traced(nodeEvent(this.ctx, HISTORY.nodeStarted, now, node.id, attempt), span);
    const fromPending: ClaimWay = {
      condition: { status: ["PENDING"], attempt: 0 },
      patch: {
        status: "RUNNING",
        attempt: 1,
        startedAt: now,
        queuedAt: queuedAt ?? now,
        ...(inputs ? { okDeps: inputs } : {}),
      },
      events: [
        nodeEvent(this.ctx, HISTORY.nodeQueued, Math.min(queuedAt ?? now, now), node.id, 1),
        started(),
      ],
    };
    const fromQueued = (recordInputs: boolean): ClaimWay => ({
      condition: { status: ["QUEUED"], attempt, dueBy: now },
      patch: {
        status: "RUNNING",
        startedAt: now,
        ...(recordInputs && inputs ? { okDeps: inputs } : {}),
        // It held a slot of its limits to get here (engine/slots.ts): no longer waiting.
        ...(node.concurrency ? { waitingFor: null } : {}),
      },
      events: [started()],
    });
    const claimed = async (record: NodeRecord) => {
      nodeStarted(this.ctx, record);
      await publishNodeEvent(this.ctx, execution, graph, "Node Started", node.id, attempt);
    };
    if (lazy && byMessage) {
      // A revived node (QUEUED at attempt 1) keeps the inputs this attempt ran with.
      const ways = [fromPending, fromQueued(true)];
      if (peek) {
        // A strongly consistent read costs a fifth of the claim's write (the store's getNode).
        const current = await this.ctx.store.getNode(execution.executionId, node.id);
        if (!claimable(current, ways)) return { ok: false, current, fence: AttemptFence.held(lease) };
      }
      const record: NodeRecord = {
        executionId: execution.executionId,
        nodeId: node.id,
        status: "RUNNING",
        attempt: 1,
        okDeps: inputs ?? [],
        badDeps: [],
        lease,
        startedAt: now,
        queuedAt: queuedAt ?? now,
      };
      // Its metric is the claim's (when it was queued and started), whatever write carries it.
      const fence = AttemptFence.unclaimed(lease, ways, () => claimed(record));
      return { ok: true, record, fence };
    }
    const write: NodeWriter = (condition, patch, events) =>
      this.ctx.store.transitionNode(execution.executionId, node.id, condition, patch, events);
    const fence = AttemptFence.unclaimed(
      lease,
      byMessage ? [fromPending, fromQueued(false)] : [fromQueued(false)],
      claimed,
    );
    const result = await fence.claim(write, lease);
    return { ...result, fence: AttemptFence.held(lease) };
  }

  private async runClaimed(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    task: TaskType,
    record: NodeRecord,
    fence: AttemptFence,
    delivery: Delivery,
    continued = false,
  ): Promise<ByMessage | undefined> {
    const began = this.ctx.clock.now();
    const mode = dispatchMode(this.ctx, node);
    let deps: Array<[string, Payload]>;
    let bindings: Record<string, unknown> | undefined;
    if (node.item) {
      // An item sees its element of the list, its index, and what its map saw.
      const item = await this.maps.itemContext(execution, graph, node.item);
      if (!item) {
        // Its map attempt ended (failed, or cancelled): nothing left to do.
        await this.endings.stopCancelled(execution, node, record, fence);
        return undefined;
      }
      ({ deps, bindings } = item);
    } else {
      // The onFailure handler is given every output there is (propagation.ts).
      const depIndexes = node.onFailureHandler
        ? graph.nodes.map((n) => n.index)
        : depIndexesOf(mode, node, record.okDeps);
      deps = await loadDeps(this.ctx, execution.executionId, graph, depIndexes, node);
    }
    if (task.composite) {
      // A map or a child workflow runs no handler here, but its `when` (and its skipped inputs)
      // decide whether it starts at all, as for any node (prepare.ts).
      let skip: string | undefined;
      try {
        skip = await skipReason(this.ctx, execution, node, deps);
      } catch (error) {
        const { retryAfterSeconds, ...failure } = classifyError(error, node.retry);
        await this.endings.retryOrFail(execution, graph, node, record, fence, failure, retryAfterSeconds);
        return undefined;
      }
      if (skip !== undefined) return this.endings.skipClaimed(execution, graph, node, record, fence, skip);
      await this.waiting
        .get(task.composite)
        .start({ execution, graph, node, record, lease: fence.lease, ...(bindings ? { bindings } : {}) });
      return undefined;
    }
    const result = await runAttempt(
      this.ctx,
      execution,
      node,
      task,
      record,
      fence,
      deps,
      delivery.deadline,
      bindings,
    );
    const now = this.ctx.clock.now();
    // How long the node took here (a lower bound when it was cut short): continuation's next guess.
    if (result.kind !== "leaseLost" && result.kind !== "cancelled")
      this.ctx.runTimes.record(runKey(execution, node), now - began);

    switch (result.kind) {
      case "completed": {
        const keepOne = this.ctx.maxContinuations > 0 && delivery.deadline !== undefined;
        const done = await this.endings.complete(execution, graph, node, record, fence, result.output, {
          keepOne,
          ...(delivery.arrivals ? { arrivals: delivery.arrivals } : {}),
        });
        return done.next;
      }
      case "skipped":
        return this.endings.skipClaimed(execution, graph, node, record, fence, result.reason);
      case "leaseLost":
        // Not claimed yet, its claim was refused: the caller handles it as a refused claim.
        if (fence.refusal) return undefined;
        this.ctx.logger.warn(
          "lease lost while running; the attempt's result is discarded",
          this.where(node, record),
        );
        return;
      case "cancelled":
        await this.endings.stopCancelled(execution, node, record, fence);
        return;
      case "timedOut":
        await this.endings.retryOrFail(execution, graph, node, record, fence, {
          name: "TimeoutError",
          message: `attempt ${record.attempt} exceeded the node timeout of ${node.timeoutSeconds} s`,
          retryable: true,
        });
        return undefined;
      case "workerTimeout": {
        // Ended cleanly before Lambda's timeout would kill the invocation (and its whole batch):
        // a failed attempt, retried by policy, whose error names the worker's limit.
        const error = workerTimeoutError(
          node,
          record.attempt,
          result.leftMs,
          this.ctx.workerTimeoutSeconds,
          continued,
        );
        this.ctx.logger.warn("attempt cut short by the end of its worker invocation", {
          ...this.where(node, record),
          timeoutSeconds: node.timeoutSeconds,
          leftMs: result.leftMs,
          continued,
        });
        await this.endings.retryOrFail(execution, graph, node, record, fence, error);
        return undefined;
      }
      case "threw": {
        const { retryAfterSeconds, ...error } = classifyError(result.error, node.retry);
        await this.endings.retryOrFail(execution, graph, node, record, fence, error, retryAfterSeconds);
        return undefined;
      }
    }
  }

  private async onClaimRefused(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    message: TaskMessage,
    current: NodeRecord | undefined,
    delivery: Delivery,
  ): Promise<void> {
    const now = this.ctx.clock.now();
    if (!current) return; // never queued: a message no state asked for
    switch (current.status) {
      case "QUEUED": {
        if (current.attempt !== message.attempt) {
          // A message of an earlier attempt. Redelivered (or a check), its handler may have died
          // between the retry's write and its message: the current attempt's is sent again.
          if (current.attempt > message.attempt && (delivery.receiveCount !== 1 || message.check)) {
            const again = taskMessage(execution, message.nodeId, current.attempt);
            await sendTasks(this.ctx, [{ message: again, notBefore: current.notBefore ?? now }]);
          }
          return;
        }
        if (current.notBefore !== undefined && current.notBefore > now) {
          // Early (a redelivery, or a sweeper resend): send it again for when it is due.
          const again = taskMessage(execution, message.nodeId, message.attempt, message.deps);
          await sendTasks(this.ctx, [{ message: again, notBefore: current.notBefore }]);
          return;
        }
        throw new Error("claim raced with another write; the task will come back");
      }
      case "RUNNING":
        // A node waiting for its items or its child: the message is the last lane's call to
        // assemble the map, or the child's word that it ended.
        if (current.composite && current.attempt === message.attempt) {
          await this.checkComposite(
            execution,
            graph,
            node,
            current,
            message.check || delivery.receiveCount !== 1,
          );
          return;
        }
        // An expired lease of this attempt means its worker died: recover it as a failed attempt.
        // A live one is another worker's. This message — that lease's watch, or one without a
        // lease (a redelivery consumed here while that worker may still die after its end, or the
        // node's only message: a continuation that failed after its claim sends one) — watches
        // the lease's end (checks.ts). Watches die out: each re-drive counts a hop.
        if (current.attempt === message.attempt && current.lease) {
          const { lease } = current;
          if (lease.expiresAt < now) {
            if (await this.endings.recoverExpiredLease(execution, graph, node, current))
              await this.giveBackSlots(execution, graph, node, current.attempt);
          } else if (message.lease === undefined || message.lease === lease.token) {
            const watch = leaseWatch(this.ctx, execution, node.id, current.attempt, lease, message.hops ?? 0);
            if (watch) await sendTasks(this.ctx, [watch]);
          }
        }
        return;
      case "COMPLETED":
        // A redelivery: its handler may have died between the completion and the propagation, so the
        // propagation is driven again. A message received for the first time is another send for a
        // node someone else claimed (a racing decider's, a recovery's or the sweeper's copy): the
        // claiming message — redelivered if its handler died — and the sweeper see to its
        // propagation. Driving it here too would send a copy of every child not yet claimed, each
        // of which would do the same: a wave of duplicates following the real one through a backlog.
        if (delivery.receiveCount === 1 && !message.check) return;
        await this.propagation.afterCompletion(execution, graph, node, {
          recovery: true,
          depth: message.hops,
        });
        return;
      case "SKIPPED":
        // As for COMPLETED: its dependants may not all have been reached.
        if (delivery.receiveCount === 1 && !message.check) return;
        await this.propagation.afterCompletion(execution, graph, node, {
          recovery: true,
          skipped: true,
          depth: message.hops,
        });
        return;
      case "FAILED": {
        if (failureGoesOn(node, current.error)) {
          // A failure its dependants go on from (onError continue, or caught): as for COMPLETED,
          // each child taking the edge its error gives it.
          if (delivery.receiveCount === 1 && !message.check) return;
          await this.propagation.afterCompletion(execution, graph, node, {
            recovery: true,
            failed: current.error ?? { name: "Error", message: "failed" },
            depth: message.hops,
          });
          return;
        }
        // Without the execution's `failedNode` mark, a failure of before a redrive that is reviving
        // it (dead-letters.ts): not to be applied again. Read strongly: the task's copy may be older.
        const fresh = await this.ctx.store.getExecution(execution.executionId);
        if (fresh?.failedNode === undefined) return;
        await this.propagation.afterFailure(
          fresh,
          graph,
          node,
          current.error ?? { name: "Error", message: "failed" },
        );
        return;
      }
      default:
        return;
    }
  }

  /** `recheck`: a check or a redelivery, which may follow a handling that died before arming a timer. */
  private checkComposite(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    record: NodeRecord,
    recheck = false,
  ): Promise<void> {
    if (!record.composite) return Promise.resolve();
    return this.waiting.get(record.composite.kind).check({ execution, graph, node, record, recheck });
  }

  /**
   * Most often a start's write is a moment behind its messages (executions.ts): read again after
   * short pauses, 10 ms doubling to 160 ms, before the message is sent again for later.
   */
  private async readWrittenLate(executionId: string): Promise<ExecutionRecord | undefined> {
    for (let pause = EARLY_PAUSE_MS; pause <= EARLY_PAUSE_MAX_MS; pause *= 2) {
      await this.ctx.clock.sleep(pause);
      const execution = await this.ctx.store.getExecution(executionId);
      if (execution) return execution;
    }
    return undefined;
  }

  /**
   * An attempt of a node with concurrency limits (engine/slots.ts): it runs once it holds a slot of
   * each (else it waits QUEUED, and its message is done with), and gives them back once its attempt
   * is over — unless another copy of its message runs it. A backstop look (a check) settles the
   * limits whatever became of the node.
   */
  private async handleLimited(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    task: TaskType,
    message: TaskMessage,
    delivery: Delivery,
  ): Promise<void> {
    let limits: AttemptLimit[];
    try {
      limits = await this.slots.limitsOf(execution, graph, node);
    } catch (error) {
      // A key expression that fails is the attempt's failure (terminal errors: its own).
      if (!(error instanceof TerminalError)) throw error;
      await this.endings.failUnclaimed(execution, graph, node, message.attempt, {
        name: error.name,
        message: error.message,
        retryable: false,
      });
      return;
    }
    let ran = false;
    try {
      if (!(await this.slots.enter(execution, node, message, limits))) return;
      const claim = await this.claim(
        execution,
        graph,
        { node, deps: message.deps },
        message.attempt,
        delivery.sentAt,
        false,
        true,
      );
      if (!claim.ok) {
        // Another copy of the message runs this attempt: the slot is its.
        const current = claim.current;
        ran = !(current?.status === "RUNNING" && current.attempt === message.attempt);
        // Awaited here, so the slots are given back after it (and a fault of both is not lost).
        await this.onClaimRefused(execution, graph, node, message, claim.current, delivery);
        return;
      }
      ran = true;
      const next = await this.runClaimed(execution, graph, node, task, claim.record, claim.fence, delivery);
      if (next) await this.propagation.sendByMessage(execution, [next]);
    } finally {
      if (ran) await this.slots.leave(execution.executionId, node.id, message.attempt, limits);
      if (message.check) await this.slots.settle(limits);
    }
  }

  /**
   * Whether a node's first attempt writes its claim only with its first write (attempt-fence.ts): a
   * handler's, not a waiting kind's (which holds its record while it waits) nor a map item's (whose
   * lanes are counted by their claims, map.ts).
   */
  private claimsLazily(node: GraphNode, task: TaskType): boolean {
    return this.ctx.claimAfterMs > 0 && !task.composite && !node.item;
  }

  private where(node: GraphNode, record: NodeRecord): Record<string, unknown> {
    return { executionId: record.executionId, nodeId: node.id, attempt: record.attempt };
  }
}
