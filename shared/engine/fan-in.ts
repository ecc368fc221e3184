/**
 * Deciding a child once one of its parents finished: cancellation once its fan-in can no longer be
 * met, or, once it is met, its dispatch. A join (a fan-in decided by reading or by shards,
 * dispatch-mode.ts) writes nothing: met once, it stays met, so its message is its dispatch and its
 * claim takes one of the racing deciders' messages — an `any`/`count:N` join's message carries the
 * dependencies its decider saw completed (they differ between deciders), and the claim records
 * those of the message it took. A wide `count:N` fan-in's dispatch is a conditional write,
 * PENDING → QUEUED, taken once whoever races; so is a deferred child's, and a wide inline one's. A
 * small inline child's decision is its completion, written by the caller that runs it. How the
 * finished parents are learned depends on the child's width (dispatch-mode.ts):
 *
 * - "read" (small fan-ins, and those one completion meets): the parent's own final write is durable
 *   before it reads the child and the other parents with strongly consistent reads, so whichever
 *   parent finishes last sees every other one finished — someone always decides, and nothing is
 *   written per edge. The dependencies seen completed are the child's inputs.
 * - "sharded" (wider `all` fan-ins): each completed parent is added once to its shard (a set, so a
 *   repeat changes nothing); the parent whose write fills a shard reads the other shards (written
 *   before read, as above, so the last to fill one sees them all full) and decides. A failed parent
 *   cancels the child at once.
 * - "arrivals" (wider `count:N`): each parent's outcome is added once to a set on the child, under
 *   a condition that refuses a repeat; the write that leaves enough completions is followed by the
 *   queue write.
 *
 * Direct children (one parent, not deferred or inline) are not decided here: their message is their
 * dispatch, except that a failed parent cancels them through `afterParent(…, "bad")`.
 *
 * The sweeper decides from the parents' records, whatever the source (`settle`, `decisionDue`).
 */
import { edgeOutcome } from "../domain/edges.js";
import {
  type DependencyOutcome,
  type ParentTally,
  requiredCompletions,
  tallyParents,
  verdictOf,
} from "../domain/fan-in.js";
import { edgeFrom, type GraphNode, type WorkflowGraph } from "../domain/graph.js";
import { type ExecutionRecord, type NodeRecord, pendingNode } from "../domain/records.js";
import type { ArrivalShard } from "../ports.js";
import type { ArrivalBatcher } from "./arrival-batcher.js";
import type { EngineContext } from "./context.js";
import { notBeforeOf } from "./deferral.js";
import { dispatchMode, fanInSource, shardCount, shardOf, shardParents } from "./dispatch-mode.js";
import { HISTORY, nodeEvent } from "./lifecycle.js";

export interface ChildDecision {
  /**
   * QUEUED at attempt 1, to be sent by the caller; or, still PENDING, a join to be sent (its
   * message is its dispatch) or a small inline node to run.
   */
  ready?: NodeRecord;
  /**
   * A recovery found the child already ended — completed (inline, or by a continuation), or skipped —:
   * its own propagation is to be re-driven.
   */
  reDrive?: "completed" | "skipped";
  /** Skipped just now (its fan-in can no longer be met because of skips): its dependants are next. */
  skipped?: boolean;
}

/**
 * How a parent ended, as its children count it: "ok" (done: completed, or failed under `onError:
 * "continue"`), "skip" (skipped), "bad" (failed for good, or cancelled).
 */
export type ParentEnd = "ok" | "skip" | "bad";

export interface FanInHooks {
  isInline(node: GraphNode): boolean;
  cancel(executionId: string, nodeId: string, reason: string): Promise<unknown>;
}

/**
 * How an execution's nodes ended as the caller knows them (no record: PENDING): the status, and the
 * error a catch edge's `errors` match.
 */
export type EndOf = (nodeId: string) => Pick<NodeRecord, "status" | "error"> | undefined;

export class FanInGate {
  constructor(
    private readonly ctx: EngineContext,
    private readonly hooks: FanInHooks,
  ) {}

  /**
   * After the parent `parentIndex` of `child` ended (ParentEnd). A bad outcome only ever cancels:
   * queueing is left to the parents that complete; a skip may skip the child, or meet an `all`
   * fan-in (whose claim then skips the child if no input was done: worker.ts). With `recovery`
   * (the parent's propagation may have been cut short before), a child found QUEUED is handed back
   * to be sent again and an inline child found completed to be re-driven.
   */
  async afterParent(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    child: GraphNode,
    parentIndex: number,
    outcome: ParentEnd,
    recovery: boolean,
    arrivals?: ArrivalBatcher,
  ): Promise<ChildDecision> {
    switch (fanInSource(this.ctx.fanIn, child)) {
      case "read":
        return this.byReading(execution, graph, child, parentIndex, outcome, recovery);
      case "arrivals":
        return this.byArrival(execution, graph, child, parentIndex, outcome, recovery);
      case "sharded":
        return this.byShards(execution, graph, child, parentIndex, outcome, recovery, arrivals);
    }
  }

  /**
   * Decides a child found PENDING by someone who knows every node's status (the sweeper, after a
   * crash cut a parent's propagation short).
   */
  async settle(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    child: GraphNode,
    record: NodeRecord,
    endOf: EndOf,
  ): Promise<ChildDecision> {
    if (record.status !== "PENDING") return {};
    return this.decide(execution, graph, child, this.tally(graph, child, record, endOf), "ok");
  }

  /** True when a child still PENDING (or without a record) has a decision due. */
  decisionDue(
    graph: WorkflowGraph,
    child: GraphNode,
    record: NodeRecord | undefined,
    parentIndex: number,
    endOf: EndOf,
  ): boolean {
    if (record && record.status !== "PENDING") return false;
    if (fanInSource(this.ctx.fanIn, child) === "arrivals") return !record?.okDeps.includes(parentIndex);
    return (
      verdictOf(child.fanIn, child.parents.length, this.tally(graph, child, record, endOf)) !== "waiting"
    );
  }

  private tally(
    graph: WorkflowGraph,
    child: GraphNode,
    record: NodeRecord | undefined,
    endOf: EndOf,
  ): ParentTally {
    // Arrivals are recorded only for fan-ins whose parents are never skipped (dispatch-mode.ts).
    if (fanInSource(this.ctx.fanIn, child) === "arrivals")
      return { ok: record?.okDeps ?? [], bad: record?.badDeps ?? [], skipped: [] };
    return tallyParents(child.parents, (p) => outcomeIn(graph, child, p, endOf));
  }

  private async byReading(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    child: GraphNode,
    parentIndex: number,
    outcome: ParentEnd,
    recovery: boolean,
  ): Promise<ChildDecision> {
    const { executionId } = execution;
    const parentId = graph.nodes[parentIndex]!.id;
    const others = child.parents.filter((p) => p !== parentIndex).map((p) => graph.nodes[p]!.id);
    // An `all` child can have left PENDING only once every parent completed: reading it pays off
    // only where one completion may already have fired it (any, count:N: claimed already, so no
    // message is due) or in a recovery.
    const all = child.fanIn.kind === "all";
    const readChild = recovery || !all;
    // The others matter only when this outcome alone does not decide: a completion meets a fan-in
    // needing one (any, count:1), and one failed parent makes `all` unsatisfiable. A skip always
    // reads them: whether the child runs or is skipped depends on how they ended.
    const readOthers =
      outcome === "ok"
        ? requiredCompletions(child.fanIn, child.parents.length) > 1
        : outcome === "skip" || !all;
    const ids = [...(readChild ? [child.id] : []), ...(readOthers ? others : [])];
    const read = ids.length > 0 ? await this.ctx.store.getNodes(executionId, ids) : [];
    const byId = new Map(read.map((r) => [r.nodeId, r]));
    const current = byId.get(child.id) ?? pendingNode(executionId, child.id);
    if (current.status !== "PENDING") return this.alreadyDecided(current, outcome, recovery);
    const outcomeOf = (p: number): DependencyOutcome =>
      graph.nodes[p]!.id === parentId
        ? ({ ok: "done", skip: "skipped", bad: "bad" } as const)[outcome]
        : outcomeIn(graph, child, p, (id) => byId.get(id));
    return this.decide(execution, graph, child, tallyParents(child.parents, outcomeOf), outcome);
  }

  private async byArrival(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    child: GraphNode,
    parentIndex: number,
    outcome: ParentEnd,
    recovery: boolean,
  ): Promise<ChildDecision> {
    if (outcome === "skip")
      // dispatch-mode.ts never records arrivals for a fan-in whose parents may be skipped.
      throw new Error(`fan-in of "${child.id}" records arrivals, but its parent was skipped`);
    const arrival = await this.ctx.store.recordArrival({
      executionId: execution.executionId,
      childId: child.id,
      parentIndex,
      outcome,
      now: this.ctx.clock.now(),
    });
    const record = arrival.node;
    if (record.status === "PENDING")
      return this.decide(
        execution,
        graph,
        child,
        { ok: record.okDeps, bad: record.badDeps, skipped: [] },
        outcome,
      );
    return this.alreadyDecided(record, outcome, recovery);
  }

  private async byShards(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    child: GraphNode,
    parentIndex: number,
    outcome: ParentEnd,
    recovery: boolean,
    arrivals: ArrivalBatcher | undefined,
  ): Promise<ChildDecision> {
    // A skipped parent arrives like a completed one: an `all` fan-in is met once every parent
    // ended, and the child's claim tells whether any of them was done (else it is skipped).
    const { executionId } = execution;
    if (outcome === "bad") {
      // One failed parent: an `all` fan-in can no longer be met.
      await this.hooks.cancel(executionId, child.id, "fan-in can no longer be met");
      return {};
    }
    if (recovery) {
      // The earlier run may have decided already and been cut short before sending.
      const current = await this.ctx.store.getNode(executionId, child.id);
      if (current && current.status !== "PENDING") return this.alreadyDecided(current, outcome, true);
    }
    const settings = this.ctx.fanIn;
    const shard = shardOf(settings, child, parentIndex);
    const request = {
      executionId,
      childId: child.id,
      shard,
      parentIndexes: [parentIndex],
      now: this.ctx.clock.now(),
    };
    const mine = arrivals
      ? await arrivals.record(request)
      : (await this.ctx.store.recordShardArrival(request)).shard;
    // Also on a repeat: a parent that filled its shard may have been cut short before reading.
    const full = (s: ArrivalShard | undefined, index: number) =>
      (s?.okDeps.length ?? 0) >= shardParents(settings, child, index).length;
    if (!full(mine, shard)) return {};
    const others = Array.from({ length: shardCount(settings, child) }, (_, i) => i).filter(
      (i) => i !== shard,
    );
    const stored = new Map(
      (await this.ctx.store.getArrivalShards(executionId, child.id, others)).map((s) => [s.shard, s]),
    );
    if (!others.every((i) => full(stored.get(i), i))) return {};
    return this.decide(execution, graph, child, { ok: [...child.parents], bad: [], skipped: [] }, "ok");
  }

  private alreadyDecided(record: NodeRecord, outcome: ParentEnd, recovery: boolean): ChildDecision {
    if (outcome === "bad" || !recovery) return {};
    if (record.status === "QUEUED" && record.attempt === 1) return { ready: record };
    // Completed: inline, or run in the invocation this recovery follows (a continuation), which may
    // have died running its own child with no message of its own (seed 3160): driven again, as far
    // as a continuation goes (propagation.ts).
    if (record.status === "COMPLETED") return { reDrive: "completed" };
    if (record.status === "SKIPPED") return { reDrive: "skipped" };
    return {};
  }

  /** The conditional decision for a PENDING child, given how its parents ended. */
  private async decide(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    child: GraphNode,
    tally: ParentTally,
    outcome: ParentEnd,
  ): Promise<ChildDecision> {
    const verdict = verdictOf(child.fanIn, child.parents.length, tally);
    if (verdict === "unsatisfiable") {
      await this.hooks.cancel(execution.executionId, child.id, "fan-in can no longer be met");
      return {};
    }
    if (verdict === "skipped") {
      // Final once reached (skipped parents stay skipped), so whoever decides writes the same; the
      // write is conditional on PENDING, so one decider goes on to the child's dependants.
      const skipped = await skipPending(
        this.ctx,
        execution.executionId,
        child,
        "its dependencies were skipped",
      );
      return skipped ? { skipped: true } : {};
    }
    // A bad outcome never readies a child (the execution is failing); a skip may: the last parent
    // of an `all` fan-in to end may be a skipped one.
    if (verdict !== "ready" || outcome === "bad") return {};
    const ready = await this.readyChild(execution, graph, child, tally);
    return ready ? { ready } : {};
  }

  /** The dispatch of a child whose fan-in is met (see decide). */
  private async readyChild(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    child: GraphNode,
    tally: ParentTally,
  ): Promise<NodeRecord | undefined> {
    // No queue write for two kinds; the child goes back still PENDING, with its inputs:
    // - a join: its message, sent by the caller, is its dispatch (dispatch-mode.ts), and carries
    //   these inputs when they are not all its parents;
    // - a small inline child, run at once and written once, by its completion (conditional on
    //   PENDING, so once however many parents race). A wide one keeps the queue write, which elects
    //   one runner: racing deciders would each read all its inputs (a 500-wide merge read 3,500
    //   extra items in the benchmark).
    const smallInline = this.hooks.isInline(child) && fanInSource(this.ctx.fanIn, child) === "read";
    if (smallInline || dispatchMode(this.ctx, child) === "join")
      return { ...pendingNode(execution.executionId, child.id), okDeps: [...tally.ok].sort((a, b) => a - b) };
    const now = this.ctx.clock.now();
    const notBefore = await notBeforeOf(this.ctx, execution, graph, child, tally.ok, now);
    const queued = await this.ctx.store.transitionNode(
      execution.executionId,
      child.id,
      { status: ["PENDING"] },
      {
        status: "QUEUED",
        attempt: 1,
        queuedAt: now,
        // A fan-in that records arrivals on the child has its okDeps there already.
        ...(fanInSource(this.ctx.fanIn, child) !== "arrivals" ? { okDeps: tally.ok } : {}),
        ...(notBefore !== undefined ? { notBefore } : {}),
      },
      nodeEvent(this.ctx, HISTORY.nodeQueued, now, child.id, 1),
    );
    return queued.ok ? queued.record : undefined;
  }
}

/** How a parent's end, as the caller knows it, counts for `child` over their edge (domain/edges.ts). */
export function outcomeIn(
  graph: WorkflowGraph,
  child: GraphNode,
  parentIndex: number,
  endOf: EndOf,
): DependencyOutcome {
  const parent = graph.nodes[parentIndex]!;
  const end = endOf(parent.id);
  return edgeOutcome(end?.status, end?.error, parent, edgeFrom(child, parentIndex));
}

/** A dependency outcome as a parent's propagation passes it on (ParentEnd): open counts as bad. */
export function parentEndOf(outcome: DependencyOutcome): ParentEnd {
  return outcome === "done" ? "ok" : outcome === "skipped" ? "skip" : "bad";
}

/**
 * Skips a PENDING node (its fan-in can no longer be met because of skips, or its only parent was
 * skipped): conditional on PENDING, so once. True when this write did it.
 */
export async function skipPending(
  ctx: EngineContext,
  executionId: string,
  node: GraphNode,
  reason: string,
): Promise<boolean> {
  const now = ctx.clock.now();
  const result = await ctx.store.transitionNode(
    executionId,
    node.id,
    { status: ["PENDING"] },
    { status: "SKIPPED", finishedAt: now },
    nodeEvent(ctx, HISTORY.nodeSkipped, now, node.id, 0, { reason }),
  );
  return result.ok;
}
