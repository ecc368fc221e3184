/**
 * A worker killed in the middle of a task: its lease expires, and the sweeper (its schedule
 * compressed) takes the node over — as a new attempt while attempts are left (the execution then
 * succeeds), or as the node's failure on its last attempt (the sweeper then fails the execution and
 * cancels the rest). The killed invocation's message stays invisible for the queue's whole
 * visibility timeout, so the recovery is the sweeper's, not SQS's.
 */
import { WaitTimeoutError, waitFor } from "../wait.js";
import type { RehearsalContext, Scenario } from "./context.js";
import { check, historyOf, nodeOf, register, start, waitForEnd, waitForExecution } from "./helpers.js";

/**
 * Whether a sweep reported recovering a lease since the tally was `before`. The tally counts a run
 * once its invocation returned, which may be after the execution's end is visible (the sweeper
 * fails the execution, then goes on): waits a little for it.
 */
async function recoveredSince(ctx: RehearsalContext, before: number): Promise<boolean> {
  try {
    return await waitFor(
      "a sweep to report a recovered lease",
      async () => (ctx.sweeps.recoveredLeases > before ? true : undefined),
      { timeoutMs: 15_000, intervalMs: 100 },
    );
  } catch (error) {
    if (error instanceof WaitTimeoutError) return false;
    throw error;
  }
}

/** Starts an execution of `workflow`, kills the worker once its `work` node runs; returns the execution's end. */
async function killMidTask(ctx: RehearsalContext, workflow: string) {
  const executionId = await start(ctx, { workflow });
  await waitForExecution(
    ctx,
    executionId,
    (v) => nodeOf(v, "work").status === "RUNNING" && ctx.functions.worker.running > 0,
    "the node to run",
  );
  check(ctx.functions.worker.killRunning() >= 1, "no running worker to kill");
  return waitForEnd(ctx, executionId, 90_000);
}

export const crashScenario: Scenario = {
  name: "worker crash → the sweeper recovers the lease (attempt 2), or fails the node on its last attempt",
  timeoutMs: 180_000,
  async run(ctx) {
    const retried = ctx.unique("crash");
    const final = ctx.unique("crash-final");
    const nodes = (maxAttempts: number) => [
      // Longer than claimAfterSeconds (5 s): its claim (and lease) is written while it runs, so the
      // kill leaves a lease to recover (a shorter attempt is claimed only by its end).
      { id: "work", type: "sleep", params: { ms: 9000 }, retry: { maxAttempts } },
      { id: "after", type: "pass", dependsOn: ["work"], params: { value: "after" } },
    ];
    await register(ctx, { name: retried, nodes: nodes(3) });
    await register(ctx, { name: final, nodes: nodes(1) });

    const recoveredBefore = ctx.sweeps.recoveredLeases;
    const view = await killMidTask(ctx, retried);
    check(view.status === "SUCCEEDED", `ended ${view.status}: ${JSON.stringify(view.error)}`);
    check(nodeOf(view, "work").attempt === 2, `the node ended on attempt ${nodeOf(view, "work").attempt}`);
    check(await recoveredSince(ctx, recoveredBefore), "no sweep reported a recovered lease");
    const events = await historyOf(ctx, view.executionId);
    const started = events
      .filter((e) => e.type === "NodeStarted" && e.nodeId === "work")
      .map((e) => e.attempt);
    check(started.includes(1) && started.includes(2), `the node started attempts ${JSON.stringify(started)}`);

    const recoveredMid = ctx.sweeps.recoveredLeases;
    const failed = await killMidTask(ctx, final);
    check(failed.status === "FAILED", `with no attempt left it ended ${failed.status}`);
    check(nodeOf(failed, "work").status === "FAILED", `work is ${nodeOf(failed, "work").status}`);
    check(nodeOf(failed, "after").status === "CANCELLED", `after is ${nodeOf(failed, "after").status}`);
    check(await recoveredSince(ctx, recoveredMid), "no sweep reported the second recovered lease");
    return "attempt 2 completed after a crash; on the last attempt the sweeper failed the node and the execution";
  },
};
