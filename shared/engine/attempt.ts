/**
 * Runs one attempt of a node's handler: supplies its AbortSignal, keeps the lease alive by heartbeat
 * (a write fenced by the lease token) — an attempt not claimed yet writes its claim at its first beat
 * (attempt-fence.ts) — and aborts on timeout, lost lease or cancellation.
 * An attempt never outlives its worker invocation: its deadline is the earlier of its own timeout
 * and the invocation's (worker-time.ts), and reaching the invocation's ends it as `workerTimeout`.
 * Payloads are part of the attempt: the input and dependencies' outputs are resolved before the
 * handler runs and its output stored after, so a value over a limit (a terminal PayloadError) or a
 * blob store fault ends the attempt like an error of the handler, never a lease that runs out.
 * So are the definition's expressions (prepare.ts): a node with nothing to run — its `when` is not
 * true, or no input was done — ends `skipped` without its handler, and an expression that fails
 * ends the attempt with a terminal ExpressionError.
 */
import type { GraphNode } from "../domain/graph.js";
import type { Payload } from "../domain/payload.js";
import type { ExecutionRecord, HistoryEvent, NodeRecord } from "../domain/records.js";
import { attemptTrace } from "../domain/trace.js";
import type { NodeCondition, NodePatch } from "../ports.js";
import type { TaskType } from "../tasks/task-type.js";
import type { AttemptFence } from "./attempt-fence.js";
import type { EngineContext } from "./context.js";
import { expressionScope, prepareRun } from "./prepare.js";
import { applyAssign, applyVariables } from "./vars.js";

export type AttemptResult =
  | { kind: "completed"; output: Payload }
  | { kind: "threw"; error: unknown }
  | { kind: "timedOut" }
  /** Cut short by its invocation's deadline, which left it `leftMs` when it started. */
  | { kind: "workerTimeout"; leftMs: number }
  | { kind: "leaseLost" }
  | { kind: "cancelled" }
  /** Nothing to run (prepare.ts): the handler was not called. */
  | { kind: "skipped"; reason: string };

class AttemptAbort extends Error {
  constructor(readonly kind: "timedOut" | "workerTimeout" | "leaseLost" | "cancelled") {
    super(`attempt aborted: ${kind}`);
    this.name = "AbortError";
  }
}

export async function runAttempt(
  ctx: EngineContext,
  execution: ExecutionRecord,
  node: GraphNode,
  task: TaskType,
  record: NodeRecord,
  fence: AttemptFence,
  deps: ReadonlyArray<readonly [string, Payload]>,
  /** When the worker invocation running the attempt must be done with it (Delivery.deadline). */
  invocationDeadline?: number,
  /** Variables for the params' expressions (a map item's `$item` and `$index`). */
  bindings?: Record<string, unknown>,
): Promise<AttemptResult> {
  const { clock, store, payloads } = ctx;
  const controller = new AbortController();
  const stop = new AbortController();
  const abort = (kind: AttemptAbort["kind"]) => {
    if (!controller.signal.aborted) controller.abort(new AttemptAbort(kind));
  };
  const startedAt = clock.now();
  const ownDeadline = startedAt + node.timeoutSeconds * 1000;
  const cut = invocationDeadline !== undefined && invocationDeadline < ownDeadline;
  const deadline = cut ? invocationDeadline : ownDeadline;

  clock.sleep(deadline - startedAt, stop.signal).then(
    () => abort(cut ? "workerTimeout" : "timedOut"),
    () => {},
  );
  // The first beat of an attempt not claimed yet is its claim (attempt-fence.ts), once it has run
  // `claimAfterMs`; every later one renews the lease.
  const heartbeat = (async () => {
    const interval = Math.max(1, Math.floor(ctx.leaseMs / 3));
    const token = fence.lease.token;
    const write = (condition: NodeCondition, patch: NodePatch, events: readonly HistoryEvent[]) =>
      store.transitionNode(execution.executionId, node.id, condition, patch, events);
    let watched = false;
    while (!stop.signal.aborted) {
      await clock.sleep(fence.claimed ? interval : Math.min(interval, ctx.claimAfterMs), stop.signal);
      const lease = { token, expiresAt: clock.now() + ctx.leaseMs };
      // Still running at its first beat (a lazy claim's, or an eager claim's first renewal): the
      // sweeper looks at it once this lease is over, and then at each lease's end while it runs
      // (sweeper.ts). Its execution may be in no index — a start that sent its messages first
      // (executions.ts) — and SQS brings a dead worker's message back only after the queue's
      // visibility timeout (30 minutes deployed). Pulled before the claim is written, so a worker
      // that dies right after its claim is still looked at (the rehearsal's killed worker); a look
      // that finds no claim yet sends the entry again. Best effort: a failure here must not end
      // the heartbeats; SQS is still there.
      if (!watched) {
        watched = true;
        await store
          .pullSweepAt(execution.executionId, lease.expiresAt + ctx.sweep.graceMs)
          .catch(() => false);
      }
      const renewed = fence.claimed
        ? await store.transitionNode(
            execution.executionId,
            node.id,
            { status: ["RUNNING"], leaseToken: token },
            { lease },
          )
        : await fence.claim(write, lease);
      if (!renewed.ok) return abort("leaseLost");
      if (renewed.record.cancelRequested) return abort("cancelled");
    }
  })().catch(() => {});

  const aborted = new Promise<never>((_, reject) => {
    controller.signal.addEventListener("abort", () => reject(controller.signal.reason), { once: true });
  });
  try {
    const prepared = await Promise.race([prepareRun(ctx, execution, node, task, deps, bindings), aborted]);
    if ("skip" in prepared) return { kind: "skipped", reason: prepared.skip };
    const output = await Promise.race([
      Promise.resolve().then(async () =>
        task.run({
          ...prepared,
          context: {
            executionId: execution.executionId,
            nodeId: node.id,
            attempt: record.attempt,
            idempotencyKey: attemptKey(execution.executionId, node.id, record.attempt),
            trace: attemptTrace(execution, node.id, record.attempt),
            signal: controller.signal,
            deadline,
            sleep: (ms) => clock.sleep(ms, controller.signal),
            now: () => clock.now(),
            // An inline `vars` node reaches a worker when a message re-drives it (an entry queued
            // by a start that died, the sweeper): its operation still applies once per node.
            variables: {
              apply: (op) => applyVariables(ctx, execution.executionId, node.id, record.attempt, op, true),
            },
          },
        }),
      ),
      aborted,
    ]);
    const what = `the output of node "${node.id}"`;
    const stored = await Promise.race([payloads.save(execution.executionId, output, what), aborted]);
    // Its variables before its completion is written (its dependants must see them): a failure
    // here (an expression, a limit, a secret-looking value) ends the attempt like the handler's.
    if (node.assign !== undefined) {
      const scope = expressionScope(execution, prepared.input, prepared.deps);
      await Promise.race([applyAssign(ctx, execution, node, record.attempt, scope, output), aborted]);
    }
    return { kind: "completed", output: stored };
  } catch (error) {
    const reason = controller.signal.reason;
    if (reason instanceof AttemptAbort)
      return reason.kind === "workerTimeout"
        ? { kind: "workerTimeout", leftMs: deadline - startedAt }
        : { kind: reason.kind };
    return { kind: "threw", error };
  } finally {
    stop.abort();
    await heartbeat;
  }
}

/** An attempt's idempotency key, handed to its handler (the Lambda worker's or an external one's). */
export function attemptKey(executionId: string, nodeId: string, attempt: number): string {
  return `${executionId}:${nodeId}:${attempt}`;
}
