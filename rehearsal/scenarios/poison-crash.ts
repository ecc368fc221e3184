/**
 * A task that kills its worker every time, before its claim is written (as a crash in parsing or
 * an out-of-memory would): every receive fails, the redrive policy moves the message to the DLQ
 * after maxReceiveCount, and the DLQ consumer records it — failing the node, cancelling what can no
 * longer run and failing the execution. Redriven (the crash gone), the node runs as attempt 2 and
 * the execution succeeds.
 *
 * Compression: while it runs, the records of a failed invocation come back after 1 s instead of
 * the queue's visibility timeout; the sweeper's schedule is held until the execution has failed.
 */
import { waitFor } from "../wait.js";
import type { Scenario } from "./context.js";
import { check, expectStatus, nodeOf, register, waitForEnd } from "./helpers.js";
import { deadLettersOf } from "./terminal-failure.js";

export const poisonCrashScenario: Scenario = {
  name: "a task that crashes its worker at every claim → DLQ → recorded, execution FAILED → redrive → SUCCEEDED",
  timeoutMs: 150_000,
  async run(ctx) {
    const name = ctx.unique("crashing");
    await register(ctx, {
      name,
      nodes: [
        { id: "a", type: "noop" },
        { id: "x", type: "noop", dependsOn: ["a"] },
        // Decided by reading its parents: a failed parent of an `any` join does not decide it alone.
        { id: "c", type: "pass", dependsOn: ["a", "x"], fanIn: "any", params: { value: "joined" } },
      ],
    });
    const { executionId } = expectStatus(
      await ctx.api.post<{ executionId: string }>("/executions", { workflow: name, start: false }),
      202,
      "POST /executions",
    );
    const fault = ctx.faults.add({
      principal: ctx.principals.worker,
      at: "before",
      times: Number.POSITIVE_INFINITY,
      matches: ({ operation, body }) =>
        (operation === "UpdateItem" || operation === "TransactWriteItems") &&
        body.includes(`EX#${executionId}`) &&
        body.includes('"N#a"') &&
        // The write carrying its claim: before it runs, or (lazy) with its ending.
        body.includes('"NodeStarted"'),
    });
    ctx.consumers.worker.setFailedInvocationVisibility(1);
    // The DLQ consumer, not a sweep, is to fail the execution (the compressed schedule would race it;
    // a sweep would also re-send the unclaimed task meanwhile).
    const resumeSweeps = ctx.pauseSweeps();
    let letter: { id: string; reason: string; receiveCount?: number } | undefined;
    try {
      expectStatus(await ctx.api.post(`/executions/${executionId}/trigger`, {}), 202, "POST trigger");
      [letter] = await waitFor(
        "the dead letter to be recorded",
        async () => {
          const letters = await deadLettersOf(ctx, executionId);
          return letters.length > 0 ? letters : undefined;
        },
        { timeoutMs: 120_000, intervalMs: 500 },
      );
      fault.remove();
      ctx.consumers.worker.setFailedInvocationVisibility(undefined);
      await waitForEnd(ctx, executionId);
    } finally {
      fault.remove();
      ctx.consumers.worker.setFailedInvocationVisibility(undefined);
      resumeSweeps();
    }
    check(letter?.reason === "poison", `dead letter ${JSON.stringify(letter)}`);
    check(fault.hits >= 5, `the worker crashed ${fault.hits} times`);
    const failed = await waitForEnd(ctx, executionId);
    check(failed.status === "FAILED", `the execution is ${failed.status}`);
    check(
      nodeOf(failed, "a").error?.name === "DeadLettered",
      `a failed with ${JSON.stringify(nodeOf(failed, "a").error)}`,
    );
    check(nodeOf(failed, "c").status === "CANCELLED", `c is ${nodeOf(failed, "c").status}`);
    const redriven = expectStatus(
      await ctx.api.post<{ redriven: string[] }>("/dlq/redrive", { messageIds: [letter.id] }),
      202,
      "POST /dlq/redrive",
    );
    check(redriven.redriven.includes(letter.id), `redrive answered ${JSON.stringify(redriven)}`);
    const view = await waitForEnd(ctx, executionId);
    check(view.status === "SUCCEEDED", `after redrive the execution is ${view.status}`);
    check(nodeOf(view, "a").attempt === 2, `a ran as attempt ${nodeOf(view, "a").attempt}`);
    return `${fault.hits} crashes, dead-lettered after ${letter.receiveCount} receives, FAILED, redriven → SUCCEEDED`;
  },
};
