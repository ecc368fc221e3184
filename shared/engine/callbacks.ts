/**
 * Running a `callback` node (domain/callback.ts): its claimed attempt waits holding no worker,
 * its token published (a `Node Waiting For Callback` lifecycle event, and GET /executions/{id}),
 * until someone settles it with that token — complete, fail — or its time runs out. Heartbeats,
 * when its params ask for them, push its due time on. Its own task message, delayed to its due time
 * (a durable timer when that is beyond SQS's reach: send.ts), checks it then, so a timeout fires to
 * the second: past its timeout or its heartbeat, the attempt fails (CallbackTimedOut, retried by
 * policy as a new wait with a new token). Heartbeats move no timer: the check they outlived arms
 * the next. The sweeper's look at a running execution checks it too, once its lease (its next
 * check time) passed. Every settlement is
 * fenced on the attempt's lease, so it happens once: a second answers 409.
 */
import { callbackToken } from "../domain/attempt-token.js";
import { type CallbackParams, callbackDueAt, callbackParamsSchema } from "../domain/callback.js";
import { conflict, RetryableError, TerminalError } from "../domain/errors.js";
import { ExpressionError, hasExpressions } from "../domain/expressions.js";
import type { GraphNode, WorkflowGraph } from "../domain/graph.js";
import { PayloadError } from "../domain/json.js";
import type { CallbackState, ExecutionRecord, NodeRecord } from "../domain/records.js";
import { attemptTrace } from "../domain/trace.js";
import { assignAtEnd } from "./assign-at-end.js";
import { completeAttempt } from "./attempt-completion.js";
import { type HeldAttempt, readAttempt, type TokenUse } from "./attempt-token-reads.js";
import { armCheck } from "./checks.js";
import type { EngineContext } from "./context.js";
import type { FailAttempt } from "./contracts.js";
import type { TaskErrorReport } from "./external-views.js";
import { callbackWaitingEvent, HISTORY, nodeEvent, traced } from "./lifecycle.js";
import type { Propagation } from "./propagation.js";
import { sendTasks, taskMessage } from "./send.js";
import { checkLater, evaluateInScope, startWaiting } from "./waiting.js";
import type { WaitingCheck, WaitingKind, WaitingStart } from "./waiting-kind.js";

export class Callbacks implements WaitingKind<"callback"> {
  readonly kind = "callback";
  /** Its timeout and heartbeat deadline are its own timer (armTimer). */
  readonly ownTimer = true;

  constructor(
    private readonly ctx: EngineContext,
    private readonly propagation: Propagation,
    private readonly failAttempt: FailAttempt,
  ) {}

  /** The claimed attempt begins to wait; its token goes out with the lifecycle event. */
  async start({ execution, graph, node, record, lease }: WaitingStart): Promise<void> {
    let params: CallbackParams;
    try {
      params = await this.params(execution, graph, node, record);
    } catch (error) {
      await this.failAttempt(execution, graph, node, record, lease, error);
      return;
    }
    const now = this.ctx.clock.now();
    const waits: Omit<CallbackState, "timerAt"> = {
      kind: "callback",
      deadline: now + params.timeoutSeconds * 1000,
      heartbeatAt: now,
      ...(params.heartbeatSeconds !== undefined ? { heartbeatSeconds: params.heartbeatSeconds } : {}),
    };
    const dueAt = callbackDueAt(waits);
    const state: CallbackState = { ...waits, timerAt: dueAt };
    const waiting = await startWaiting(
      this.ctx,
      execution.executionId,
      node.id,
      lease,
      state,
      traced(
        nodeEvent(this.ctx, HISTORY.callbackWaiting, now, node.id, record.attempt, {
          timeoutSeconds: params.timeoutSeconds,
        }),
        attemptTrace(execution, node.id, record.attempt),
      ),
      dueAt,
    );
    if (!waiting.ok) return; // told to stop first: its cancellation ends it
    await this.armTimer(execution, node.id, record.attempt, dueAt);
    const token = callbackToken(execution.executionId, node.id, record.attempt, lease);
    await this.ctx.events.publish([
      callbackWaitingEvent(execution, node.id, record.attempt, token, params.timeoutSeconds),
    ]);
  }

  /** The sweeper's check once it is due: its time ran out, or it waits on. */
  async check({ execution, graph, node, record, recheck }: WaitingCheck): Promise<void> {
    // `recheck` (a check or a redelivery, which may follow a handling that died between its waiting
    // write and its timer) arms the pending timer again (a copy is harmless); a plain early message
    // does not, so copies do not multiply.
    const state = record.composite;
    const lease = record.lease;
    if (record.status !== "RUNNING" || state?.kind !== "callback" || !lease) return;
    const now = this.ctx.clock.now();
    if (now >= state.deadline || now >= callbackDueAt(state)) {
      const missed = now < state.deadline;
      const message = missed
        ? `callback of node "${node.id}" got no heartbeat for ${state.heartbeatSeconds} s`
        : `callback of node "${node.id}" was not settled within its timeout`;
      await this.failAttempt(
        execution,
        graph,
        node,
        record,
        lease,
        new RetryableError(message, { code: "CallbackTimedOut" }),
      );
      return;
    }
    // Checked at or past its timer (heartbeats pushed its due time on): the next timer, for then.
    const dueAt = callbackDueAt(state);
    // A second of slack: the queue's clock and this one may differ a little.
    const timerFired = now >= (state.timerAt ?? Number.NEGATIVE_INFINITY) - 1000;
    const next: CallbackState | undefined = timerFired ? { ...state, timerAt: dueAt } : undefined;
    const waits = await checkLater(this.ctx, execution.executionId, node.id, lease, dueAt, next);
    if (waits && next) await this.armTimer(execution, node.id, record.attempt, dueAt);
    else if (waits && recheck && state.timerAt !== undefined)
      await this.armTimer(execution, node.id, record.attempt, state.timerAt);
  }

  /** Its own task message at `dueAt`: a claim of a waiting callback is its check (worker.ts). */
  private armTimer(
    execution: ExecutionRecord,
    nodeId: string,
    attempt: number,
    dueAt: number,
  ): Promise<void> {
    return sendTasks(this.ctx, [{ message: taskMessage(execution, nodeId, attempt), notBefore: dueAt }]);
  }

  async complete(token: string, output: unknown): Promise<void> {
    const held = await this.read(token, "complete");
    const { execution, graph, node, record, lease } = held;
    await armCheck(this.ctx, execution, node.id, record.attempt);
    let saved: Awaited<ReturnType<typeof this.ctx.payloads.save>>;
    try {
      saved = await this.ctx.payloads.save(execution.executionId, output, `the output of node "${node.id}"`);
    } catch (error) {
      if (!(error instanceof PayloadError)) throw error;
      await this.failAttempt(execution, graph, node, record, lease, error);
      return;
    }
    const refused = await assignAtEnd(this.ctx, execution, graph, node, record, saved);
    if (refused) {
      await this.failAttempt(execution, graph, node, record, lease, refused);
      return;
    }
    const done = await completeAttempt(
      this.ctx,
      this.propagation,
      execution,
      graph,
      node,
      record,
      lease,
      saved,
      {
        detail: { settledBy: "callback" },
      },
    );
    // Refused (its execution ended, or it timed out, between the read and the write): not settled.
    if (!done.ok) throw notSettled(node.id, record.attempt);
  }

  /** Failed by its caller: for good, unless it says the failure is retryable (then by policy). */
  async fail(token: string, error: TaskErrorReport): Promise<void> {
    const { execution, graph, node, record, lease } = await this.read(token, "fail");
    await armCheck(this.ctx, execution, node.id, record.attempt);
    const thrown =
      error.retryable === true
        ? new RetryableError(error.message, { code: error.name })
        : new TerminalError(error.message, { code: error.name });
    const ended = await this.failAttempt(execution, graph, node, record, lease, thrown);
    if (ended === "refused" || ended === "cancelled") throw notSettled(node.id, record.attempt);
  }

  /** Pushes its heartbeat due time on (its timeout stays). */
  async heartbeat(token: string): Promise<void> {
    const { execution, node, record, lease } = await this.read(token, "heartbeat");
    const state = record.composite as CallbackState;
    const next: CallbackState = { ...state, heartbeatAt: this.ctx.clock.now() };
    const written = await checkLater(
      this.ctx,
      execution.executionId,
      node.id,
      lease,
      callbackDueAt(next),
      next,
    );
    if (!written)
      throw conflict(`the callback token is stale: attempt ${record.attempt} of node "${node.id}" is over`);
  }

  private async read(token: string, use: TokenUse): Promise<HeldAttempt> {
    const held = await readAttempt(this.ctx, token, "callback", use);
    // An attempt not waiting for its callback (yet, or any more).
    if (held.record.composite?.kind !== "callback")
      throw conflict(`the token does not stand for a callback node "${held.node.id}" is waiting for`);
    return held;
  }

  private async params(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    record: NodeRecord,
  ): Promise<CallbackParams> {
    const value = await evaluateInScope(
      this.ctx,
      execution,
      graph,
      node,
      record.okDeps,
      node.params,
      "params",
    );
    const parsed = callbackParamsSchema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const path = ["params", ...(issue?.path.map(String) ?? [])].join(".");
      const message = `the params of callback node "${node.id}" are invalid: ${path}: ${issue?.message}`;
      // Literal params were checked at registration (a definition stored before a rule may not
      // pass it): what fails with expressions came from one.
      if (hasExpressions(node.params)) throw new ExpressionError(message, { path });
      throw new TerminalError(message, { code: "InvalidParams" });
    }
    return parsed.data;
  }
}

/** A settlement that did not take: the attempt ended otherwise between its read and its write. */
function notSettled(nodeId: string, attempt: number) {
  return conflict(
    `the callback of node "${nodeId}" (attempt ${attempt}) ended before this settlement took effect`,
  );
}
