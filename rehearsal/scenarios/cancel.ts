/** Cancelling a running execution reaches the running node through its heartbeat. */
import type { Scenario } from "./context.js";
import { check, expectStatus, nodeOf, register, start, waitForEnd, waitForExecution } from "./helpers.js";

export const cancelScenario: Scenario = {
  name: "cancel a running execution (a sleep node stops at its heartbeat)",
  timeoutMs: 90_000,
  async run(ctx) {
    const name = ctx.unique("long-sleep");
    const limit = ctx.timings.workerTimeoutSeconds - 5;
    await register(ctx, {
      name,
      nodes: [
        // As long as the worker can give a node (its timeout less 5 s).
        { id: "nap", type: "sleep", params: { ms: limit * 1000 }, timeoutSeconds: limit },
        { id: "after", type: "noop", dependsOn: ["nap"] },
      ],
    });
    const executionId = await start(ctx, { workflow: name });
    await waitForExecution(
      ctx,
      executionId,
      (v) => nodeOf(v, "nap").status === "RUNNING",
      "the sleep node to run",
    );
    const cancelledAt = Date.now();
    expectStatus(
      await ctx.api.post(`/executions/${executionId}/cancel`, { reason: "rehearsal" }),
      202,
      "POST cancel",
    );
    const view = await waitForEnd(ctx, executionId);
    check(view.status === "CANCELLED", `ended ${view.status}`);
    check(nodeOf(view, "after").status === "CANCELLED", `after is ${nodeOf(view, "after").status}`);
    // The worker stops holding the node: the invocation ends long before the sleep would have.
    await waitForExecution(
      ctx,
      executionId,
      (v) => nodeOf(v, "nap").status === "CANCELLED",
      "the sleep node to stop",
      30_000,
    );
    const stoppedMs = Date.now() - cancelledAt;
    check(stoppedMs < (limit * 1000) / 2, `the sleep node took ${stoppedMs} ms to stop`);
    expectStatus(await ctx.api.post(`/executions/${executionId}/cancel`, {}), 409, "cancel after the end");
    return `CANCELLED; the running node stopped ${(stoppedMs / 1000).toFixed(1)} s after the cancel`;
  },
};
