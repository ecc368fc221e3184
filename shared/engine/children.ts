/**
 * Running a `workflow` node (domain/child.ts): its claimed attempt starts a child execution —
 * idempotently, keyed by the attempt, so a redelivered message finds the child it started — and
 * writes itself waiting (RUNNING, holding no worker: its lease is the time of its next check). The
 * child's end sends the parent's node a message (parent-notice.ts); the node then completes with the
 * child's output, or fails with its error (retried by its policy, as a new child). The sweeper checks
 * a waiting node whose check time passed, so a lost message only delays it. Cancelling or failing
 * the parent cancels the child (Propagation.settleOutstanding).
 */

import { childKey, childWorkflowParamsSchema } from "../domain/child.js";
import { TerminalError } from "../domain/errors.js";
import { hasExpressions } from "../domain/expressions.js";
import type { GraphNode, WorkflowGraph } from "../domain/graph.js";
import type { ChildState, ExecutionRecord, NodeRecord } from "../domain/records.js";
import { attemptTrace } from "../domain/trace.js";
import { childOutcome, startChild } from "./child-runs.js";
import type { EngineContext } from "./context.js";
import type { FailAttempt } from "./contracts.js";
import type { Executions } from "./executions.js";
import { HISTORY, nodeEvent, traced } from "./lifecycle.js";
import type { Propagation } from "./propagation.js";
import { checkLater, completeWaiting, evaluateInScope, startWaiting } from "./waiting.js";
import type { WaitingCheck, WaitingKind, WaitingStart } from "./waiting-kind.js";

export class ChildWorkflows implements WaitingKind<"workflow"> {
  readonly kind = "workflow";
  /** The child's end tells it (parent-notice.ts); the sweeper's look at its check time is the backstop. */
  readonly ownTimer = false;

  constructor(
    private readonly ctx: EngineContext,
    private readonly propagation: Propagation,
    private readonly executions: Executions,
    private readonly failAttempt: FailAttempt,
  ) {}

  /** The claimed attempt: its child started (or found, when it already was), the node waiting. */
  async start({ execution, graph, node, record, lease, bindings }: WaitingStart): Promise<void> {
    // `bindings`: a map item's `$item` and `$index` (a map over a workflow runs a child per item).
    let childId: string;
    try {
      const params = await this.params(execution, graph, node, record, bindings);
      childId = await startChild(
        this.executions,
        execution,
        node,
        record.attempt,
        params,
        childKey(execution.executionId, node.id, record.attempt),
      );
    } catch (error) {
      await this.failAttempt(execution, graph, node, record, lease, error);
      return;
    }
    const now = this.ctx.clock.now();
    const state: ChildState = { kind: "workflow", executionId: childId };
    const waiting = await startWaiting(
      this.ctx,
      execution.executionId,
      node.id,
      lease,
      state,
      traced(
        nodeEvent(this.ctx, HISTORY.childStarted, now, node.id, record.attempt, {
          childExecutionId: childId,
        }),
        attemptTrace(execution, node.id, record.attempt),
      ),
    );
    if (!waiting.ok) {
      // Told to stop (or no longer this attempt's) before it waited: the child is not wanted.
      await this.propagation.cancelChild(childId, `its parent node "${node.id}" stopped`);
      if (waiting.current?.status === "RUNNING" && waiting.current.lease?.token === lease.token)
        await this.propagation.cancelNode(execution.executionId, node.id, "cancelled", {
          leaseExpiredBy: Number.MAX_SAFE_INTEGER,
          fenced: false,
          attempt: waiting.current.attempt,
        });
      return;
    }
    // The child may have ended already (a quick one, or found again by a redelivery).
    await this.check({ execution, graph, node, record: waiting.record, recheck: false });
  }

  /**
   * The node's check (the child's message when it ended, or the sweeper once the check time passed):
   * completed with the child's output, failed with its error, or left waiting.
   */
  async check({ execution, graph, node, record }: WaitingCheck): Promise<void> {
    const state = record.composite;
    const lease = record.lease;
    if (record.status !== "RUNNING" || state?.kind !== "workflow" || !lease) return;
    const outcome = await childOutcome(this.ctx, this.executions, execution, node, state.executionId);
    if (outcome.kind === "running") await checkLater(this.ctx, execution.executionId, node.id, lease);
    else if (outcome.kind === "failed")
      await this.failAttempt(execution, graph, node, record, lease, outcome.error);
    else
      await completeWaiting(
        this.ctx,
        this.propagation,
        this.failAttempt,
        { execution, graph, node, record, lease },
        outcome.output,
        { childExecutionId: state.executionId },
      );
  }

  /** Its attempt cancelled while it waited (its execution ended): the child is cancelled with it. */
  async release(state: ChildState, reason: string): Promise<void> {
    await this.propagation.cancelChild(state.executionId, `its parent was cancelled or failed: ${reason}`);
  }

  /** The node's params with their expressions evaluated, checked. */
  private async params(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    record: NodeRecord,
    bindings?: Record<string, unknown>,
  ) {
    // A map item's scope is its map's: the map's dependencies.
    const owner = node.item?.map ?? node;
    const okDeps =
      node.item && hasExpressions(node.params)
        ? ((await this.ctx.store.getNode(execution.executionId, owner.id))?.okDeps ?? [])
        : record.okDeps;
    const params = await evaluateInScope(this.ctx, execution, graph, owner, okDeps, node.params, "params", {
      ...(bindings ? { bindings } : {}),
    });
    const parsed = childWorkflowParamsSchema.safeParse(params);
    if (!parsed.success || hasExpressions(parsed.data.name))
      throw new TerminalError(`the params of node "${node.id}" do not name a workflow to run`, {
        code: "InvalidParams",
      });
    return parsed.data;
  }
}
