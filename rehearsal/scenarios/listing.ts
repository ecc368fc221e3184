/** Listing executions: by workflow (gsi1), all (gsi3), by status; and an execution's history. */
import type { Scenario } from "./context.js";
import { check, expectStatus, register, start, waitForEnd } from "./helpers.js";

interface Page {
  executions: Array<{ executionId: string; status: string }>;
  next?: string;
}

export const listingScenario: Scenario = {
  name: "list executions (by workflow, all, by status) and their history",
  timeoutMs: 60_000,
  async run(ctx) {
    const name = ctx.unique("listed");
    await register(ctx, { name, nodes: [{ id: "only", type: "noop" }] });
    const ids = [await start(ctx, { workflow: name }), await start(ctx, { workflow: name })];
    for (const id of ids) check((await waitForEnd(ctx, id)).status === "SUCCEEDED", `${id} did not succeed`);
    const byWorkflow = expectStatus(
      await ctx.api.get<Page>("/executions", { workflow: name }),
      200,
      "GET /executions?workflow=",
    );
    check(
      byWorkflow.executions.map((e) => e.executionId).join() === [...ids].reverse().join(),
      `by workflow, newest first: ${JSON.stringify(byWorkflow.executions.map((e) => e.executionId))}`,
    );
    const all = expectStatus(await ctx.api.get<Page>("/executions", { limit: "50" }), 200, "GET /executions");
    check(
      ids.every((id) => all.executions.some((e) => e.executionId === id)),
      "all executions include both",
    );
    const succeeded = expectStatus(
      await ctx.api.get<Page>("/executions", { workflow: name, status: "SUCCEEDED" }),
      200,
      "GET /executions?status=",
    );
    check(succeeded.executions.length === 2, `by status: ${succeeded.executions.length}`);
    const events = expectStatus(
      await ctx.api.get<{ events: Array<{ type: string }> }>(`/executions/${ids[0]}/events`),
      200,
      "GET /executions/{id}/events",
    ).events.map((e) => e.type);
    check(
      events[0]?.startsWith("Execution") &&
        events.includes("NodeCompleted") &&
        events.at(-1) === "ExecutionSucceeded",
      `history ${events.join(", ")}`,
    );
    return `2 executions listed by workflow, overall and by status; history of ${events.length} events`;
  },
};
