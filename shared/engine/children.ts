/**
 * Running a `workflow` node (domain/child.ts): its claimed attempt starts a child execution —
 * idempotently, keyed by the attempt, so a redelivered message finds the child it started — and
 * writes itself waiting (RUNNING, holding no worker: its lease is the time of its next check). The
 * child's end sends the parent's node a message (parent-notice.ts); the node then completes with the
 * child's output, or fails with its error (retried by its policy, as a new child). The sweeper checks
 * a waiting node whose check time passed, so a lost message only delays it. Cancelling or failing
 * the parent cancels the child (Propagation.settleOutstanding).
 */

import { CHILD_LIMITS, childKey, childWorkflowParamsSchema } from "../domain/child.js";
import { RetryableError, TerminalError, WeftError } from "../domain/errors.js";
import { hasExpressions } from "../domain/expressions.js";
import { rootOf } from "../domain/fan-out.js";
import type { GraphNode, WorkflowGraph } from "../domain/graph.js";
import { PayloadError } from "../domain/json.js";
import type { Payload } from "../domain/payload.js";
import type { ChildState, ExecutionRecord, NodeRecord } from "../domain/records.js";
import { isTerminalExecution } from "../domain/states.js";
import { attemptTrace } from "../domain/trace.js";
import { assignAtEnd } from "./assign-at-end.js";
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
      const depth = (execution.depth ?? 0) + 1;
      if (depth > CHILD_LIMITS.maxDepth)
        throw new TerminalError(
          `node "${node.id}" would start a child execution ${depth} levels deep; executions nest at most ${CHILD_LIMITS.maxDepth} deep`,
          { code: "WorkflowDepthExceeded" },
        );
      const child = await this.executions.create({
        workflow: params.name,
        ...(params.version !== undefined ? { version: params.version } : {}),
        input: params.input ?? null,
        idempotencyKey: childKey(execution.executionId, node.id, record.attempt),
        parent: { executionId: execution.executionId, nodeId: node.id, attempt: record.attempt },
        depth,
        // Counted against the root's fan-out budget (domain/fan-out.ts): over it, the node fails.
        rootExecutionId: rootOf(execution),
        // The child continues its parent's trace: a child span of this attempt's.
        traceparent: attemptTrace(execution, node.id, record.attempt).traceparent,
      });
      childId = child.executionId;
    } catch (error) {
      await this.failAttempt(execution, graph, node, record, lease, asTaskError(node, error));
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
    const child = await this.ctx.store.getExecution(state.executionId);
    const _now = this.ctx.clock.now();
    if (child && !isTerminalExecution(child.status)) {
      await checkLater(this.ctx, execution.executionId, node.id, lease);
      return;
    }
    if (child?.status !== "SUCCEEDED") {
      const why = child ? `${child.status.toLowerCase()}: ${child.error?.message ?? ""}` : "is gone";
      const message = `child execution ${state.executionId} of node "${node.id}" ${why}`;
      // A failed child is retried as a new child; a cancelled or vanished one is not the node's to redo.
      const error =
        child?.status === "FAILED"
          ? new RetryableError(message, { code: "ChildWorkflowFailed" })
          : new TerminalError(message, { code: "ChildWorkflowCancelled" });
      await this.failAttempt(execution, graph, node, record, lease, error);
      return;
    }
    let output: Payload;
    try {
      output = await this.ctx.payloads.adopt(
        execution.executionId,
        await this.executions.outputOf(child),
        `the output of child execution ${child.executionId}`,
      );
    } catch (error) {
      // Its sinks' outputs together are over the limit of a value: the node's failure, for good.
      if (!(error instanceof PayloadError)) throw error;
      await this.failAttempt(execution, graph, node, record, lease, error);
      return;
    }
    const refused =
      node.assign === undefined
        ? undefined
        : await assignAtEnd(this.ctx, execution, graph, node, record, output);
    if (refused) {
      await this.failAttempt(execution, graph, node, record, lease, refused);
      return;
    }
    await completeWaiting(this.ctx, this.propagation, execution, graph, node, record, lease, output, {
      childExecutionId: child.executionId,
    });
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

/** A failure to start the child, as the node's: an unknown workflow or version is terminal. */
function asTaskError(node: GraphNode, error: unknown): unknown {
  if (error instanceof WeftError && !(error instanceof TerminalError) && error.code === "NotFound")
    return new TerminalError(`node "${node.id}": ${error.message}`, {
      code: "WorkflowNotFound",
      cause: error,
    });
  return error;
}
