/**
 * The workflow language on the deployed stack: a map over a run-time list, a child workflow, a
 * `when` branch skipped, and the onFailure handler of a failed execution — each through the real
 * handlers with their IAM roles enforced.
 */
import { isDeepStrictEqual } from "node:util";
import type { Scenario } from "./context.js";
import { check, nodeOf, register, start, waitForEnd, waitForExecution } from "./helpers.js";

export const languageScenario: Scenario = {
  name: "language (map of 12 items, child workflow, when/SKIPPED, onFailure)",
  timeoutMs: 180_000,
  async run(ctx) {
    const child = ctx.unique("lang-child");
    const parent = ctx.unique("lang-parent");
    await register(ctx, {
      name: child,
      nodes: [{ id: "sum", type: "pass", params: { value: "{% $sum(input.values) %}" } }],
    });
    await register(ctx, {
      name: parent,
      onFailure: { type: "pass", params: { value: "{% error.message %}" } },
      nodes: [
        {
          id: "squares",
          type: "map",
          params: {
            items: "{% input.numbers %}",
            task: { type: "pass", params: { value: "{% $item * $item %}" } },
            maxConcurrency: 3,
          },
        },
        {
          id: "total",
          type: "workflow",
          dependsOn: ["squares"],
          params: { name: child, input: { values: "{% deps.squares %}" } },
        },
        { id: "never", type: "noop", dependsOn: ["total"], when: "{% deps.total.sum < 0 %}" },
        {
          id: "fail",
          type: "fail",
          dependsOn: ["total"],
          params: { message: "on purpose", retryable: false },
        },
      ],
    });
    const numbers = Array.from({ length: 12 }, (_, i) => i + 1);
    const executionId = await start(ctx, { workflow: parent, input: { numbers } });
    const view = await waitForEnd(ctx, executionId, 150_000);
    check(view.status === "FAILED", `ended ${view.status}: ${JSON.stringify(view.error)}`);
    const squares = numbers.map((n) => n * n);
    check(
      isDeepStrictEqual(nodeOf(view, "squares").output, squares),
      "the map's output is the squares in order",
    );
    check(
      isDeepStrictEqual(nodeOf(view, "total").output, { sum: 650 }),
      `total ${JSON.stringify(nodeOf(view, "total").output)}`,
    );
    check(nodeOf(view, "never").status === "SKIPPED", `never ${nodeOf(view, "never").status}`);
    // The handler runs after the end: wait for it on the execution's view.
    const after = await waitForExecution(
      ctx,
      executionId,
      (v) => v.onFailure?.status === "COMPLETED" || v.onFailure?.status === "FAILED",
      "the onFailure handler to end",
      120_000,
    );
    check(after.onFailure?.status === "COMPLETED", `onFailure ${JSON.stringify(after.onFailure)}`);
    return "map of 12, child workflow, SKIPPED branch, onFailure ran";
  },
};
