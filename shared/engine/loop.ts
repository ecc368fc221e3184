/**
 * Running a `loop` node (domain/loop.ts): a waiting kind whose claimed attempt runs its workflow as
 * a child execution per iteration, holding no worker. Each child's end tells the node (as any
 * child's does: parent-notice.ts), whose check then evaluates `while` on that output: false
 * completes the node with `{output, iterations}`; true starts the next iteration — at once, or after
 * `intervalSeconds`, the node waiting with no child and its own timer's message due then — unless
 * `maxIterations` are used up (LoopLimitExceeded, for good). A failed iteration fails the attempt
 * (retried by its policy as a new loop from the first iteration); cancelling the node cancels the
 * running iteration.
 *
 * Copies of a check may run at once (the child's word, the sweeper's look, a redelivery): every
 * child is keyed by (attempt, iteration), so two that start the same iteration find one child, and
 * every write is fenced on the attempt's lease. A stale copy may write back an earlier iteration's
 * state; the next check then finds that iteration's child ended and goes on to the same next child.
 */

import { childWorkflowParamsSchema } from "../domain/child.js";
import { TerminalError } from "../domain/errors.js";
import { ExpressionError, hasExpressions } from "../domain/expressions.js";
import type { GraphNode } from "../domain/graph.js";
import { PayloadError } from "../domain/json.js";
import { intervalOf, iterationKey, type LoopParams, loopParamsSchema } from "../domain/loop.js";
import type { Payload } from "../domain/payload.js";
import type { ExecutionRecord, LoopState, NodeRecord } from "../domain/records.js";
import { isTerminalExecution } from "../domain/states.js";
import { attemptTrace } from "../domain/trace.js";
import { childOutcome, startChild } from "./child-runs.js";
import type { EngineContext } from "./context.js";
import type { FailAttempt } from "./contracts.js";
import type { Executions } from "./executions.js";
import { HISTORY, nodeEvent, traced } from "./lifecycle.js";
import type { Propagation } from "./propagation.js";
import { sendTasks, taskMessage } from "./send.js";
import {
  checkLater,
  completeWaiting,
  evaluateInScope,
  startWaiting,
  type WaitingAttempt,
} from "./waiting.js";
import type { WaitingCheck, WaitingKind, WaitingStart } from "./waiting-kind.js";

/** One attempt of a loop node, as its start and its checks see it. */
type LoopAttempt = WaitingAttempt;

export class Loops implements WaitingKind<"loop"> {
  readonly kind = "loop";
  /**
   * Its iterations' ends tell it (parent-notice.ts) and a pause's end is its own message, but a lost
   * word is found only by the sweeper's look at its check time: that look stays its backstop.
   */
  readonly ownTimer = false;

  constructor(
    private readonly ctx: EngineContext,
    private readonly propagation: Propagation,
    private readonly executions: Executions,
    private readonly failAttempt: FailAttempt,
  ) {}

  /** The claimed attempt: its first iteration started, the node waiting for it. */
  async start({ execution, graph, node, record, lease }: WaitingStart): Promise<void> {
    const attempt = { execution, graph, node, record, lease };
    let childId: string;
    try {
      childId = await this.startIteration(attempt, this.params(node), 1, undefined);
    } catch (error) {
      await this.failAttempt(execution, graph, node, record, lease, error);
      return;
    }
    const now = this.ctx.clock.now();
    const state: LoopState = { kind: "loop", iteration: 1, executionId: childId };
    const waiting = await startWaiting(
      this.ctx,
      execution.executionId,
      node.id,
      lease,
      state,
      traced(
        nodeEvent(this.ctx, HISTORY.childStarted, now, node.id, record.attempt, {
          childExecutionId: childId,
          iteration: 1,
        }),
        attemptTrace(execution, node.id, record.attempt),
      ),
    );
    if (!waiting.ok) {
      await this.abandon(attempt, childId, waiting.current);
      return;
    }
    await this.check({ execution, graph, node, record: waiting.record, recheck: false });
  }

  /**
   * The node's check: its iteration still running (wait), ended (the next one, a pause, or the
   * node's end), or its pause over (the next iteration).
   */
  async check({ execution, graph, node, record, recheck }: WaitingCheck): Promise<void> {
    const state = record.composite;
    const lease = record.lease;
    if (record.status !== "RUNNING" || state?.kind !== "loop" || !lease) return;
    const attempt = { execution, graph, node, record, lease };
    try {
      const params = this.params(node);
      if (state.executionId === undefined) {
        // Pausing between iterations: the next one once the pause is over.
        const nextAt = state.nextAt ?? 0;
        if (nextAt > this.ctx.clock.now()) {
          await checkLater(this.ctx, execution.executionId, node.id, lease, nextAt);
          // A look from the sweeper or a redelivery may follow a pause whose timer was never armed.
          if (recheck) await this.armPause(execution, node, record.attempt, nextAt);
          return;
        }
        await this.next(attempt, params, state.iteration + 1, state.previous);
        return;
      }
      const outcome = await childOutcome(this.ctx, this.executions, execution, node, state.executionId);
      if (outcome.kind === "running") {
        await checkLater(this.ctx, execution.executionId, node.id, lease);
        return;
      }
      if (outcome.kind === "failed") {
        await this.failAttempt(execution, graph, node, record, lease, outcome.error);
        return;
      }
      await this.afterIteration(attempt, params, state.iteration, outcome.output);
    } catch (error) {
      // Bad params, a failing expression, an iteration that cannot start (terminal errors): the
      // attempt's failure. Anything else — a fault of the store or the queue, in these steps or in
      // the writes that end the attempt — goes up, so the message comes back and the check runs
      // again: taken for the node's failure, it would end a handling whose retry message was never
      // sent (simulation seed 9319).
      if (!(error instanceof TerminalError)) throw error;
      await this.failAttempt(execution, graph, node, record, lease, error);
    }
  }

  /** Its attempt cancelled while it waited: the running iteration is cancelled with it. */
  async release(state: LoopState, reason: string): Promise<void> {
    if (state.executionId === undefined) return;
    await this.propagation.cancelChild(state.executionId, `its loop was cancelled or failed: ${reason}`);
  }

  /** Iteration `iteration` ended with `output`: `while` decides between the node's end and another. */
  private async afterIteration(
    attempt: LoopAttempt,
    params: LoopParams,
    iteration: number,
    output: Payload,
  ): Promise<void> {
    const { execution, graph, node, record, lease } = attempt;
    const value = await this.ctx.payloads.load(output);
    const bindings = { iteration, previous: value };
    const again = await this.evaluate(attempt, params.while, "params.while", bindings);
    if (typeof again !== "boolean")
      throw new ExpressionError(`node "${node.id}": params.while must give true or false`, {
        path: "params.while",
      });
    if (!again) {
      let result: Payload;
      try {
        result = await this.ctx.payloads.save(
          execution.executionId,
          { output: value, iterations: iteration },
          `the output of node "${node.id}"`,
        );
      } catch (error) {
        if (!(error instanceof PayloadError)) throw error;
        await this.failAttempt(execution, graph, node, record, lease, error);
        return;
      }
      await completeWaiting(this.ctx, this.propagation, this.failAttempt, attempt, result, {
        iterations: iteration,
      });
      return;
    }
    if (iteration >= params.maxIterations)
      throw new TerminalError(
        `node "${node.id}" ran ${iteration} iterations (its maxIterations) and its while condition still holds`,
        { code: "LoopLimitExceeded" },
      );
    const interval =
      params.intervalSeconds === undefined
        ? 0
        : intervalOf(
            await this.evaluate(attempt, params.intervalSeconds, "params.intervalSeconds", bindings),
          );
    if (interval === undefined)
      throw new ExpressionError(
        `node "${node.id}": params.intervalSeconds must give a number of seconds from 0 to a day`,
        { path: "params.intervalSeconds" },
      );
    if (interval === 0) {
      await this.next(attempt, params, iteration + 1, output);
      return;
    }
    const nextAt = this.ctx.clock.now() + interval * 1000;
    const paused: LoopState = { kind: "loop", iteration, previous: output, nextAt };
    if (await checkLater(this.ctx, execution.executionId, node.id, lease, nextAt, paused))
      await this.armPause(execution, node, record.attempt, nextAt);
  }

  /** Starts iteration `iteration` and records it as the one the node waits for. */
  private async next(
    attempt: LoopAttempt,
    params: LoopParams,
    iteration: number,
    previous: Payload | undefined,
  ): Promise<void> {
    const { execution, node, lease } = attempt;
    const childId = await this.startIteration(attempt, params, iteration, previous);
    // Its `previous` is not kept while it runs: a check then reads only the child's end, and one
    // redone after a crash finds the same child by its key (attempt, iteration).
    const state: LoopState = { kind: "loop", iteration, executionId: childId };
    const written = await startWaiting(this.ctx, execution.executionId, node.id, lease, state, undefined);
    if (!written.ok) {
      await this.abandon(attempt, childId, written.current);
      return;
    }
    // A quick child may have ended before the node recorded it, its word finding the old state: the
    // node's own message checks it again, in a handling of its own (so a loop of quick children is
    // not one handling running thousands of iterations).
    const child = await this.ctx.store.getExecution(childId);
    if (child && isTerminalExecution(child.status))
      await sendTasks(this.ctx, [{ message: taskMessage(execution, node.id, attempt.record.attempt) }]);
  }

  /** Starts (or finds) iteration `iteration`'s child, its input evaluated with `$previous` and `$iteration`. */
  private async startIteration(
    attempt: LoopAttempt,
    params: LoopParams,
    iteration: number,
    previous: Payload | undefined,
  ): Promise<string> {
    const { execution, node, record } = attempt;
    const bindings: Record<string, unknown> = { iteration };
    if (previous !== undefined) bindings.previous = await this.ctx.payloads.load(previous);
    const evaluated = await this.evaluate(attempt, params.workflow, "params.workflow", bindings);
    const workflow = childWorkflowParamsSchema.safeParse(evaluated);
    if (!workflow.success || hasExpressions(workflow.data.name))
      throw new TerminalError(`the params of node "${node.id}" do not name a workflow to run`, {
        code: "InvalidParams",
      });
    return startChild(
      this.executions,
      execution,
      node,
      record.attempt,
      workflow.data,
      iterationKey(execution.executionId, node.id, record.attempt, iteration),
    );
  }

  /** The node no longer this attempt's (told to stop, or moved on) as it recorded a child: not wanted. */
  private async abandon(attempt: LoopAttempt, childId: string, current: NodeRecord | undefined) {
    const { execution, node, lease } = attempt;
    await this.propagation.cancelChild(childId, `its loop node "${node.id}" stopped`);
    if (current?.status === "RUNNING" && current.lease?.token === lease.token)
      await this.propagation.cancelNode(execution.executionId, node.id, "cancelled", {
        leaseExpiredBy: Number.MAX_SAFE_INTEGER,
        fenced: false,
        attempt: current.attempt,
      });
  }

  /** The pause's end: the node's own message, due then (a durable timer beyond SQS's reach). */
  private armPause(execution: ExecutionRecord, node: GraphNode, attempt: number, at: number) {
    return sendTasks(this.ctx, [{ message: taskMessage(execution, node.id, attempt), notBefore: at }]);
  }

  private evaluate(attempt: LoopAttempt, value: unknown, path: string, bindings: Record<string, unknown>) {
    const { execution, graph, node, record } = attempt;
    return evaluateInScope(this.ctx, execution, graph, node, record.okDeps, value, path, { bindings });
  }

  /** Its params as registered (each iteration's expressions are evaluated when it starts). */
  private params(node: GraphNode): LoopParams {
    const parsed = loopParamsSchema.safeParse(node.params);
    if (!parsed.success)
      throw new TerminalError(`the params of node "${node.id}" are not a loop's`, { code: "InvalidParams" });
    return parsed.data;
  }
}
