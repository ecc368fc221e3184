/** A custom task type from tasks/ (bundled by the construct, weft:tasks in cdk.json): params checked at submit, run by the worker. */
import { isDeepStrictEqual } from "node:util";
import type { Scenario } from "./context.js";
import { check, expectStatus, register, start, waitForEnd } from "./helpers.js";

export const customTaskScenario: Scenario = {
  name: "custom task from tasks/ (uppercase)",
  timeoutMs: 60_000,
  async run(ctx) {
    const name = ctx.unique("shout");
    await register(ctx, {
      name,
      nodes: [
        { id: "shout", type: "uppercase", params: { suffix: "!" } },
        { id: "fixed", type: "uppercase", params: { text: "weft" } },
      ],
    });
    const refused = await ctx.api.post("/workflows", {
      name: ctx.unique("shout-bad"),
      nodes: [{ id: "x", type: "uppercase", params: { suffix: "far too long a suffix" } }],
    });
    expectStatus(refused, 400, "uppercase with invalid params");
    const executionId = await start(ctx, { workflow: name, input: { text: "hello" } });
    const view = await waitForEnd(ctx, executionId);
    check(view.status === "SUCCEEDED", `ended ${view.status}: ${JSON.stringify(view.error)}`);
    const expected = { shout: { text: "HELLO!" }, fixed: { text: "WEFT" } };
    check(isDeepStrictEqual(view.output, expected), `output ${JSON.stringify(view.output)}`);
    return "HELLO! and WEFT; bad params refused at submit";
  },
};
