/**
 * The worker path for one task message: claim the node with a fenced lease, run the handler, then
 * complete, retry or fail it with writes conditioned on the lease token. A refused claim tells what
 * happened (duplicate, stale, early, or a crash before propagation) and is handled idempotently.
 */
import type { GraphNode, WorkflowGraph } from "../domain/graph.js";
import type { ErrorInfo, ExecutionRecord, Lease, NodeRecord } from "../domain/records.js";
import { backoffDelayMs, classifyError, shouldRetry } from "../domain/retry.js";
import type { NodeCondition, Outcome, TaskMessage } from "../ports.js";
import type { TaskType } from "../tasks/task-type.js";
import type { ArrivalBatcher } from "./arrival-batcher.js";
import { runAttempt } from "./attempt.js";
import type { EngineContext } from "./context.js";
import type { DeadLetters } from "./dead-letters.js";
import { depIndexesOf, dispatchMode, unclaimedConditions } from "./dispatch-mode.js";
import { HISTORY, nodeEvent, nodeLifecycleEvent } from "./lifecycle.js";
import { loadDeps, type Propagation } from "./propagation.js";
import { sendTasks } from "./send.js";

/** How a task message arrived: from the worker handler (an SQS record and the Lambda context). */
export interface Delivery {
  receiveCount?: number;
  /** When the message was sent (SQS SentTimestamp): a direct node's queued time. */
  sentAt?: number;
  /** When the invocation must end (epoch ms): continuation runs only while a child fits before it. */
  deadline?: number;
  /** The invocation's shard-arrival batcher, shared by the messages of one SQS batch. */
  arrivals?: ArrivalBatcher;
}

export class TaskRunner {
  constructor(
    private readonly ctx: EngineContext,
    private readonly propagation: Propagation,
    private readonly deadLetters: DeadLetters,
  ) {}

  private async publishNode(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    ...event: Parameters<typeof nodeLifecycleEvent> extends [unknown, ...infer Rest] ? Rest : never
  ): Promise<void> {
    if (graph.definition.events?.nodes)
      await this.ctx.events.publish([nodeLifecycleEvent(execution, ...event)]);
  }

  async handle(message: TaskMessage, delivery: Delivery = {}): Promise<void> {
    const { store, clock, logger } = this.ctx;
    const execution = await store.getExecution(message.executionId);
    if (!execution) {
      logger.warn("task for an unknown execution dropped", { ...message });
      return;
    }
    const graph = await this.ctx.graphs.get(execution.workflow, execution.version);
    const node = graph.byId.get(message.nodeId);
    if (!node) {
      logger.warn("task for a node the workflow does not have dropped", { ...message });
      return;
    }
    if (execution.status === "PENDING")
      throw new Error("execution is not started yet; the task will come back");
    if (execution.status !== "RUNNING") {
      // Also a node whose worker died: nobody else would ever move it out of RUNNING.
      const reason = `execution ${execution.status.toLowerCase()}`;
      const now = this.ctx.clock.now();
      await this.propagation.cancelNode(execution.executionId, node.id, reason, { leaseExpiredBy: now });
      return;
    }
    const task = this.ctx.tasks.get(node.type);
    if (!task) {
      await this.failUnclaimed(execution, graph, node, message.attempt, {
        name: "UnknownTaskType",
        message: `no handler for task type "${node.type}" in this worker`,
        retryable: false,
      });
      return;
    }

    const claim = await this.claim(execution, graph, node, message.attempt, delivery.sentAt);
    if (!claim.ok) return this.onClaimRefused(execution, graph, node, message, claim.current);
    let next = await this.runClaimed(execution, graph, node, task, claim.record, claim.lease, delivery);
    // Continuation: a ready direct child runs in this same invocation (no queue round trip), while
    // the budget and the invocation's remaining time allow; otherwise it is sent.
    for (let budget = this.ctx.maxContinuations; next; budget--) {
      const child = next;
      next = undefined;
      const childTask = this.ctx.tasks.get(child.type);
      const room =
        delivery.deadline !== undefined && clock.now() + child.timeoutSeconds * 1000 < delivery.deadline;
      const current =
        budget > 0 && room && childTask ? await store.getExecution(execution.executionId) : undefined;
      if (current !== undefined && current.status !== "RUNNING") {
        // Ended meanwhile (cancelled, failed): the child never starts.
        const reason = `execution ${current.status.toLowerCase()}`;
        await this.propagation.cancelNode(execution.executionId, child.id, reason);
        return;
      }
      if (current === undefined || !childTask) {
        await this.propagation.sendDirect(execution.executionId, [child]);
        return;
      }
      try {
        const childClaim = await this.claim(current, graph, child, 1, clock.now());
        if (!childClaim.ok) {
          await this.propagation.sendDirect(execution.executionId, [child]);
          return;
        }
        const { record, lease } = childClaim;
        next = await this.runClaimed(current, graph, child, childTask, record, lease, delivery);
      } catch (error) {
        // The parent's work is done: a failure here must not fail the parent's message. The child
        // gets its own message instead (its own retries and dead-letter path); a duplicate of it,
        // if the child was claimed after all, is refused by its claim.
        logger.warn("continuation failed; the child is sent as its own task", {
          executionId: execution.executionId,
          nodeId: child.id,
          error: error instanceof Error ? error.message : String(error),
        });
        await this.propagation.sendDirect(execution.executionId, [child]);
        return;
      }
    }
  }

  /**
   * Claims a node with a new lease: from QUEUED at the message's attempt, or — the first attempt of
   * a direct node — straight from PENDING, recording when it was queued (its message's send time).
   */
  private async claim(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    attempt: number,
    queuedAt: number | undefined,
  ): Promise<Outcome<NodeRecord> & { lease: Lease }> {
    const now = this.ctx.clock.now();
    const lease: Lease = { token: this.ctx.ids.token(), expiresAt: now + this.ctx.leaseMs };
    const started = nodeEvent(HISTORY.nodeStarted, now, node.id, attempt);
    const direct = attempt === 1 && dispatchMode(this.ctx.tasks, node) === "direct";
    const result = direct
      ? await this.ctx.store.transitionNode(
          execution.executionId,
          node.id,
          { status: ["PENDING"], attempt: 0 },
          { status: "RUNNING", attempt: 1, lease, startedAt: now, queuedAt: queuedAt ?? now },
          [nodeEvent(HISTORY.nodeQueued, Math.min(queuedAt ?? now, now), node.id, 1), started],
        )
      : await this.ctx.store.transitionNode(
          execution.executionId,
          node.id,
          { status: ["QUEUED"], attempt, dueBy: now },
          { status: "RUNNING", lease, startedAt: now },
          started,
        );
    if (result.ok) await this.publishNode(execution, graph, "Node Started", node.id, attempt);
    return { ...result, lease };
  }

  private async runClaimed(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    task: TaskType,
    record: NodeRecord,
    lease: Lease,
    delivery: Delivery,
  ): Promise<GraphNode | undefined> {
    const mode = dispatchMode(this.ctx.tasks, node);
    const deps = await loadDeps(
      this.ctx,
      execution.executionId,
      graph,
      depIndexesOf(mode, node, record.okDeps),
    );
    const result = await runAttempt(this.ctx, execution, node, task, record, lease, deps);
    const now = this.ctx.clock.now();

    switch (result.kind) {
      case "completed": {
        const done = await this.ctx.store.transitionNode(
          execution.executionId,
          node.id,
          // A node told to stop must not complete, even when it finished before its next heartbeat.
          { status: ["RUNNING"], leaseToken: lease.token, notCancelRequested: true },
          { status: "COMPLETED", output: result.output ?? null, finishedAt: now, lease: null, error: null },
          nodeEvent(HISTORY.nodeCompleted, now, node.id, record.attempt),
        );
        if (done.ok) {
          await this.publishNode(execution, graph, "Node Completed", node.id, record.attempt);
          const keepOne = this.ctx.maxContinuations > 0 && delivery.deadline !== undefined;
          return this.propagation.afterCompletion(execution, graph, node, {
            recovery: false,
            keepOne,
            ...(delivery.arrivals ? { arrivals: delivery.arrivals } : {}),
          });
        }
        if (isCancelRequested(done.current, lease)) {
          await this.stopCancelled(execution, node, record, lease);
        } else {
          this.ctx.logger.warn(
            "completion refused: the lease passed to another attempt",
            this.where(node, record),
          );
        }
        return;
      }
      case "leaseLost":
        this.ctx.logger.warn(
          "lease lost while running; the attempt's result is discarded",
          this.where(node, record),
        );
        return;
      case "cancelled":
        await this.stopCancelled(execution, node, record, lease);
        return;
      case "timedOut":
        await this.retryOrFail(execution, graph, node, record, lease, {
          name: "TimeoutError",
          message: `attempt ${record.attempt} exceeded the node timeout of ${node.timeoutSeconds} s`,
          retryable: true,
        });
        return undefined;
      case "threw": {
        const { retryAfterSeconds, ...error } = classifyError(result.error, node.retry);
        await this.retryOrFail(execution, graph, node, record, lease, error, retryAfterSeconds);
        return undefined;
      }
    }
  }

  /** Retries with backoff while attempts remain and the error is retryable; otherwise fails for good. */
  private async retryOrFail(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    record: NodeRecord,
    lease: Lease,
    error: ErrorInfo & { retryable: boolean },
    retryAfterSeconds?: number,
    onlyIfLeaseExpired = false,
  ): Promise<void> {
    const { store, clock, ids } = this.ctx;
    const now = clock.now();
    const fenced: NodeCondition = {
      status: ["RUNNING"],
      leaseToken: lease.token,
      // Recovery must lose to a heartbeat that renewed the lease meanwhile.
      ...(onlyIfLeaseExpired ? { leaseExpiredBy: now } : {}),
    };
    if (shouldRetry(node.retry, record.attempt, error.retryable)) {
      const delayMs =
        retryAfterSeconds !== undefined
          ? retryAfterSeconds * 1000
          : backoffDelayMs(node.retry, record.attempt, () => ids.random());
      const attempt = record.attempt + 1;
      const retried = await store.transitionNode(
        execution.executionId,
        node.id,
        { ...fenced, notCancelRequested: true },
        {
          status: "QUEUED",
          attempt,
          lease: null,
          notBefore: now + delayMs,
          queuedAt: now,
          error,
          startedAt: null,
        },
        nodeEvent(HISTORY.nodeRetryScheduled, now, node.id, attempt, { delayMs, error }),
      );
      if (!retried.ok && isCancelRequested(retried.current, lease)) {
        await this.stopCancelled(execution, node, record, lease);
        return;
      }
      if (retried.ok) {
        await this.publishNode(execution, graph, "Node Retry Scheduled", node.id, attempt, error);
        const message = { executionId: execution.executionId, nodeId: node.id, attempt };
        await sendTasks(this.ctx, [{ message, notBefore: now + delayMs }]);
      }
      return;
    }
    const failed = await store.failNode(
      execution.executionId,
      node.id,
      fenced,
      { status: "FAILED", error, finishedAt: now, lease: null },
      nodeEvent(HISTORY.nodeFailed, now, node.id, record.attempt, { error }),
    );
    if (!failed.ok) return;
    await this.publishNode(execution, graph, "Node Failed", node.id, record.attempt, error);
    if (!error.retryable) {
      const message = { executionId: execution.executionId, nodeId: node.id, attempt: record.attempt };
      await this.deadLetters.recordTerminal(message, error);
    }
    await this.propagation.afterFailure(execution, graph, node, error);
  }

  private async onClaimRefused(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    message: TaskMessage,
    current: NodeRecord | undefined,
  ): Promise<void> {
    const now = this.ctx.clock.now();
    if (!current) return; // never queued: a message no state asked for
    switch (current.status) {
      case "QUEUED": {
        if (current.attempt !== message.attempt) return; // a stale message of an earlier attempt
        if (current.notBefore !== undefined && current.notBefore > now) {
          // Early (a redelivery, or a sweeper resend): send it again for when it is due.
          await sendTasks(this.ctx, [{ message, notBefore: current.notBefore }]);
          return;
        }
        throw new Error("claim raced with another write; the task will come back");
      }
      case "RUNNING":
        // Another worker holds a live lease (a duplicate delivery): drop. An expired lease of this
        // attempt means its worker died: recover it as a failed attempt.
        if (current.attempt === message.attempt && current.lease && current.lease.expiresAt < now) {
          await this.recoverExpiredLease(execution, graph, node, current);
        }
        return;
      case "COMPLETED":
        await this.propagation.afterCompletion(execution, graph, node, { recovery: true });
        return;
      case "FAILED":
        await this.propagation.afterFailure(
          execution,
          graph,
          node,
          current.error ?? { name: "Error", message: "failed" },
        );
        return;
      default:
        return;
    }
  }

  /** A worker died holding the lease: count its attempt as failed and retry or fail by policy. */
  async recoverExpiredLease(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    current: NodeRecord,
  ): Promise<void> {
    const lease = current.lease;
    if (!lease) return;
    await this.retryOrFail(
      execution,
      graph,
      node,
      current,
      lease,
      {
        name: "LeaseExpired",
        message: `the worker running attempt ${current.attempt} stopped renewing its lease`,
        retryable: true,
      },
      undefined,
      true,
    );
  }

  /** The node cannot be run by this worker at all (e.g. an unknown task type): fail it without a claim. */
  private async failUnclaimed(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    attempt: number,
    error: ErrorInfo,
  ): Promise<void> {
    const now = this.ctx.clock.now();
    const mode = dispatchMode(this.ctx.tasks, node);
    for (const condition of unclaimedConditions(mode, attempt, ["QUEUED"])) {
      const failed = await this.ctx.store.failNode(
        execution.executionId,
        node.id,
        condition,
        { status: "FAILED", attempt, error, finishedAt: now },
        nodeEvent(HISTORY.nodeFailed, now, node.id, attempt, { error }),
      );
      if (!failed.ok) continue;
      await this.deadLetters.recordTerminal(
        { executionId: execution.executionId, nodeId: node.id, attempt },
        error,
      );
      await this.propagation.afterFailure(execution, graph, node, error);
      return;
    }
  }

  /** The attempt was told to stop: it ends CANCELLED (fenced, so only while it still holds the lease). */
  private async stopCancelled(
    execution: ExecutionRecord,
    node: GraphNode,
    record: NodeRecord,
    lease: Lease,
  ): Promise<void> {
    const now = this.ctx.clock.now();
    await this.ctx.store.transitionNode(
      execution.executionId,
      node.id,
      { status: ["RUNNING"], leaseToken: lease.token },
      {
        status: "CANCELLED",
        finishedAt: now,
        lease: null,
        error: { name: "Cancelled", message: "cancelled" },
      },
      nodeEvent(HISTORY.nodeCancelled, now, node.id, record.attempt),
    );
  }

  private where(node: GraphNode, record: NodeRecord): Record<string, unknown> {
    return { executionId: record.executionId, nodeId: node.id, attempt: record.attempt };
  }
}

/** Refused because cancellation was requested while this attempt still held the lease. */
function isCancelRequested(current: NodeRecord | undefined, lease: Lease): boolean {
  return (
    current?.status === "RUNNING" && current.lease?.token === lease.token && current.cancelRequested === true
  );
}
