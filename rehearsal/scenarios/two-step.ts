/** Two-step start: created PENDING, started by trigger with its input; idempotency keys return the same execution. */
import { isDeepStrictEqual } from "node:util";
import type { Scenario } from "./context.js";
import { check, describe, expectStatus, register, waitForEnd } from "./helpers.js";

export const twoStepScenario: Scenario = {
  name: "two-step start (start:false → PENDING, trigger → SUCCEEDED, 409 after)",
  timeoutMs: 60_000,
  async run(ctx) {
    const name = ctx.unique("two-step");
    await register(ctx, { name, nodes: [{ id: "echo", type: "pass" }] });
    const key = ctx.unique("key");
    const created = expectStatus(
      await ctx.api.post<{ executionId: string; status: string }>("/executions", {
        workflow: name,
        start: false,
        idempotencyKey: key,
      }),
      202,
      "POST /executions start:false",
    );
    check(created.status === "PENDING", `created ${created.status}`);
    const repeated = expectStatus(
      await ctx.api.post<{ executionId: string }>("/executions", {
        workflow: name,
        start: false,
        idempotencyKey: key,
      }),
      200,
      "POST /executions with the same idempotency key",
    );
    check(repeated.executionId === created.executionId, "the same key gives the same execution");
    check((await describe(ctx, created.executionId)).status === "PENDING", "PENDING until triggered");
    const input = { order: 42, lines: ["a", "b"] };
    expectStatus(
      await ctx.api.post(`/executions/${created.executionId}/trigger`, { input }),
      202,
      "POST trigger",
    );
    const view = await waitForEnd(ctx, created.executionId);
    check(view.status === "SUCCEEDED", `ended ${view.status}`);
    check(isDeepStrictEqual(view.output, { echo: input }), `output ${JSON.stringify(view.output)}`);
    expectStatus(
      await ctx.api.post(`/executions/${created.executionId}/trigger`, {}),
      409,
      "a second trigger",
    );
    return "PENDING → SUCCEEDED with the trigger's input";
  },
};
