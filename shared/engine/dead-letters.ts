/**
 * Dead-lettered work. Two ways in: a terminal error (recorded by the worker as it fails the node),
 * and a poison message that SQS moved to the DLQ after maxReceiveCount failed receives (recorded by
 * the DLQ function, which also fails the node). Records live in the store, so they can be listed
 * and redriven without draining a queue. Redrive revives the execution: failed and cancelled nodes
 * get a new attempt or go back to waiting, and every completed node keeps its output.
 */

import { mapLimit } from "../domain/concurrency.js";
import { failureGoesOn } from "../domain/edges.js";
import { evaluateFanIn, tallyParents } from "../domain/fan-in.js";
import type { WorkflowGraph } from "../domain/graph.js";
import type { DeadLetterRecord, ErrorInfo, ExecutionRecord, NodeRecord } from "../domain/records.js";
import type { Outcome, Page, TaskMessage } from "../ports.js";
import type { EngineContext } from "./context.js";
import { dispatchMode, fanInSource, unclaimedConditions } from "./dispatch-mode.js";
import { outcomeIn } from "./fan-in.js";
import { executionEvent, HISTORY, nodeEvent } from "./lifecycle.js";
import { itemNode } from "./map.js";
import { deadLetterRecorded } from "./metrics.js";
import type { Propagation } from "./propagation.js";
import { sendTasks, taskMessage } from "./send.js";

export interface RedriveResult {
  redriven: string[];
  skipped: Array<{ id: string; reason: string }>;
}

/** Ids sort by time, so listing the store's dead letters in id order lists them oldest first. */
export function deadLetterId(at: number, unique: string): string {
  return `${at.toString().padStart(15, "0")}-${unique}`;
}

/**
 * What a dead letter keeps of its message: not a join's dependencies, which are on its record once
 * claimed, or found again at its revival.
 */
function deadLetterTask(message: TaskMessage): Pick<TaskMessage, "executionId" | "nodeId" | "attempt"> {
  return { executionId: message.executionId, nodeId: message.nodeId, attempt: message.attempt };
}

export class DeadLetters {
  constructor(
    private readonly ctx: EngineContext,
    private readonly propagation: Propagation,
  ) {}

  /** A terminal failure: the node is already FAILED; keep the task for inspection and redrive. */
  async recordTerminal(message: TaskMessage, error: ErrorInfo): Promise<void> {
    const at = this.ctx.clock.now();
    await this.ctx.store.putDeadLetter({
      id: deadLetterId(at, this.ctx.ids.token()),
      ...deadLetterTask(message),
      error,
      at,
      reason: "terminal",
    });
    deadLetterRecorded(this.ctx);
  }

  /** A message SQS dead-lettered: fail its node (and so the execution), and keep it for redrive. */
  async recordPoison(
    message: TaskMessage,
    delivery: { messageId: string; receiveCount: number },
  ): Promise<void> {
    const now = this.ctx.clock.now();
    const execution = await this.ctx.store.getExecution(message.executionId);
    if (!execution) {
      this.ctx.logger.warn("dead-lettered task of an unknown execution dropped", { ...message });
      return;
    }
    const graph = await this.ctx.graphs.get(execution.workflow, execution.version);
    const node = graph.byId.get(message.nodeId) ?? itemNode(graph, message.nodeId);
    if (!node) return;
    const error: ErrorInfo = {
      name: "DeadLettered",
      message: `the task was received ${delivery.receiveCount} times without being processed, so SQS moved it to the dead-letter queue`,
      retryable: false,
    };
    const mode = dispatchMode(this.ctx, node);
    let failed: Outcome<NodeRecord> = { ok: false, current: undefined };
    for (const condition of unclaimedConditions(mode, message.attempt, ["QUEUED", "RUNNING"])) {
      failed = await this.propagation.writeFailure(
        message.executionId,
        node,
        condition,
        { status: "FAILED", attempt: message.attempt, error, finishedAt: now, lease: null },
        nodeEvent(this.ctx, HISTORY.nodeFailed, now, message.nodeId, message.attempt, { error }),
      );
      if (failed.ok) break;
    }
    const current = failed.ok ? undefined : failed.current;
    // Ended in a way its dependants go on from (a failure under `onError: "continue"` included).
    const goesOn =
      current?.status === "COMPLETED" ||
      current?.status === "SKIPPED" ||
      (current?.status === "FAILED" && failureGoesOn(node, current.error));
    if (goesOn && execution.status === "RUNNING") {
      // It ended, but its handling kept dying after that (its propagation is what was left): the
      // sweeper looks at the execution now, and drives what its look finds missing from where it is
      // missing. Not driven here, nor by a check message: this handler stays one write long, and a
      // check would re-drive from this node again, as far as the handlings that kept dying got —
      // in a world whose handlings never get that far, a check dead-lettered, checked again, for
      // ever (simulation seed 8096). A look records itself before it acts, so one cut short is
      // looked at again after the grace period: it progresses.
      // A map's item, though, which no look of the sweeper reads: its end is followed here, one
      // step of its lane (seed 9745: an item failed on its own, its handler died before telling
      // the map, and the map waited for ever).
      if (node.item) await this.propagation.afterCompletion(execution, graph, node, { recovery: true });
      else await this.ctx.store.transitionExecution(execution.executionId, ["RUNNING"], { sweepAt: now });
      // A failure of its own (a map's, seed 4987) is no dead letter; one this message's earlier
      // handling wrote (cut short before its record) is recorded below.
      if (current?.status !== "FAILED" || current.error?.name !== "DeadLettered") return;
    }
    if (current?.status === "QUEUED" && current.attempt > message.attempt) {
      // Retried, by this message's handling maybe, which died before the retry's message (seed
      // 2042: a map item's, which nothing else reads): sent again, a copy refused at its claim.
      await sendTasks(this.ctx, [
        {
          message: taskMessage(execution, node.id, current.attempt),
          notBefore: current.notBefore ?? now,
        },
      ]);
      return;
    }
    if (!failed.ok && failed.current?.status !== "FAILED") {
      // The node moved on (completed, or a newer attempt): this copy of the message was stale.
      this.ctx.logger.info("stale dead-lettered task ignored", {
        ...message,
        status: failed.current?.status,
      });
      return;
    }
    await this.ctx.store.putDeadLetter({
      id: deadLetterId(now, delivery.messageId),
      ...deadLetterTask(message),
      error,
      at: now,
      reason: "poison",
      receiveCount: delivery.receiveCount,
    });
    // Counted again when a redelivery records it again (its first recording was cut short).
    deadLetterRecorded(this.ctx);
    // Its failure written by this message's earlier handling, cut short before what follows it (seed
    // 9079: a map item's failure, never told to its map, which waited for ever): followed again.
    // Only while the execution runs: once it ended, what the failure led to was written (its end),
    // and following it again only lengthens this handler (seed 5491: past the queue's visibility
    // timeout, received again and again).
    const cutShort =
      execution.status === "RUNNING" &&
      current?.status === "FAILED" &&
      current.attempt === message.attempt &&
      current.error?.name === "DeadLettered";
    if (failed.ok || cutShort)
      await this.propagation.afterNodeFailed(execution, graph, node, error, { recovery: cutShort });
  }

  list(page: { limit: number; next?: string }): Promise<Page<DeadLetterRecord>> {
    return this.ctx.store.listDeadLetters(page);
  }

  /** Redrives the given dead letters, or all of them. */
  async redrive(ids?: readonly string[]): Promise<RedriveResult> {
    const result: RedriveResult = { redriven: [], skipped: [] };
    const records: DeadLetterRecord[] = [];
    if (ids) {
      for (const id of ids) {
        const record = await this.ctx.store.getDeadLetter(id);
        if (record) records.push(record);
        else result.skipped.push({ id, reason: "no such dead letter" });
      }
    } else {
      let next: string | undefined;
      do {
        const page = await this.ctx.store.listDeadLetters({ limit: 100, ...(next ? { next } : {}) });
        records.push(...page.items);
        next = page.next;
      } while (next);
    }
    for (const record of records) {
      const skipped = await this.redriveOne(record);
      if (skipped) result.skipped.push({ id: record.id, reason: skipped });
      else result.redriven.push(record.id);
    }
    return result;
  }

  /** Returns why it was skipped, or undefined when redriven. */
  private async redriveOne(record: DeadLetterRecord): Promise<string | undefined> {
    const execution = await this.ctx.store.getExecution(record.executionId);
    if (!execution) {
      await this.ctx.store.deleteDeadLetter(record.id);
      return "its execution no longer exists";
    }
    if (execution.status === "SUCCEEDED") {
      // Nothing left to redrive (say, the sweeper finished a redrive cut short before it deleted
      // this dead letter, and the execution went on to succeed): the dead letter goes.
      await this.ctx.store.deleteDeadLetter(record.id);
      return "its execution has succeeded since; the dead letter is removed";
    }
    if (execution.status !== "FAILED" && execution.status !== "RUNNING") {
      return `its execution is ${execution.status}; only a failed execution can be redriven`;
    }
    const graph = await this.ctx.graphs.get(execution.workflow, execution.version);
    const now = this.ctx.clock.now();
    let running = execution;
    if (execution.status === "FAILED") {
      // Clearing the `failedNode` mark tells the sweeper and the workers that the FAILED nodes they
      // may find before the revival below are this redrive's to revive, not failures to apply again;
      // `reviving` bars the execution from succeeding until they are.
      const revived = await this.ctx.store.transitionExecution(
        execution.executionId,
        ["FAILED"],
        {
          status: "RUNNING",
          error: null,
          finishedAt: null,
          failedNode: null,
          reviving: now,
          sweepAt: now + this.ctx.sweep.firstCheckMs,
        },
        executionEvent(this.ctx, HISTORY.executionRedriven, now, { deadLetter: record.id }),
      );
      if (revived.ok) {
        running = revived.record;
        await this.ctx.events.publish([
          {
            detailType: "Execution Redriven",
            detail: { executionId: execution.executionId, workflow: execution.workflow },
          },
        ]);
      } else if (revived.current?.status === "RUNNING")
        running = revived.current; // a racing redrive
      else return `its execution is ${revived.current?.status ?? "gone"}`;
    }
    if (!(await this.reviveNodes(running, graph)))
      return "its execution is failing again (a node failed since it was revived); redrive it once it has failed";
    // Last: a redrive cut short (a crash) keeps its dead letter, so it can be run again.
    await this.ctx.store.deleteDeadLetter(record.id);
    return undefined;
  }

  /**
   * Failed and cancelled nodes get a new attempt when ready, or go back to waiting; outputs stay.
   * Also the sweeper's repair of a redrive cut short between reviving the execution and its nodes.
   * Only failures of an earlier life are revived: false, reviving nothing, once the execution no
   * longer runs or a node failed in this life (its `failedNode` mark), which is failing it again.
   * Once they are, the execution's `reviving` mark goes: it may succeed again.
   */
  async reviveNodes(execution: ExecutionRecord, graph: WorkflowGraph): Promise<boolean> {
    const now = this.ctx.clock.now();
    const records = await this.ctx.store.listNodes(execution.executionId);
    // Read after the listing: a node listed FAILED by a failure of this life set the mark before
    // (atomically with its own write), so the mark tells every listed failure's life apart.
    const current = await this.ctx.store.getExecution(execution.executionId);
    if (current?.status !== "RUNNING" || current.failedNode !== undefined) return false;
    const byId = new Map(records.map((r) => [r.nodeId, r]));
    let revivedAny = false;
    const ready = await mapLimit(records, 16, async (record): Promise<NodeRecord | undefined> => {
      const node = graph.byId.get(record.nodeId);
      if (!node) return undefined;
      if (record.status === "RUNNING" && record.cancelRequested) {
        await this.ctx.store.transitionNode(
          execution.executionId,
          node.id,
          { status: ["RUNNING"] },
          { cancelRequested: false },
        );
        return undefined;
      }
      if (record.status === "PENDING" && record.badDeps.length > 0) {
        await this.ctx.store.transitionNode(
          execution.executionId,
          node.id,
          { status: ["PENDING"] },
          { badDeps: null },
        );
        return undefined;
      }
      // A map still waiting whose items the ended life's cleanup cancelled (it cancels items before
      // their map, and may be cut short in between) would wait for lanes that never go on: it starts
      // afresh, as a cancelled map does (simulation seed 6476).
      const stranded =
        record.status === "RUNNING" && (await this.mapItemsCancelled(execution.executionId, record));
      if (record.status !== "FAILED" && record.status !== "CANCELLED" && !stranded) return undefined;
      // A failure the workflow handled (`onError: "continue"`, a catch edge) stands: its dependants
      // went on from it.
      if (record.status === "FAILED" && failureGoesOn(node, record.error)) return undefined;
      // Only wide fan-ins record arrivals; the others can run once enough parents are done.
      const recorded = fanInSource(this.ctx.fanIn, node) === "arrivals";
      const tally = tallyParents(node.parents, (p) => outcomeIn(graph, node, p, (id) => byId.get(id)));
      const completedParents = tally.ok;
      const completed = recorded ? record.okDeps.length : completedParents.length;
      const canRun =
        record.status === "FAILED" ||
        evaluateFanIn(node.fanIn, node.parents.length, completed, 0, tally.skipped.length) === "ready";
      // A node ended before it was decided or claimed has no inputs recorded yet: those of an
      // `any`/`count:N` fan-in are the parents completed now (an `all` one's are all its parents).
      const inputs =
        canRun &&
        !recorded &&
        node.fanIn.kind !== "all" &&
        node.parents.length > 1 &&
        record.okDeps.length === 0
          ? { okDeps: completedParents }
          : {};
      const attempt = record.attempt + 1;
      // A node told to stop in the earlier life (then cancelled) is not told again in this one.
      const reset = {
        error: null,
        finishedAt: null,
        lease: null,
        notBefore: null,
        badDeps: null,
        ...(record.cancelRequested ? { cancelRequested: false } : {}),
        // What a map or workflow attempt started belongs to that attempt: the next starts afresh.
        ...(record.composite ? { composite: null } : {}),
      } as const;
      const revived = await this.ctx.store.transitionNode(
        execution.executionId,
        node.id,
        // Fenced on the life it revives: stalled across that life's failure, it writes nothing.
        { status: [record.status], attempt: record.attempt, executionLive: true },
        canRun
          ? { ...reset, ...inputs, status: "QUEUED", attempt, queuedAt: now, startedAt: null }
          : { ...reset, status: "PENDING", startedAt: null },
        nodeEvent(this.ctx, HISTORY.nodeRedriven, now, node.id, canRun ? attempt : record.attempt, {
          to: canRun ? "QUEUED" : "PENDING",
        }),
      );
      revivedAny ||= revived.ok;
      return revived.ok && canRun ? revived.record : undefined;
    });
    if (revivedAny && !(await this.stillRevivable(execution.executionId, graph))) return false;
    await this.propagation.dispatch(
      execution,
      graph,
      ready.filter((r): r is NodeRecord => r !== undefined),
    );
    if (current.reviving !== undefined)
      await this.ctx.store.transitionExecution(
        execution.executionId,
        ["RUNNING"],
        { reviving: null },
        undefined,
        { reviving: current.reviving },
      );
    return true;
  }

  /** Whether `record` is a map whose current attempt has a cancelled item (only an end cancels one). */
  private async mapItemsCancelled(executionId: string, record: NodeRecord): Promise<boolean> {
    if (record.composite?.kind !== "map") return false;
    const items = await this.ctx.store.listMapItems(executionId, record.nodeId, record.attempt, {
      statusOnly: true,
    });
    return items.some((item) => item.status === "CANCELLED");
  }

  /**
   * Whether the life these revivals are for still runs, read after their writes. A revival that
   * stalled across that life's failure (a later revival finished it, a node failed again, the end
   * was cleaned up) may have written nodes back to PENDING or QUEUED after that cleanup listed
   * them: left so, they would never run, shown CANCELLED with no NodeCancelled (simulation seed
   * 2392). They are cleaned up again, as the end would (fenced on it), and nothing is dispatched.
   */
  private async stillRevivable(executionId: string, graph: WorkflowGraph): Promise<boolean> {
    const current = await this.ctx.store.getExecution(executionId);
    if (current?.status === "RUNNING" && current.failedNode === undefined) return true;
    if (!current) return false;
    if (current.status === "RUNNING")
      // Failing again: its end's cleanup may have listed the nodes before these writes.
      await this.propagation.cancelOutstanding(executionId, "execution failing", "FAILED", graph);
    else
      await this.propagation.cleanUp(
        executionId,
        current.status,
        `execution ${current.status.toLowerCase()}`,
        graph,
      );
    return false;
  }
}
