/** A diamond whose one branch fails twice and succeeds on its third attempt, joined by a merge. */
import { isDeepStrictEqual } from "node:util";
import type { Scenario } from "./context.js";
import { check, nodeOf, register, start, waitForEnd } from "./helpers.js";

export const diamondScenario: Scenario = {
  name: "diamond with retries (fail × 2, succeeds on attempt 3, merged)",
  timeoutMs: 90_000,
  async run(ctx) {
    const name = ctx.unique("diamond");
    await register(ctx, {
      name,
      nodes: [
        { id: "a", type: "pass", params: { value: { n: 1 } } },
        {
          id: "b",
          type: "fail",
          dependsOn: ["a"],
          params: { times: 2, message: "flaky" },
          retry: {
            maxAttempts: 3,
            backoff: { initialSeconds: 1, maxSeconds: 2, multiplier: 1, jitter: "none" },
          },
        },
        { id: "c", type: "pass", dependsOn: ["a"], params: { value: "c" } },
        { id: "d", type: "merge", dependsOn: ["b", "c"] },
      ],
    });
    const executionId = await start(ctx, { workflow: name, input: { day: "2026-11-24" } });
    const view = await waitForEnd(ctx, executionId);
    check(view.status === "SUCCEEDED", `ended ${view.status}: ${JSON.stringify(view.error)}`);
    check(nodeOf(view, "b").attempt === 3, `b ran ${nodeOf(view, "b").attempt} attempts`);
    const expected = { d: { b: { attempt: 3 }, c: "c" } };
    check(isDeepStrictEqual(view.output, expected), `output ${JSON.stringify(view.output)}`);
    return "SUCCEEDED, b on attempt 3";
  },
};
