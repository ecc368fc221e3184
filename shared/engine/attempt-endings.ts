/**
 * How an attempt ends other than by completing: a retry with backoff or a failure for good (fenced
 * on its lease token), the recovery of an attempt whose worker died, the failure of work that was
 * never claimed (an unknown task type), and the stop of an attempt told to cancel.
 */

import { failureGoesOn } from "../domain/edges.js";
import type { GraphNode, WorkflowGraph } from "../domain/graph.js";
import type { Payload } from "../domain/payload.js";
import { holdKey } from "../domain/placement.js";
import type { ErrorInfo, ExecutionRecord, Lease, NodeRecord } from "../domain/records.js";
import { backoffDelayMs, retrierFor, retryUnder } from "../domain/retry.js";
import type { NodeCondition } from "../ports.js";
import type { ArrivalBatcher } from "./arrival-batcher.js";
import { completeAttempt } from "./attempt-completion.js";
import { type AttemptFence, fenceOf, type NodeWriter } from "./attempt-fence.js";
import type { EngineContext } from "./context.js";
import type { AttemptEnd, ByMessage } from "./contracts.js";
import type { DeadLetters } from "./dead-letters.js";
import { dispatchMode, unclaimedConditions } from "./dispatch-mode.js";
import { HISTORY, nodeEvent, publishNodeEvent } from "./lifecycle.js";
import { nodeCancelled, nodeRetried } from "./metrics.js";
import type { Propagation } from "./propagation.js";
import { sendTasks, taskMessage } from "./send.js";

export class AttemptEndings {
  constructor(
    private readonly ctx: EngineContext,
    private readonly propagation: Propagation,
    private readonly deadLetters: DeadLetters,
  ) {}

  /**
   * The attempt's handler gave `output`: the node completes and its dependants go on
   * (completeAttempt); refused because it was told to stop, it ends CANCELLED. Answers whether it
   * completed, and what the propagation leaves for this invocation to run (a continuation).
   */
  async complete(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    record: NodeRecord,
    fenced: AttemptFence | Lease,
    output: Payload,
    options: { keepOne?: boolean; arrivals?: ArrivalBatcher } = {},
  ): Promise<{ completed: boolean; next?: ByMessage }> {
    const fence = fenceOf(fenced);
    const { lease } = fence;
    const done = await completeAttempt(
      this.ctx,
      this.propagation,
      execution,
      graph,
      node,
      record,
      fence,
      output,
      options,
    );
    if (done.ok) return done.next ? { completed: true, next: done.next } : { completed: true };
    // Not claimed yet: the refusal is its claim's, handled by the worker (worker.ts).
    if (fence.refusal) return { completed: false };
    if (isCancelRequested(done.current, lease)) await this.stopCancelled(execution, node, record, fence);
    else
      this.ctx.logger.warn("completion refused: the lease passed to another attempt", {
        executionId: execution.executionId,
        nodeId: node.id,
        attempt: record.attempt,
      });
    return { completed: false };
  }

  /**
   * Retries with backoff while attempts remain and the error is retryable; otherwise fails for good.
   * Answers how the attempt ended: "refused" when it did not end here (its lease had passed on, or
   * was renewed), "cancelled" when it had been told to stop.
   */
  async retryOrFail(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    record: NodeRecord,
    fenced: AttemptFence | Lease,
    error: ErrorInfo & { retryable: boolean },
    retryAfterSeconds?: number,
    onlyIfLeaseExpired = false,
  ): Promise<AttemptEnd> {
    const { store, clock, ids } = this.ctx;
    const now = clock.now();
    const fence = fenceOf(fenced);
    const { lease } = fence;
    // Recovery must lose to a heartbeat that renewed the lease meanwhile.
    const expired: Omit<NodeCondition, "status"> = onlyIfLeaseExpired ? { leaseExpiredBy: now } : {};
    const transition: NodeWriter = (condition, patch, events) =>
      store.transitionNode(execution.executionId, node.id, condition, patch, events);
    const retrier = retryUnder(node.retry, record.attempt, error);
    if (retrier) {
      const delayMs =
        retryAfterSeconds !== undefined
          ? retryAfterSeconds * 1000
          : backoffDelayMs(retrier, record.attempt, () => ids.random());
      const attempt = record.attempt + 1;
      const retried = await fence.write(
        transition,
        { ...expired, notCancelRequested: true },
        {
          status: "QUEUED",
          attempt,
          lease: null,
          notBefore: now + delayMs,
          queuedAt: now,
          error,
          startedAt: null,
          // A map's items or a child of this attempt are its own: the next attempt starts afresh.
          ...(record.composite ? { composite: null } : {}),
        },
        () => [nodeEvent(this.ctx, HISTORY.nodeRetryScheduled, now, node.id, attempt, { delayMs, error })],
      );
      if (!retried.ok && isCancelRequested(retried.current, lease))
        return (await this.stopCancelled(execution, node, record, fence)) ? "cancelled" : "refused";
      if (!retried.ok) return "refused";
      nodeRetried(this.ctx, record, now);
      await publishNodeEvent(this.ctx, execution, graph, "Node Retry Scheduled", node.id, attempt, error);
      const message = taskMessage(execution, node.id, attempt);
      await sendTasks(this.ctx, [{ message, notBefore: now + delayMs }]);
      return "retried";
    }
    // An error no retrier matches (the engine's own too: LeaseExpired, WorkerTimeout) is final.
    if (error.retryable && !retrierFor(node.retry, error)) error = { ...error, retryable: false };
    const failed = await fence.write(
      (condition, patch, events) =>
        this.propagation.writeFailure(execution.executionId, node, condition, patch, events),
      expired,
      { status: "FAILED", error, finishedAt: now, lease: null },
      () => [nodeEvent(this.ctx, HISTORY.nodeFailed, now, node.id, record.attempt, { error })],
    );
    if (!failed.ok) return "refused";
    await publishNodeEvent(this.ctx, execution, graph, "Node Failed", node.id, record.attempt, error);
    // A failure the workflow handles (`onError: "continue"`, a catch edge) is no dead letter:
    // nothing to redrive.
    if (!error.retryable && !failureGoesOn(node, error)) {
      const message = { executionId: execution.executionId, nodeId: node.id, attempt: record.attempt };
      await this.deadLetters.recordTerminal(message, error);
    }
    await this.propagation.afterNodeFailed(execution, graph, node, error);
    return "failed";
  }

  /** A worker died holding the lease: count its attempt as failed and retry or fail by policy. */
  async recoverExpiredLease(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    current: NodeRecord,
  ): Promise<boolean> {
    const lease = current.lease;
    if (!lease) return false;
    const ended = await this.retryOrFail(
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
    // An external worker's hold on the attempt is over too (engine/external.ts) — unless a
    // heartbeat renewed the lease meanwhile, and the attempt goes on.
    if (ended !== "refused" && lease.workerId)
      await this.ctx.store.releaseHold(lease.workerId, holdKey(execution.executionId, node.id), lease.token);
    return ended !== "refused";
  }

  /** The node cannot be run by this worker at all (e.g. an unknown task type): fail it without a claim. */
  async failUnclaimed(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    attempt: number,
    error: ErrorInfo,
  ): Promise<void> {
    const now = this.ctx.clock.now();
    const mode = dispatchMode(this.ctx, node);
    for (const condition of unclaimedConditions(mode, attempt, ["QUEUED"])) {
      const failed = await this.propagation.writeFailure(
        execution.executionId,
        node,
        condition,
        { status: "FAILED", attempt, error, finishedAt: now },
        nodeEvent(this.ctx, HISTORY.nodeFailed, now, node.id, attempt, { error }),
      );
      if (!failed.ok) continue;
      if (!failureGoesOn(node, error))
        await this.deadLetters.recordTerminal(
          { executionId: execution.executionId, nodeId: node.id, attempt },
          error,
        );
      await this.propagation.afterNodeFailed(execution, graph, node, error);
      return;
    }
  }

  /**
   * The claimed attempt found nothing to run (prepare.ts): it ends SKIPPED (fenced on its lease),
   * and its dependants go on from the skip.
   */
  async skipClaimed(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    record: NodeRecord,
    fenced: AttemptFence | Lease,
    reason: string,
  ): Promise<undefined> {
    const now = this.ctx.clock.now();
    const fence = fenceOf(fenced);
    const { lease } = fence;
    const skipped = await fence.write(
      (condition, patch, events) =>
        this.ctx.store.transitionNode(execution.executionId, node.id, condition, patch, events),
      { notCancelRequested: true },
      { status: "SKIPPED", finishedAt: now, lease: null },
      () => [nodeEvent(this.ctx, HISTORY.nodeSkipped, now, node.id, record.attempt, { reason })],
    );
    if (skipped.ok) {
      await publishNodeEvent(this.ctx, execution, graph, "Node Skipped", node.id, record.attempt);
      await this.propagation.afterCompletion(execution, graph, node, { recovery: false, skipped: true });
    } else if (isCancelRequested(skipped.current, lease)) {
      await this.stopCancelled(execution, node, record, fence);
    }
    return undefined;
  }

  /**
   * The attempt was told to stop: it ends CANCELLED (fenced, so only while it still holds the lease).
   * A node of the DAG is told to stop only by its execution's end (Propagation.settleOutstanding), so
   * its stop is fenced on that end too (NodeCondition.executionEnding): a redrive that revived the
   * execution meanwhile clears the request (reviveNodes), and the attempt goes on — cancelled after
   * the revival, it would leave the new life waiting for it for good (simulation seed 3197). A map's
   * item is also told to stop by its map's failure, in a running execution.
   */
  async stopCancelled(
    execution: ExecutionRecord,
    node: GraphNode,
    record: NodeRecord,
    fenced: AttemptFence | Lease,
  ): Promise<boolean> {
    const now = this.ctx.clock.now();
    // Only a claimed attempt is told to stop (cancellation is requested of a RUNNING record).
    const stopped = await fenceOf(fenced).write(
      (condition, patch, events) =>
        this.ctx.store.transitionNode(execution.executionId, node.id, condition, patch, events),
      node.item ? {} : { executionEnding: true },
      {
        status: "CANCELLED",
        finishedAt: now,
        lease: null,
        error: { name: "Cancelled", message: "cancelled" },
      },
      () => [nodeEvent(this.ctx, HISTORY.nodeCancelled, now, node.id, record.attempt)],
    );
    if (stopped.ok) nodeCancelled(this.ctx);
    return stopped.ok;
  }
}

/** Refused because cancellation was requested while this attempt still held the lease. */
export function isCancelRequested(current: NodeRecord | undefined, lease: Lease): boolean {
  return (
    current?.status === "RUNNING" && current.lease?.token === lease.token && current.cancelRequested === true
  );
}
