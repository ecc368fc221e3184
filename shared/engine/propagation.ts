/**
 * What happens after a node reaches a final state: each child decided (fan-in.ts) and dispatched —
 * a direct or join child by its message alone (its claim takes one, however many are sent), an
 * `any`/`count:N` fan-in by a conditional PENDING → QUEUED write first —, inline nodes run on the
 * spot, sink bookkeeping, and the end of the execution. Every step is idempotent, so a redelivered
 * message can re-drive all of it after a crash.
 */

import { mapLimit } from "../domain/concurrency.js";
import { edgeOutcome, failureGoesOn } from "../domain/edges.js";
import { hasCode, TerminalError } from "../domain/errors.js";
import { hasExpressions } from "../domain/expressions.js";
import { edgeFrom, type GraphNode, ON_FAILURE_NODE_ID, type WorkflowGraph } from "../domain/graph.js";
import type { Payload } from "../domain/payload.js";
import type {
  ErrorInfo,
  ExecutionRecord,
  ExecutionStatus,
  HistoryEvent,
  NodeRecord,
} from "../domain/records.js";
import { isTerminalNode } from "../domain/states.js";
import { mentionsVars } from "../domain/vars.js";
import * as z from "../domain/zod.js";
import type { ExecutionGuard, NodeCondition, NodePatch, Outcome } from "../ports.js";
import type { TaskType } from "../tasks/task-type.js";
import { assignFrom } from "./assign-at-end.js";
import { cancelExecution } from "./cancellation.js";
import { leaseWatch } from "./checks.js";
import type { EngineContext } from "./context.js";
import type {
  AfterCompletionOptions,
  ByMessage,
  CompletionPropagation,
  ExecutionCleanup,
} from "./contracts.js";
import { notBeforeOf } from "./deferral.js";
import { loadDeps } from "./dep-outputs.js";
import { depIndexesOf, dispatchMode, messageCarriesDeps } from "./dispatch-mode.js";
import { type EndOf, FanInGate, type ParentEnd, parentEndOf, skipPending } from "./fan-in.js";
import {
  executionEvent,
  executionLifecycleEvent,
  HISTORY,
  nodeEvent,
  publishNodeEvent,
} from "./lifecycle.js";
import { nodeCancelled, nodeCompleted, nodeFailed } from "./metrics.js";
import { notifyParent } from "./parent-notice.js";
import { expressionScope, skipReason } from "./prepare.js";
import { type OutgoingTask, sendTasks, taskMessage } from "./send.js";
import { loadValues } from "./values.js";
import { applyVariables, readVariables, VariablesUnavailable } from "./vars.js";
import type { WaitingKinds } from "./waiting-kind.js";

const STORE_CONCURRENCY = 16;

export class Propagation implements CompletionPropagation, ExecutionCleanup {
  readonly fanIn: FanInGate;

  constructor(private readonly ctx: EngineContext) {
    this.fanIn = new FanInGate(ctx, {
      isInline: (node) => this.isInline(node),
      cancel: (executionId, nodeId, reason) => this.cancelNode(executionId, nodeId, reason),
    });
  }

  /**
   * After `node` ended in a way its dependants go on from: COMPLETED, FAILED under `onError:
   * "continue"` (both "done"), or SKIPPED (`skipped`: its direct children are skipped in turn, its
   * other children decided, domain/fan-in.ts). With `recovery` (a redelivered message found the
   * node already ended), children found QUEUED get their message again and children found ended
   * (inline ones completed, skipped ones) are re-driven, since the earlier run may have crashed
   * before sending; duplicate messages are refused by the claim.
   * With `keepOne`, one ready direct child (or else one join decided just now) is not sent but
   * returned, for the caller to run in the same invocation (and to send with `sendByMessage`, if it
   * decides not to).
   * `arrivals` gathers this invocation's shard arrivals into fewer writes (arrival-batcher.ts).
   */
  async afterCompletion(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    options: AfterCompletionOptions,
  ): Promise<ByMessage | undefined> {
    // The onFailure handler's end changes nothing else: it is recorded, and that is all.
    if (node.onFailureHandler) return undefined;
    // A map item's end moves its lane on (engine/map.ts).
    if (node.item) {
      // Written just now by this caller (not a recovery): its end is known, and need not be read.
      const ended = options.recovery ? undefined : options.failed ? "FAILED" : "COMPLETED";
      await this.itemEnded?.(execution, graph, node, ended);
      return undefined;
    }
    // How its end counts for each child, over that child's edge (domain/edges.ts): a completion
    // skips the children on its catch edges, a caught failure those on its other edges.
    const endFor = (child: GraphNode): ParentEnd =>
      options.skipped
        ? "skip"
        : parentEndOf(
            edgeOutcome(
              options.failed ? "FAILED" : "COMPLETED",
              options.failed,
              node,
              edgeFrom(child, node.index),
            ),
          );
    const ready: NodeRecord[] = [];
    const direct: ByMessage[] = [];
    const reDrive: Array<{ child: GraphNode; skipped: boolean }> = [];
    const skipped: GraphNode[] = [];
    const watches: OutgoingTask[] = [];
    const sink = node.children.length === 0 ? this.completeSink(execution, graph, node) : Promise.resolve();

    await mapLimit(node.children, STORE_CONCURRENCY, async (childIndex) => {
      const child = graph.nodes[childIndex]!;
      const end = endFor(child);
      if (dispatchMode(this.ctx, child) === "direct") {
        if (end === "bad") {
          // Not taken by a failure that leaves the execution running: never so (edges.ts), kept
          // final anyway, as after a failure for good.
          await this.fanIn.afterParent(execution, graph, child, node.index, "bad", false);
          return;
        }
        if (end === "skip") {
          // Its only parent was skipped: so is it, without a message.
          if (await skipPending(this.ctx, execution.executionId, child, "its dependency was skipped"))
            skipped.push(child);
          else if (options.recovery) {
            const current = await this.ctx.store.getNode(execution.executionId, child.id);
            if (current?.status === "SKIPPED") reDrive.push({ child, skipped: true });
          }
          return;
        }
        // Its only parent completed: it is ready, and its message is its dispatch.
        if (!options.recovery) {
          direct.push({ node: child });
          return;
        }
        const current = await this.ctx.store.getNode(execution.executionId, child.id);
        const depth = options.depth ?? 0;
        if (current?.status === "RUNNING" && current.lease && !current.composite) {
          // Run in the invocation this recovery follows, maybe (a continuation), by a worker that
          // may die after its end with no message of its own: watched to its lease's end.
          const watch = leaseWatch(this.ctx, execution, child.id, current.attempt, current.lease, depth + 1);
          if (watch) watches.push(watch);
        } else if (current?.status === "QUEUED" && current.attempt > 1) {
          // Retried where it ran (a continuation), whose worker may have died before the retry's
          // message: sent again (a copy is refused at its claim).
          watches.push({
            message: taskMessage(execution, child.id, current.attempt),
            notBefore: current.notBefore ?? this.ctx.clock.now(),
          });
        } else if (!isFinal(current)) {
          // Not run yet — or being run right now, unclaimed (a lazy claim, attempt-fence.ts), in the
          // invocation this recovery follows, which may die after its end with no message of its
          // own: its message is a check, so finding it completed drives its propagation again
          // (as far as a continuation goes).
          if (depth < this.ctx.maxContinuations)
            watches.push({
              message: { ...taskMessage(execution, child.id, 1), check: true, hops: depth + 1 },
            });
          else direct.push({ node: child });
        }
        // Completed in the invocation this recovery follows, maybe, which went on to run its own
        // child (a continuation) and died: its propagation too, as far as a continuation goes.
        // Skipped there (its `when`), likewise: its dependants and its sink (simulation seed 8035).
        else if (
          (current?.status === "COMPLETED" || current?.status === "SKIPPED") &&
          depth < this.ctx.maxContinuations
        )
          reDrive.push({ child, skipped: current.status === "SKIPPED" });
        return;
      }
      const decision = await this.fanIn.afterParent(
        execution,
        graph,
        child,
        node.index,
        end,
        options.recovery,
        options.arrivals,
      );
      if (decision.ready) ready.push(decision.ready);
      if (decision.skipped) skipped.push(child);
      // A join claimed in the invocation this recovery follows (a continuation, worker.ts) whose
      // worker may die: its claim had no message of its own, so its lease is watched.
      if (options.recovery && !decision.ready && dispatchMode(this.ctx, child) === "join") {
        const current = await this.ctx.store.getNode(execution.executionId, child.id);
        if (current?.status === "QUEUED" && current.attempt > 1)
          // Retried where it ran (a continuation), its worker dead before the retry's message
          // (simulation seed 262): sent again, as for a direct child.
          watches.push({
            message: taskMessage(execution, child.id, current.attempt),
            notBefore: current.notBefore ?? this.ctx.clock.now(),
          });
        else if (current?.status === "RUNNING" && current.lease && !current.composite) {
          const watch = leaseWatch(
            this.ctx,
            execution,
            child.id,
            current.attempt,
            current.lease,
            (options.depth ?? 0) + 1,
          );
          if (watch) watches.push(watch);
        }
      }
      if (
        decision.reDrive &&
        (decision.reDrive === "skipped" ||
          this.isInline(child) ||
          (options.depth ?? 0) < this.ctx.maxContinuations)
      )
        reDrive.push({ child, skipped: decision.reDrive === "skipped" });
    });

    // Children in definition order, so which one is kept for this invocation is deterministic.
    direct.sort((a, b) => a.node.index - b.node.index);
    let kept = options.keepOne ? direct.shift() : undefined;
    if (options.keepOne && !kept) {
      const joins = ready
        .map((record) => (record.status === "PENDING" ? this.byMessage(graph, record) : undefined))
        .filter((join): join is ByMessage => join !== undefined)
        .sort((a, b) => a.node.index - b.node.index);
      kept = joins[0];
    }
    await Promise.all([
      sink,
      this.dispatch(
        execution,
        graph,
        ready.filter((record) => record.nodeId !== kept?.node.id),
        options.recovery ? { reDriveDepth: (options.depth ?? 0) + 1 } : {},
      ),
      this.sendByMessage(execution, direct),
      sendTasks(this.ctx, watches),
    ]);
    for (const child of skipped) {
      await publishNodeEvent(this.ctx, execution, graph, "Node Skipped", child.id, 0);
      await this.afterCompletion(execution, graph, child, { recovery: false, skipped: true });
    }
    for (const { child, skipped } of reDrive)
      await this.afterCompletion(execution, graph, child, {
        recovery: true,
        skipped,
        depth: (options.depth ?? 0) + 1,
      });
    return kept;
  }

  /**
   * After `node` failed for good (written with writeFailure): fail-fast, as the brief says; or,
   * under `onError: "continue"` or caught by a child's catch edge (domain/edges.ts), its
   * dependants go on as after a completion, those that take it seeing its error.
   */
  async afterNodeFailed(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    error: ErrorInfo,
    options: { recovery: boolean } = { recovery: false },
  ): Promise<void> {
    if (failureGoesOn(node, error)) {
      await this.afterCompletion(execution, graph, node, { ...options, failed: error });
      return;
    }
    await this.afterFailure(execution, graph, node, error);
  }

  /**
   * A node's failure for good, written: with the execution's failure mark (store.failNode), unless
   * the failure leaves the execution running (`onError: "continue"`, or a catch edge takes it).
   */
  async writeFailure(
    executionId: string,
    node: GraphNode,
    condition: NodeCondition,
    patch: NodePatch,
    event: HistoryEvent | readonly HistoryEvent[],
  ): Promise<Outcome<NodeRecord>> {
    const written = failureGoesOn(node, patch.error ?? undefined)
      ? await this.ctx.store.transitionNode(executionId, node.id, condition, patch, event)
      : // Looked at by the sweeper after the grace period unless the execution's end is written
        // first (which leaves the index): the process may die in between (simulation seed 9638).
        await this.ctx.store.failNode(executionId, node.id, condition, patch, event, {
          sweepAt: this.ctx.clock.now() + this.ctx.sweep.graceMs,
        });
    // Every failure for good is written here: counted once, when its write succeeds.
    if (written.ok) nodeFailed(this.ctx, written.record);
    return written;
  }

  /** The first attempt of direct (or join) nodes: the message alone (the claim creates the record). */
  async sendByMessage(
    execution: Pick<ExecutionRecord, "executionId" | "trace">,
    nodes: readonly ByMessage[],
  ): Promise<void> {
    await sendTasks(
      this.ctx,
      nodes.map(({ node, deps }) => ({ message: taskMessage(execution, node.id, 1, deps) })),
    );
  }

  /** A join decided just now (still PENDING, not inline) as its first message carries it. */
  private byMessage(graph: WorkflowGraph, record: NodeRecord): ByMessage | undefined {
    const node = graph.byId.get(record.nodeId)!;
    const mode = dispatchMode(this.ctx, node);
    if (mode !== "join") return undefined;
    return messageCarriesDeps(mode, node) ? { node, deps: record.okDeps } : { node };
  }

  /** After `node` FAILED for good under `onError: "fail"`: fail-fast, as the brief says. */
  async afterFailure(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    error: ErrorInfo,
  ): Promise<void> {
    // Children that can no longer run are cancelled (the execution is failing anyway; this keeps
    // their records final and says why).
    await mapLimit(node.children, STORE_CONCURRENCY, (childIndex) =>
      this.fanIn.afterParent(execution, graph, graph.nodes[childIndex]!, node.index, "bad", false),
    );
    const reason = `node "${node.id}" failed: ${error.message}`;
    // Only while the failure mark stands: a redrive clears it, and this failure, applied by a
    // process that stalled across the redrive, must not fail the revived execution.
    await this.finishExecution(
      execution.executionId,
      graph,
      "FAILED",
      reason,
      { name: error.name, message: reason },
      { failedNode: true },
    );
  }

  /**
   * Moves ready nodes (QUEUED, or a join or small inline node decided just now) on: inline ones run
   * here, the others are sent. `reDriveDepth`: decided in a redelivery's recovery pass (runInline).
   */
  async dispatch(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    ready: readonly NodeRecord[],
    options: { reDriveDepth?: number } = {},
  ): Promise<void> {
    const outgoing: OutgoingTask[] = [];
    const inline: Array<{ node: GraphNode; record: NodeRecord }> = [];
    for (const record of ready) {
      const node = graph.byId.get(record.nodeId)!;
      if (this.isInline(node)) {
        inline.push({ node, record });
        continue;
      }
      // A join decided just now is still PENDING: its first message is its dispatch.
      const join = record.status === "PENDING" ? this.byMessage(graph, record) : undefined;
      const message = taskMessage(execution, record.nodeId, join ? 1 : record.attempt, join?.deps);
      outgoing.push(record.notBefore === undefined ? { message } : { message, notBefore: record.notBefore });
    }
    await sendTasks(this.ctx, outgoing);
    for (const { node, record } of inline)
      await this.runInline(execution, graph, node, record, options.reDriveDepth);
  }

  /**
   * Dispatches the entry nodes: direct ones by their message alone; deferred and inline ones are
   * queued first (PENDING → QUEUED, conditional, so once). Also the sweeper's repair when an entry
   * never started: a duplicate message is refused by the claim.
   */
  async startEntries(execution: ExecutionRecord, graph: WorkflowGraph): Promise<void> {
    const now = this.ctx.clock.now();
    const entries = graph.entries.map((index) => graph.nodes[index]!);
    const direct = entries.filter((node) => dispatchMode(this.ctx, node) === "direct");
    const queued = await mapLimit(
      entries.filter((node) => !direct.includes(node)),
      STORE_CONCURRENCY,
      async (node) => {
        const notBefore = await notBeforeOf(this.ctx, execution, graph, node, [], now);
        // A deferred entry's message (or durable timer) is armed before it is queued, so a start
        // that dies in between leaves no queued node without one (one left PENDING is queued by
        // the sweeper's first look, which repairs an entry never started). Queued once (the write
        // below is conditional); a copy is refused at its claim.
        if (notBefore !== undefined)
          await sendTasks(this.ctx, [{ message: taskMessage(execution, node.id, 1), notBefore }]);
        const result = await this.ctx.store.transitionNode(
          execution.executionId,
          node.id,
          { status: ["PENDING"] },
          { status: "QUEUED", attempt: 1, queuedAt: now, ...(notBefore !== undefined ? { notBefore } : {}) },
          nodeEvent(this.ctx, HISTORY.nodeQueued, now, node.id, 1),
        );
        return result.ok ? result.record : undefined;
      },
    );
    await Promise.all([
      this.sendByMessage(
        execution,
        direct.map((node) => ({ node })),
      ),
      this.dispatch(
        execution,
        graph,
        queued.filter((r): r is NodeRecord => r !== undefined && r.notBefore === undefined),
      ),
    ]);
  }

  /** Ends a RUNNING execution once; then cancels what is still outstanding. */
  async finishExecution(
    executionId: string,
    graph: WorkflowGraph,
    status: Exclude<ExecutionStatus, "PENDING" | "RUNNING">,
    reason: string,
    error?: ErrorInfo,
    guard: ExecutionGuard = {},
  ): Promise<void> {
    const now = this.ctx.clock.now();
    const historyType =
      status === "SUCCEEDED"
        ? HISTORY.executionSucceeded
        : status === "FAILED"
          ? HISTORY.executionFailed
          : HISTORY.executionCancelled;
    // A succeeded execution has leftovers only when an `any`/`count:N` fan-in fired early, or when
    // a map failed and the execution went on (`onError: "continue"`, or caught: an item claimed as
    // it ended may still run).
    const mayHaveLeftovers =
      status !== "SUCCEEDED" ||
      graph.nodes.some(
        (n) =>
          n.fanIn.kind !== "all" ||
          (n.type === "map" && (n.onError === "continue" || n.catchEdges.length > 0)),
      );
    // Its maps may still hold some of the root's fan-out budget (a map's completion cut short before
    // it gave its reservation back): given back below, confirmed by the sweeper after a crash.
    const mayHoldBudget = !mayHaveLeftovers && graph.nodes.some((n) => n.type === "map");
    const finished = await this.ctx.store.transitionExecution(
      executionId,
      ["RUNNING"],
      {
        status,
        finishedAt: now,
        // With leftovers to cancel, stay in the sweeper's index until the cleanup is confirmed.
        sweepAt: mayHaveLeftovers || mayHoldBudget ? now + this.ctx.sweep.graceMs : null,
        // An end counts as a sweep: a cleanup that began before it — an earlier life's, stalled
        // across a redrive — cannot confirm this end's (cleanUp).
        sweptAt: now,
        ...(error ? { error } : {}),
      },
      executionEvent(this.ctx, historyType, now, error ? { error } : undefined),
      // Fail-fast: once a node failed for good, no branch can make the execution succeed.
      status === "SUCCEEDED" ? { ...guard, noFailedNode: true } : guard,
    );
    if (finished.ok) {
      await this.ctx.events.publish([executionLifecycleEvent(finished.record, error)]);
      if (status === "FAILED" && graph.onFailure) await this.sendOnFailure(finished.record);
    }
    // Also on a repeat (a re-drive after a crash), but never when the success was refused by the guard.
    const ended = finished.ok || finished.current?.status === status;
    // The parent hears of it on a repeat too: the process that ended it may have died first, and
    // nothing else tells a parent waiting for its child.
    const child = finished.ok ? finished.record : finished.current;
    if (ended && child) await notifyParent(this.ctx, child);
    if (mayHaveLeftovers && ended) {
      await this.cleanUp(executionId, status, `execution ${status.toLowerCase()}: ${reason}`, graph);
    } else if (mayHoldBudget && ended) {
      // Nothing left running: what its maps still hold of the root's budget goes back; then it
      // leaves the sweeper's index (as cleanUp does, for the end it confirmed).
      const began = this.ctx.clock.now();
      await this.releaseReservations(executionId);
      await this.ctx.store.transitionExecution(executionId, [status], { sweepAt: null }, undefined, {
        notSweptAfter: began,
      });
    }
  }

  /**
   * Gives back every map-items reservation an execution holds (domain/fan-out.ts): once nothing of
   * it runs any more, so that its root's count of map items in flight is never short of the items
   * running. Each release happens once (its marker goes with it); a repeat finds none.
   */
  async releaseReservations(executionId: string): Promise<void> {
    const held = await this.ctx.store.listMapItemReservations(executionId);
    await mapLimit(held, STORE_CONCURRENCY, (reservation) => this.ctx.store.releaseMapItems(reservation));
  }

  /**
   * Cancels what a finished execution left outstanding; once nothing is, takes the execution out of
   * the sweeper's index. Cut short by a crash, the sweeper finishes it.
   */
  async cleanUp(
    executionId: string,
    status: ExecutionStatus,
    reason: string,
    graph?: WorkflowGraph,
  ): Promise<void> {
    const began = this.ctx.clock.now();
    const handlerOpen = status === "FAILED" ? await this.onFailureOpen(executionId, graph) : false;
    const open = (await this.cancelOutstanding(executionId, reason, status, graph)) + (handlerOpen ? 1 : 0);
    // Settled: no node or item of it runs, so its maps' reservations go back.
    if (open === 0) await this.releaseReservations(executionId);
    const next = open === 0 ? null : this.ctx.clock.now() + this.ctx.sweep.graceMs;
    // Only for the end it cleaned up: one that stalled across a redrive and the execution's next
    // end (recorded as a sweep, finishExecution) would take it out of the sweeper's index with that
    // end's cleanup cut short, its nodes left PENDING (simulation seed 2298).
    await this.ctx.store.transitionExecution(executionId, [status], { sweepAt: next }, undefined, {
      notSweptAfter: began,
    });
  }

  /** The first attempt of a failed execution's onFailure handler: its message alone (claimed once). */
  private async sendOnFailure(execution: ExecutionRecord): Promise<void> {
    await sendTasks(this.ctx, [{ message: taskMessage(execution, ON_FAILURE_NODE_ID, 1) }]);
  }

  /**
   * Whether a failed execution's onFailure handler has still to end, sending its message again
   * when it may have been lost (no record yet, or QUEUED and due): the cleanup stays unconfirmed,
   * so the sweeper keeps looking until the handler ended. A worker that died running it is
   * recovered like any attempt.
   */
  private async onFailureOpen(executionId: string, known?: WorkflowGraph): Promise<boolean> {
    const execution = await this.ctx.store.getExecution(executionId);
    if (!execution) return false;
    const graph = known ?? (await this.ctx.graphs.get(execution.workflow, execution.version));
    const handler = graph.onFailure;
    if (!handler) return false;
    const record = await this.ctx.store.getNode(executionId, handler.id);
    const now = this.ctx.clock.now();
    if (!record) await this.sendOnFailure(execution);
    else if (record.status === "QUEUED" && (record.notBefore ?? 0) <= now)
      await sendTasks(this.ctx, [{ message: taskMessage(execution, handler.id, record.attempt) }]);
    else if (record.status === "RUNNING" && record.lease && record.lease.expiresAt < now)
      await this.recoverHandler?.(execution, graph, handler, record);
    return record === undefined || !isFinal(record);
  }

  /** Cancels a child execution (engine/children.ts); one already ended stays as it is. */
  async cancelChild(childId: string, reason: string): Promise<void> {
    try {
      // Its own cleanup by a message to a worker: each level of a tree is cancelled in parallel,
      // never the whole tree within this call (cancellation.ts).
      await cancelExecution(this.ctx, this, childId, reason, { cleanUp: "message" });
    } catch (error) {
      if (!hasCode(error, "Conflict") && !hasCode(error, "NotFound")) throw error;
    }
  }

  /**
   * Set by the worker (worker.ts): the waiting kinds, whose nodes' holdings (a child execution) are
   * released when their attempt is cancelled at the execution's end.
   */
  waiting?: Pick<WaitingKinds, "release">;

  /** Set by the worker (engine/map.ts): what follows the end of a map's item. */
  itemEnded?: (
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    item: GraphNode,
    ended?: "COMPLETED" | "FAILED",
  ) => Promise<void>;

  /** Set by the engine: a dead worker's attempt of the handler is recovered like any attempt's. */
  recoverHandler?: (
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    record: NodeRecord,
  ) => Promise<void>;

  /**
   * PENDING and QUEUED nodes are cancelled now, and RUNNING ones whose worker died (lease expired);
   * live RUNNING ones are told through their heartbeat. So are nodes with no record yet: each is
   * written CANCELLED with its NodeCancelled event, as the view shows it (executions.ts), so that
   * its history says so. Among them, nodes about to start: an entry, or a direct or join node
   * whose fan-in its completed parents meet, may be claimed any moment — by its message in flight
   * (handled by a worker that read the execution before its end), or by the worker that completed
   * its parent (continuation, which does not read the execution again) — and that claim creates its
   * record — or a deferred or inline one its decider is about to queue. Cancelled first, its claim
   * (or that PENDING → QUEUED) is refused; claimed first, it is RUNNING and told to stop (simulation
   * seeds 5714, 6246). Returns how many nodes are still open.
   */
  async cancelOutstanding(
    executionId: string,
    reason: string,
    status: ExecutionStatus,
    graph?: WorkflowGraph,
  ): Promise<number> {
    const fenced = needsFence(status);
    // The onFailure handler runs after the end, not against it (onFailureOpen).
    const nodes = (await this.ctx.store.listNodes(executionId)).filter(
      (n) => n.nodeId !== ON_FAILURE_NODE_ID,
    );
    const settle = async (node: NodeRecord): Promise<boolean> =>
      (await this.settleOutstanding(executionId, [node], reason, fenced)) > 0;
    // A map's items are records apart (Store.listMapItems): settled with it — those of a map that
    // already failed or was cancelled too (one claimed as it ended may be left running).
    const items = (
      await Promise.all(
        nodes
          .filter((n) => n.status !== "COMPLETED" && n.composite?.kind === "map")
          .map((n) => this.ctx.store.listMapItems(executionId, n.nodeId, n.attempt)),
      )
    ).flat();
    const openItems = await this.settleOutstanding(
      executionId,
      items.filter((item) => !isTerminalNode(item.status)),
      reason,
      fenced,
    );
    const recorded = new Set(nodes.map((n) => n.nodeId));
    const unrecorded = ((graph ?? (await this.graphOf(executionId)))?.nodes ?? [])
      .map((node) => node.id)
      .filter((id) => !recorded.has(id));
    const stillOpen = await mapLimit([...nodes, ...unrecorded], STORE_CONCURRENCY, async (node) => {
      if (typeof node !== "string") return settle(node);
      if (await this.cancelNode(executionId, node, reason, { fenced, attempt: 0 })) return false;
      // Claimed since the listing (or cancelled by someone else): settled as what it is now. One
      // that even completed since may have readied children this listing did not see: open, so
      // the cleanup is not confirmed and runs again (the sweeper's next look) with a new listing.
      const current = await this.ctx.store.getNode(executionId, node);
      if (current?.status === "COMPLETED") return true;
      return current === undefined ? true : settle(current);
    });
    return stillOpen.filter(Boolean).length + openItems;
  }

  /**
   * Cancels nodes that did not end: PENDING and QUEUED ones now, and RUNNING ones whose worker died
   * (lease expired) or that wait holding no worker (a map: nobody would hear a request); live
   * RUNNING ones are told through their heartbeat. `fenced` as for cancelNode. Returns how many are
   * still open.
   */
  async settleOutstanding(
    executionId: string,
    records: readonly NodeRecord[],
    reason: string,
    fenced: boolean,
  ): Promise<number> {
    const now = this.ctx.clock.now();
    const open = await mapLimit(records, STORE_CONCURRENCY, async (node): Promise<boolean> => {
      const attempt = node.attempt;
      if (node.status === "PENDING" || node.status === "QUEUED") {
        return !(await this.cancelNode(executionId, node.nodeId, reason, {
          leaseExpiredBy: now,
          fenced,
          attempt,
        }));
      }
      if (node.status !== "RUNNING") return false;
      const waiting = node.composite !== undefined;
      // What a waiting node started is released with it (a child execution is cancelled, and reports
      // its cancellation back).
      if (node.composite) {
        if (!this.waiting) throw new Error("propagation has no waiting kinds: no worker was built with it");
        await this.waiting.release(node.composite, reason);
      }
      if (waiting || (node.lease?.expiresAt ?? now) < now) {
        const cancelled = await this.cancelNode(executionId, node.nodeId, reason, {
          leaseExpiredBy: waiting ? Number.MAX_SAFE_INTEGER : now,
          fenced,
          attempt,
        });
        if (cancelled || waiting) return !cancelled;
        // Its lease looked expired but a heartbeat renewed it meanwhile: its worker lives, so it is
        // told to stop like any running node. Else it would run on, never told (found by
        // test/failures/leases-and-sweeper.test.ts on a loaded machine: a 5-minute sleep ran to its
        // timeout and was retried in a cancelled execution).
      }
      if (!node.cancelRequested) {
        await this.ctx.store.transitionNode(
          executionId,
          node.nodeId,
          { status: ["RUNNING"], executionEnding: fenced },
          { cancelRequested: true },
        );
      }
      return true;
    });
    return open.filter(Boolean).length;
  }

  /** The execution's graph (undefined once the execution is gone). */
  private async graphOf(executionId: string): Promise<WorkflowGraph | undefined> {
    const execution = await this.ctx.store.getExecution(executionId);
    return execution && this.ctx.graphs.get(execution.workflow, execution.version);
  }

  /**
   * Cancels a node not yet running, or (with `leaseExpiredBy`) one whose worker died: a RUNNING node
   * whose lease expired before that instant. `fenced` (the default) conditions the cancellation on
   * the execution ending (NodeCondition.executionEnding); it may be left out only for an execution
   * seen CANCELLED or SUCCEEDED, which no redrive revives (needsFence). `attempt`, the attempt of
   * the record as the caller read it (0: no record), conditions the write too, so that its
   * NodeCancelled event names the attempt it cancelled; without it the event names none (0).
   */
  async cancelNode(
    executionId: string,
    nodeId: string,
    reason: string,
    options: { leaseExpiredBy?: number; fenced?: boolean; attempt?: number } = {},
  ): Promise<boolean> {
    const fenced = options.fenced ?? true;
    const now = this.ctx.clock.now();
    const patch = {
      status: "CANCELLED",
      finishedAt: now,
      error: { name: "Cancelled", message: reason },
    } as const;
    const attempt = options.attempt === undefined ? {} : { attempt: options.attempt };
    const event = () =>
      nodeEvent(this.ctx, HISTORY.nodeCancelled, now, nodeId, options.attempt ?? 0, { reason });
    // Fenced on its execution ending (NodeCondition.executionEnding): a cancellation decided before
    // a redrive, by a process that stalled across it, is refused.
    const result = await this.ctx.store.transitionNode(
      executionId,
      nodeId,
      { status: ["PENDING", "QUEUED"], executionEnding: fenced, ...attempt },
      patch,
      event(),
    );
    if (result.ok) nodeCancelled(this.ctx);
    if (result.ok || options.leaseExpiredBy === undefined || result.current?.status !== "RUNNING")
      return result.ok;
    // Stamped after the refusal that showed it RUNNING: ordered after the claim it read.
    const abandoned = await this.ctx.store.transitionNode(
      executionId,
      nodeId,
      { status: ["RUNNING"], leaseExpiredBy: options.leaseExpiredBy, executionEnding: fenced, ...attempt },
      { ...patch, lease: null },
      event(),
    );
    if (abandoned.ok) nodeCancelled(this.ctx);
    return abandoned.ok;
  }

  /**
   * Queues (and dispatches) a PENDING node whose fan-in is met, or cancels one that can no longer
   * be met; `endOf` gives how the other nodes ended as the caller read them.
   */
  async settlePending(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    record: NodeRecord,
    endOf: EndOf,
  ): Promise<void> {
    const decision = await this.fanIn.settle(execution, graph, node, record, endOf);
    if (decision.ready) await this.dispatch(execution, graph, [decision.ready]);
    if (decision.skipped) {
      await publishNodeEvent(this.ctx, execution, graph, "Node Skipped", node.id, 0);
      await this.afterCompletion(execution, graph, node, { recovery: false, skipped: true });
    }
  }

  private async completeSink(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
  ): Promise<void> {
    if (graph.sinks.length === 1) {
      // The only sink: its completion ends the execution (one conditional write, so once).
      await this.finishExecution(execution.executionId, graph, "SUCCEEDED", "all sinks completed");
      return;
    }
    const result = await this.ctx.store.recordSinkDone(execution.executionId, node.index);
    const current = result.ok ? result.record : result.current;
    // Also reached on a repeat: finishes an execution whose last sink was recorded before a crash,
    // or, ended already, tells its parent again (the end's handling may have died before it).
    const allDone = current !== undefined && current.sinksDone.length === graph.sinks.length;
    if (allDone && (current.status === "RUNNING" || current.status === "SUCCEEDED")) {
      await this.finishExecution(execution.executionId, graph, "SUCCEEDED", "all sinks completed");
    }
  }

  /**
   * Runs an inline node and writes its outcome in one conditional write: from PENDING (decided just
   * now; the write also records its inputs and its queued time) or from QUEUED (an entry, or a
   * redriven node). Racing deciders may both run it; only one write is accepted and propagates.
   * `reDriveDepth`: decided in a redelivery's recovery pass, at that depth (see the refusal below).
   */
  private async runInline(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    record: NodeRecord,
    reDriveDepth?: number,
  ): Promise<void> {
    const task = this.ctx.tasks.get(node.type)!;
    const now = this.ctx.clock.now();
    const fresh = record.status === "PENDING";
    const attempt = fresh ? 1 : record.attempt;
    const condition = { status: [record.status], attempt: record.attempt };
    const decided = fresh ? { attempt, okDeps: record.okDeps, queuedAt: now } : {};
    const inputs = depIndexesOf(dispatchMode(this.ctx, node), node, record.okDeps);
    const deps = await loadDeps(this.ctx, execution.executionId, graph, inputs, node);
    let output: Payload;
    try {
      const skip = await skipReason(this.ctx, execution, node, deps);
      if (skip !== undefined) {
        const skipped = await this.ctx.store.transitionNode(
          execution.executionId,
          node.id,
          condition,
          { ...decided, status: "SKIPPED", finishedAt: now },
          nodeEvent(this.ctx, HISTORY.nodeSkipped, now, node.id, attempt, { reason: skip }),
        );
        if (skipped.ok) {
          await publishNodeEvent(this.ctx, execution, graph, "Node Skipped", node.id, attempt);
          await this.afterCompletion(execution, graph, node, { recovery: false, skipped: true });
        }
        return;
      }
      output = await this.inlineOutput(execution, node, task, attempt, deps, now);
      // Before the completion below, which dispatches the dependants that read them.
      if (node.assign !== undefined) await assignFrom(this.ctx, execution, node, attempt, deps, output);
    } catch (cause) {
      const error = inlineFailure(cause);
      // A fault of the blob store is no failure of the node: it stays as it was, and the message
      // being handled (redelivered) or the sweeper decides it again (simulation finding I).
      if (error === undefined) throw cause;
      const failed = await this.writeFailure(
        execution.executionId,
        node,
        condition,
        { ...decided, status: "FAILED", error, finishedAt: now },
        nodeEvent(this.ctx, HISTORY.nodeFailed, now, node.id, attempt, { error }),
      );
      if (failed.ok) await this.afterNodeFailed(execution, graph, node, error);
      return;
    }
    // Made with the write that carries them (history-stamps.ts): queued (decided just now), then completed.
    const queuedEvent = fresh ? [nodeEvent(this.ctx, HISTORY.nodeQueued, now, node.id, attempt)] : [];
    const completedEvent = nodeEvent(this.ctx, HISTORY.nodeCompleted, now, node.id, attempt, {
      inline: true,
    });
    const completed = await this.ctx.store.transitionNode(
      execution.executionId,
      node.id,
      condition,
      { ...decided, status: "COMPLETED", output, startedAt: now, finishedAt: now },
      [...queuedEvent, completedEvent],
    );
    if (!completed.ok) {
      // Another run completed it first (a racing decider) and drives its propagation. When this run
      // follows a redelivery, the winner may be the run that died before its propagation (its sink
      // count, its dependants; simulation seed 7683): driven again from here, as a redelivery
      // would, each step conditional. Only then: a decider racing on the first delivery (every
      // raced join) would pay a second propagation for nothing (the cost model's fan-outs).
      if (
        reDriveDepth !== undefined &&
        completed.current?.status === "COMPLETED" &&
        completed.current.attempt === attempt
      )
        await this.afterCompletion(execution, graph, node, { recovery: true, depth: reDriveDepth });
      return;
    }
    // Run in the engine, not an attempt: counted, but no run time of its own.
    nodeCompleted(this.ctx, completed.record, now, false);
    await this.afterCompletion(execution, graph, node, { recovery: false });
  }

  /**
   * An inline node's output. One whose output is its dependencies' outputs (`merge`) is composed
   * from their payloads, so large values pass by reference and nothing is fetched.
   */
  private async inlineOutput(
    execution: ExecutionRecord,
    node: GraphNode,
    task: TaskType,
    attempt: number,
    deps: ReadonlyArray<readonly [string, Payload]>,
    now: number,
  ): Promise<Payload> {
    const what = `the output of node "${node.id}"`;
    if (task.outputsDeps) return this.ctx.payloads.compose(execution.executionId, deps, what);
    const controller = new AbortController();
    const input = await this.ctx.payloads.load(execution.input);
    const values = await loadValues(this.ctx, deps);
    const scope = expressionScope(execution, input, values);
    if (mentionsVars(node.params)) scope.vars = await readVariables(this.ctx, execution.executionId);
    const params = hasExpressions(node.params)
      ? await this.ctx.expressions.resolve(node.params, scope, { now: () => this.ctx.clock.now() })
      : node.params;
    const output = await runInlineTask(task, {
      input,
      params,
      deps: values,
      context: {
        executionId: execution.executionId,
        nodeId: node.id,
        attempt,
        idempotencyKey: `${execution.executionId}:${node.id}:${attempt}`,
        signal: controller.signal,
        deadline: now,
        sleep: (ms) => this.ctx.clock.sleep(ms, controller.signal),
        now: () => this.ctx.clock.now(),
        // A `vars` node's operation, once per node (engine/vars.ts).
        variables: {
          apply: (op) => applyVariables(this.ctx, execution.executionId, node.id, attempt, op, true),
        },
      },
    });
    return this.ctx.payloads.save(execution.executionId, output, what);
  }

  private isInline(node: GraphNode): boolean {
    return this.ctx.tasks.get(node.type)?.inline === true;
  }
}

/** An error an inline task's own `run` threw (or its params' parse): the node's failure. */
class InlineTaskFailure extends Error {
  constructor(readonly failure: unknown) {
    super("inline task failed");
  }
}

async function runInlineTask(
  task: TaskType,
  args: Omit<Parameters<TaskType["run"]>[0], "params"> & { params: unknown },
): Promise<unknown> {
  try {
    return await task.run({ ...args, params: z.ownParse(task.params, args.params) });
  } catch (failure) {
    // The store, not the task: the node stays as it was and the message comes back.
    if (failure instanceof VariablesUnavailable) throw failure;
    throw new InlineTaskFailure(failure);
  }
}

/** The node's failure an inline attempt ended with, or undefined for a fault of the blob store (retried). */
function inlineFailure(cause: unknown): ErrorInfo | undefined {
  // A value over a limit (PayloadError), an expression that failed (ExpressionError).
  if (cause instanceof TerminalError) return { name: cause.code, message: cause.message, retryable: false };
  if (!(cause instanceof InlineTaskFailure)) return undefined;
  const failure = cause.failure;
  // A terminal error of the task keeps its code (a `vars` limit's, SensitiveValue).
  if (failure instanceof TerminalError)
    return { name: failure.code, message: failure.message, retryable: false };
  // Params an expression made wrong, as a worker's attempt names them (prepare.ts), paths only.
  if (failure instanceof z.$ZodError) {
    const issues = failure.issues
      .slice(0, 5)
      .map((issue) => `${["params", ...issue.path.map(String)].join(".")}: ${issue.message}`)
      .join("; ");
    return {
      name: "InvalidParams",
      message: `the params, once evaluated, are invalid: ${issues}`,
      retryable: false,
    };
  }
  return { name: "InlineTaskError", message: String((failure as Error)?.message ?? failure) };
}

/**
 * Whether cancellations on behalf of an execution seen in `status` need the fence on its life: not
 * for CANCELLED or SUCCEEDED, which are final for good (only a FAILED execution is redriven), so
 * their cleanup is one plain write per node instead of a transaction.
 */
export const needsFence = (status: ExecutionStatus) => status !== "CANCELLED" && status !== "SUCCEEDED";

const isFinal = (record: NodeRecord | undefined) => record !== undefined && isTerminalNode(record.status);
