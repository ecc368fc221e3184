/**
 * The sweeper: a backstop that makes every accepted execution reach a terminal state whatever
 * crashed. SQS redelivery is the first line of recovery; the sweeper catches what that cannot: a
 * lease that expired after its message was deleted, a message lost after a state write, a
 * completion whose propagation never ran, a far-off wait or retry coming within reach, an
 * execution past its deadline. It reads only executions whose `sweepAt` is due (a sparse index),
 * and every repair is one of the engine's own idempotent, conditional steps, so two sweepers at
 * once are harmless; a named lease keeps normally only one working.
 */

import { mapLimit } from "../domain/concurrency.js";
import { failureGoesOn } from "../domain/edges.js";
import { requiredCompletions, tallyParents, verdictOf } from "../domain/fan-in.js";
import type { GraphNode, WorkflowGraph } from "../domain/graph.js";
import {
  type ErrorInfo,
  type ExecutionRecord,
  type NodeRecord,
  type ParentLink,
  pendingNode,
  startsChildren,
} from "../domain/records.js";
import { resendDue, resendPointAfter } from "../domain/resend.js";
import { isTerminalNode } from "../domain/states.js";
import type { EngineContext } from "./context.js";
import type { DeadLetters } from "./dead-letters.js";
import { dispatchMode, fanInSource, messageCarriesDeps, shardOf } from "./dispatch-mode.js";
import { armDeadline, timeOut } from "./execution-deadline.js";
import { type EndOf, outcomeIn } from "./fan-in.js";
import { measurePools, NO_METRICS, sweepCompleted } from "./metrics.js";
import { notifyParent } from "./parent-notice.js";
import type { Propagation } from "./propagation.js";
import { type OutgoingTask, rearmTasks, sendTasks, taskMessage } from "./send.js";
import { sweepTimers } from "./timers.js";
import type { TaskRunner } from "./worker.js";

export interface SweepReport {
  /** True when another sweeper holds the lease and this one did nothing. */
  skipped: boolean;
  executions: number;
  recoveredLeases: number;
  resent: number;
  reDriven: number;
  timedOut: number;
  /** Durable timers come within SQS's reach, sent as delayed messages (engine/timers.ts). */
  timers: number;
}

const SWEEPER_LEASE = "sweeper";
const PAGE = 100;
const MIN_REVISIT_MS = 10_000;

export class Sweeper {
  private readonly owner: string;

  constructor(
    private readonly ctx: EngineContext,
    private readonly propagation: Propagation,
    private readonly runner: TaskRunner,
    private readonly deadLetters: DeadLetters,
  ) {
    this.owner = ctx.ids.token();
  }

  /** One sweep. `force` skips the sweeper lease (it stays safe: every repair is conditional). */
  async sweep(options: { force?: boolean; leaseMs?: number } = {}): Promise<SweepReport> {
    const report: SweepReport = {
      skipped: false,
      executions: 0,
      recoveredLeases: 0,
      resent: 0,
      reDriven: 0,
      timedOut: 0,
      timers: 0,
    };
    const now = this.ctx.clock.now();
    if (!options.force) {
      const leaseMs = options.leaseMs ?? 50_000;
      const granted = await this.ctx.store.acquireLease(SWEEPER_LEASE, this.owner, now, now + leaseMs);
      if (!granted) return { ...report, skipped: true };
    }
    // The external worker pools' levels (metrics.ts), a minute apart as the sweeps are. Only with a
    // metrics port: without one (the simulation) the sweep makes exactly the calls it always made.
    if (this.ctx.metrics !== NO_METRICS) await this.measurePools(now);
    report.timers = (await sweepTimers(this.ctx, now)).sent;
    for (;;) {
      const due = await this.ctx.store.listDueExecutions(now, PAGE);
      await mapLimit(due, 4, (execution) => this.reconcile(execution, now, report));
      report.executions += due.length;
      // Each reconciled execution moved its sweepAt past `now` (or finished), so the next page is new.
      if (due.length < PAGE) {
        sweepCompleted(this.ctx);
        return report;
      }
    }
  }

  /** A failed measurement is logged, never the sweep's failure: the repairs matter more. */
  private async measurePools(now: number): Promise<void> {
    try {
      await measurePools(this.ctx, now);
    } catch (error) {
      this.ctx.logger.warn("external worker pools could not be measured", {
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }

  private async reconcile(execution: ExecutionRecord, now: number, report: SweepReport): Promise<void> {
    if (execution.status !== "RUNNING") {
      // Finished, but its cleanup was not confirmed (cut short, or running nodes still stopping);
      // its parent told again, in case the end was cut short before it (children.ts).
      await notifyParent(this.ctx, execution);
      await this.propagation.cleanUp(
        execution.executionId,
        execution.status,
        `execution ${execution.status.toLowerCase()}`,
      );
      return;
    }
    const parent = execution.parent ? await this.parentOf(execution.parent) : undefined;
    if (parent === "moved on") {
      // Its parent's node no longer waits for it: the attempt that started it was lost before it
      // recorded the child (a crash between the two), or it ended since. Nobody would use its end.
      const { executionId, nodeId, attempt } = execution.parent!;
      await this.propagation.cancelChild(
        execution.executionId,
        `node "${nodeId}" of execution ${executionId} no longer waits for it (it started it on attempt ${attempt})`,
      );
      return;
    }
    const graph = await this.ctx.graphs.get(execution.workflow, execution.version);
    if (execution.deadline !== undefined && execution.deadline <= now) {
      await timeOut(this.propagation, execution, graph);
      report.timedOut++;
      return;
    }
    const { graceMs, idleMs } = this.ctx.sweep;
    const records = new Map(
      (await this.ctx.store.listNodes(execution.executionId)).map((r) => [r.nodeId, r]),
    );
    const endOf: EndOf = (id) => records.get(id);
    // Nothing brings it back unless something of it is overdue (its messages, the timers and SQS's
    // redelivery carry the rest): its cost follows what is due, not the executions running.
    let next: number | undefined;
    const revisitAt = (at: number) => {
      next = next === undefined ? at : Math.min(next, at);
    };
    // A child whose parent's attempt does not wait for it yet: looked at again once that attempt
    // has had its time (its lease's end), to be cancelled then if it was lost before recording it.
    if (typeof parent === "number") revisitAt(parent + graceMs);
    // Its first look: the deadline's message again, in case the start was cut short before it.
    if (execution.sweptAt === undefined) await armDeadline(this.ctx, execution);

    const resend: OutgoingTask[] = [];
    const rearm: OutgoingTask[] = [];
    // Ended nodes whose dependants go on (completed, skipped, or failed under onError continue).
    const completed: Array<{ node: GraphNode; skipped: boolean; failed?: ErrorInfo }> = [];
    const failed: Array<{ node: GraphNode; record: NodeRecord }> = [];
    const pending: Array<{ node: GraphNode; record: NodeRecord }> = [];
    // Ended parents of a sharded join whose arrival is missing: re-driven like `completed`.
    const unarrived = new Map<string, { node: GraphNode; skipped: boolean; failed?: ErrorInfo }>();
    // Something overdue since `since` is sent again at thinning points (domain/resend.ts), at most
    // 16 grace periods (and at least the idle interval) apart: lost, it is resent once the grace
    // period is over; only waiting in a backlog, it gets a few duplicates rather than one per
    // sweep. The previous sweep's time tells which points have passed.
    const capMs = Math.max(idleMs, 16 * graceMs);
    const resendNow = (since: number): boolean => {
      const age = now - since;
      const previousAge =
        execution.sweptAt === undefined ? Number.NEGATIVE_INFINITY : age - (now - execution.sweptAt);
      revisitAt(since + resendPointAfter(age, graceMs, capMs));
      return resendDue(age, previousAge, graceMs, capMs);
    };
    if (graph.entries.some((i) => !records.has(graph.nodes[i]!.id))) {
      // Started, but an entry was never queued (a crash between the start and the dispatch).
      if (resendNow(execution.startedAt ?? now)) await this.propagation.startEntries(execution, graph);
    }
    for (const node of graph.nodes) {
      const record = records.get(node.id);
      const mode = dispatchMode(this.ctx, node);
      const undecided = (record?.status ?? "PENDING") === "PENDING";
      const tally = undecided
        ? tallyParents(node.parents, (p) => outcomeIn(graph, node, p, endOf))
        : undefined;
      const verdict = tally && verdictOf(node.fanIn, node.parents.length, tally);
      const sharded = undecided && fanInSource(this.ctx.fanIn, node) === "sharded";
      if (sharded && verdict === "waiting") {
        // Decided by its parents' arrivals (fan-in.ts), whatever its dispatch: an ended parent's
        // arrival may be missing (its propagation cut short), and then no later arrival meets it.
        // That parent is re-driven; until it arrives, the look stays due (simulation seeds 2736, 8280).
        for (const parent of await this.arrivalsMissing(execution, graph, node, endOf)) {
          const ended = records.get(parent.id);
          if (ended && resendNow(ended.finishedAt ?? now))
            unarrived.set(parent.id, {
              node: parent,
              skipped: ended.status === "SKIPPED",
              ...(ended.status === "FAILED" ? { failed: failureOf(ended) } : {}),
            });
        }
        continue;
      }
      if (mode === "join" && undecided) {
        // Its fan-in met and nobody claimed it: its message was lost (a crash between the deciding
        // completion and the send) or waits in a backlog. One message per join, not a re-drive of
        // each of its (maybe hundreds of) parents; an `any`/`count:N` one's carries its inputs.
        if (verdict === "skipped") {
          // Skipped by its dependencies, the deciding parent cut short before writing it.
          pending.push({ node, record: record ?? pendingNode(execution.executionId, node.id) });
          continue;
        }
        if (verdict !== "ready" || !tally) continue;
        const done = tally.ok;
        // Met when its required-th dependency was done (`all`: when the last one ended).
        const ended = node.fanIn.kind === "all" ? [...done, ...tally.skipped] : done;
        const required =
          node.fanIn.kind === "all" ? ended.length : requiredCompletions(node.fanIn, node.parents.length);
        const metAt = ended
          .map((p) => records.get(graph.nodes[p]!.id)?.finishedAt ?? now)
          .sort((a, b) => a - b)[required - 1];
        if (metAt !== undefined && resendNow(metAt))
          resend.push({
            message: taskMessage(execution, node.id, 1, messageCarriesDeps(mode, node) ? done : undefined),
          });
        continue;
      }
      if (sharded && !record) {
        // Met (or skipped) by its arrivals, with no record yet — its decider cut short after the last
        // arrival —: decided from its parents' records like any PENDING node.
        pending.push({ node, record: pendingNode(execution.executionId, node.id) });
        continue;
      }
      if (!record) continue;
      switch (record.status) {
        case "RUNNING": {
          // A live lease is its worker's, whose message comes back if it dies — but only after the
          // queue's visibility timeout (six times the worker's timeout: 30 minutes by default),
          // so a Lambda worker's lease is looked at again once it is over, as it was before looks
          // followed only what is due (the rehearsal's killed worker). An external worker's lease
          // has its own timer (engine/external.ts).
          const expiresAt = record.lease?.expiresAt ?? now;
          if (expiresAt < now) {
            await this.runner.recoverExpiredLease(execution, graph, node, record);
            report.recoveredLeases++;
            // A map or child checked just now, still waiting, moved its check time on: looked at
            // again then (the next look reads it), or the backstop ends here (simulation seed 6476).
            if (record.composite && !this.runner.waiting.armsOwnTimer(record.composite))
              revisitAt(now + graceMs);
          } else if (!record.composite && !node.runsOn) {
            revisitAt(expiresAt + graceMs);
          } else if (record.composite && !this.runner.waiting.armsOwnTimer(record.composite)) {
            // A map or a child workflow waiting: its lanes and its child tell it when they end, and
            // this look at its check time is the backstop for a word lost to a crash (a kind that
            // arms its own timer, a callback, needs none: engine/waiting-kind.ts).
            revisitAt(expiresAt + 1000);
          }
          break;
        }
        case "QUEUED": {
          // Its message, delayed or a durable timer's (engine/timers.ts), comes when it is due.
          const dueAt = record.notBefore ?? record.queuedAt ?? now;
          if (dueAt <= now) {
            if (resendNow(dueAt)) resend.push({ message: taskMessage(execution, node.id, record.attempt) });
          } else if (
            execution.sweptAt === undefined ||
            (record.queuedAt ?? now) >= execution.sweptAt - graceMs
          ) {
            // Not due yet, and queued since the last look (or before the first): its message or timer
            // armed again for its time, in case the process that queued it died before arming it
            // outside any message, which nothing would look at again. A copy is refused at its
            // claim; a timer is put once. Not an act that brings it back. (Skipping a deferred
            // entry's first attempt here, which the start arms before queuing, fails seed 2251: open.)
            rearm.push({ message: taskMessage(execution, node.id, record.attempt), notBefore: dueAt });
          }
          break;
        }
        case "COMPLETED":
        case "SKIPPED":
          if (
            this.propagationMissing(execution, graph, node, records, endOf) &&
            resendNow(record.finishedAt ?? now)
          )
            completed.push({ node, skipped: record.status === "SKIPPED" });
          break;
        case "FAILED":
          // A failure its dependants go on from (onError continue, or caught) is propagated like a
          // completion, each child taking the edge its error gives it.
          if (failureGoesOn(node, record.error)) {
            if (
              this.propagationMissing(execution, graph, node, records, endOf) &&
              resendNow(record.finishedAt ?? now)
            )
              completed.push({ node, skipped: false, failed: failureOf(record) });
          } else failed.push({ node, record });
          break;
        case "PENDING":
          // Its fan-in may be met with nobody left to queue it (a crash after the last arrival).
          pending.push({ node, record });
          break;
        default:
          break;
      }
    }
    for (const [id, parent] of unarrived)
      if (!completed.some((c) => c.node.id === id)) completed.push(parent);
    // An ended map's items (engine/map.ts): one claimed as it ended (it failed under onError
    // "continue", or was cancelled), whose worker then died, is settled here (cancelled, or told to
    // stop). A running map's items are never read here: each item's message (redelivered if its
    // worker dies) drives its lane, and the map's own check, run from here when its check time
    // passed, is the lanes' backstop (engine/map.ts, resendStalledLanes).
    for (const map of records.values()) {
      const node = graph.byId.get(map.nodeId);
      if (!node || map.composite?.kind !== "map" || map.status === "COMPLETED" || map.status === "RUNNING")
        continue;
      const open = (await this.ctx.store.listMapItems(execution.executionId, node.id, map.attempt)).filter(
        (item) => !isTerminalNode(item.status),
      );
      const reason = `map "${node.id}" ended`;
      const left = await this.propagation.settleOutstanding(execution.executionId, open, reason, false);
      if (left > 0) revisitAt(now + graceMs);
    }
    // About to act: looked at again after the grace period, in case this reconcile is cut short
    // (then, finding nothing left to do, it leaves the index).
    const decided = pending.some(({ node }) => {
      const tally = tallyParents(node.parents, (p) => outcomeIn(graph, node, p, endOf));
      const verdict = verdictOf(node.fanIn, node.parents.length, tally);
      return verdict === "ready" || verdict === "skipped";
    });
    const reviving =
      execution.failedNode === undefined && (execution.reviving !== undefined || failed.length > 0);
    if (resend.length + completed.length + failed.length > 0 || reviving || decided) revisitAt(now + graceMs);
    // The sweep is recorded before it acts, so the resends decided above count as made even when
    // this reconcile is cut short (the next sweep thins from here, not from an older sweep), and a
    // reconcile that stalled past a later sweep's record acts no more: its view is stale.
    const swept = await this.ctx.store.transitionExecution(
      execution.executionId,
      ["RUNNING"],
      { sweepAt: next === undefined ? null : Math.max(next, now + MIN_REVISIT_MS), sweptAt: now },
      undefined,
      { notSweptAfter: now },
    );
    if (!swept.ok) return;
    // A redrive cut short between reviving the execution and its nodes (its `reviving` mark, or
    // failures without the mark a failure of this life sets): finished first, rather than failing
    // the execution again, and before the completions below may end it.
    const revival = reviving;
    if (revival) await this.deadLetters.reviveNodes(execution, graph);
    await Promise.all([sendTasks(this.ctx, resend), rearmTasks(this.ctx, rearm)]);
    report.resent += resend.length;
    for (const { node, skipped, failed: error } of completed)
      await this.propagation.afterCompletion(execution, graph, node, {
        recovery: false,
        skipped,
        ...(error === undefined ? {} : { failed: error }),
      });
    if (!revival) {
      for (const { node, record } of failed) {
        await this.propagation.afterFailure(
          execution,
          graph,
          node,
          record.error ?? { name: "Error", message: "failed" },
        );
      }
    }
    for (const { node, record } of pending)
      await this.propagation.settlePending(execution, graph, node, record, endOf);
    if (graph.sinks.length > 1 && execution.sinksDone.length === graph.sinks.length) {
      // Every sink was counted but the finishing write was lost to a crash.
      await this.propagation.finishExecution(
        execution.executionId,
        graph,
        "SUCCEEDED",
        "all sinks completed",
      );
    }
    report.reDriven += completed.length + failed.length;
  }

  /**
   * Where a child execution's parent stands: "moved on" when its node went to a later attempt
   * (which starts a child of its own) or to its end; "waits" while that attempt waits for this
   * child (it hears of its end: children.ts notifyParent); else the time that attempt's lease ends
   * (claimed, it has not recorded its child yet: a crash in between would leave the child an
   * orphan, found once that lease is over).
   */
  private async parentOf(parent: ParentLink): Promise<"moved on" | "waits" | number> {
    const node = await this.ctx.store.getNode(parent.executionId, parent.nodeId);
    if (!node) return "waits"; // its parent's records are gone (retention): nothing to tell
    if (node.attempt > parent.attempt || isTerminalNode(node.status)) return "moved on";
    if (node.status === "RUNNING" && startsChildren(node.composite)) return "waits";
    return node.lease?.expiresAt ?? this.ctx.clock.now();
  }

  /**
   * The ended parents (done or skipped) of a sharded join still waiting whose arrival is missing
   * from its shards: a process cut short between a parent's end and its arrival with nothing to
   * drive that parent again (the start running inline nodes, simulation seed 9213). Unseen, the
   * join's last arrival finds its shards short, and it waits for ever.
   */
  private async arrivalsMissing(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    join: GraphNode,
    endOf: EndOf,
  ): Promise<GraphNode[]> {
    const ended = join.parents.filter((p) => {
      const outcome = outcomeIn(graph, join, p, endOf);
      return outcome === "done" || outcome === "skipped";
    });
    if (ended.length === 0) return [];
    const shards = [...new Set(ended.map((p) => shardOf(this.ctx.fanIn, join, p)))];
    const stored = await this.ctx.store.getArrivalShards(execution.executionId, join.id, shards);
    const arrived = new Set(stored.flatMap((shard) => shard.okDeps));
    return ended.filter((p) => !arrived.has(p)).map((p) => graph.nodes[p]!);
  }

  /** A completed node whose effects are not all visible: a child never reached, or a sink not counted. */
  private propagationMissing(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    records: Map<string, NodeRecord>,
    endOf: EndOf,
  ): boolean {
    // A completed sink of a RUNNING execution: the only sink finishes it; others must be counted.
    if (node.children.length === 0)
      return graph.sinks.length === 1 || !execution.sinksDone.includes(node.index);
    return node.children.some((childIndex) => {
      const child = graph.nodes[childIndex]!;
      const record = records.get(child.id);
      const mode = dispatchMode(this.ctx, child);
      if (mode === "direct") return !record;
      if (mode === "join") return false; // sent by the sweep itself, once per join (above)
      return this.propagation.fanIn.decisionDue(graph, child, record, node.index, endOf);
    });
  }
}

/** A failed record's error, as its propagation needs it (one is always written with a failure). */
function failureOf(record: Pick<NodeRecord, "error">): ErrorInfo {
  return record.error ?? { name: "Error", message: "failed" };
}
