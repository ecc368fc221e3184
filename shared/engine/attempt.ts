/**
 * Runs one claimed attempt of a node's handler: supplies its AbortSignal, keeps the lease alive by
 * heartbeat (a write fenced by the lease token), and aborts on timeout, lost lease or cancellation.
 */
import type { GraphNode } from "../domain/graph.js";
import type { ExecutionRecord, Lease, NodeRecord } from "../domain/records.js";
import type { TaskType } from "../tasks/task-type.js";
import type { EngineContext } from "./context.js";

export type AttemptResult =
  | { kind: "completed"; output: unknown }
  | { kind: "threw"; error: unknown }
  | { kind: "timedOut" }
  | { kind: "leaseLost" }
  | { kind: "cancelled" };

class AttemptAbort extends Error {
  constructor(readonly kind: "timedOut" | "leaseLost" | "cancelled") {
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
  lease: Lease,
  deps: Record<string, unknown>,
): Promise<AttemptResult> {
  const { clock, store } = ctx;
  const controller = new AbortController();
  const stop = new AbortController();
  const abort = (kind: AttemptAbort["kind"]) => {
    if (!controller.signal.aborted) controller.abort(new AttemptAbort(kind));
  };
  const startedAt = clock.now();
  const deadline = startedAt + node.timeoutSeconds * 1000;

  clock.sleep(deadline - startedAt, stop.signal).then(
    () => abort("timedOut"),
    () => {},
  );
  const heartbeat = (async () => {
    const interval = Math.max(1, Math.floor(ctx.leaseMs / 3));
    while (!stop.signal.aborted) {
      await clock.sleep(interval, stop.signal);
      const renewed = await store.transitionNode(
        execution.executionId,
        node.id,
        { status: ["RUNNING"], leaseToken: lease.token },
        { lease: { token: lease.token, expiresAt: clock.now() + ctx.leaseMs } },
      );
      if (!renewed.ok) return abort("leaseLost");
      if (renewed.record.cancelRequested) return abort("cancelled");
    }
  })().catch(() => {});

  const aborted = new Promise<never>((_, reject) => {
    controller.signal.addEventListener("abort", () => reject(controller.signal.reason), { once: true });
  });
  try {
    const output = await Promise.race([
      Promise.resolve().then(() =>
        task.run({
          input: execution.input,
          // Parsed, so a schema's defaults and transforms reach the handler (validated at submit already).
          params: task.params.parse(node.params),
          deps,
          context: {
            executionId: execution.executionId,
            nodeId: node.id,
            attempt: record.attempt,
            idempotencyKey: `${execution.executionId}:${node.id}:${record.attempt}`,
            signal: controller.signal,
            deadline,
            sleep: (ms) => clock.sleep(ms, controller.signal),
            now: () => clock.now(),
          },
        }),
      ),
      aborted,
    ]);
    return { kind: "completed", output };
  } catch (error) {
    const reason = controller.signal.reason;
    if (reason instanceof AttemptAbort) return { kind: reason.kind };
    return { kind: "threw", error };
  } finally {
    stop.abort();
    await heartbeat;
  }
}
