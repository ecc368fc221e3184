/** The gateway serves the template's routes only, and only to signed callers. */
import type { Scenario } from "./context.js";
import { check, expectStatus } from "./helpers.js";

export const gatewayScenario: Scenario = {
  name: "API Gateway: the template's routes, IAM-signed (404 outside them, 403 unsigned)",
  timeoutMs: 30_000,
  async run(ctx) {
    const outside = await ctx.api.get("/nowhere");
    check(
      outside.status === 404 && outside.body.message === "Not Found",
      `GET /nowhere: ${outside.status} ${outside.text}`,
    );
    const wrongMethod = await ctx.api.request("DELETE", "/workflows");
    check(
      wrongMethod.status === 404,
      `DELETE /workflows: expected API Gateway's 404, got ${wrongMethod.status}`,
    );
    const unsigned = await ctx.api.request("GET", "/executions", { signed: false });
    check(unsigned.status === 403, `unsigned GET /executions: expected 403, got ${unsigned.status}`);
    expectStatus(await ctx.api.get("/executions", { limit: "1" }), 200, "signed GET /executions");
    return "404 outside the routes, 403 unsigned, 200 signed";
  },
};
