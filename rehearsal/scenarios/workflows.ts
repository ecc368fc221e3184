/** Registering a workflow: versions are immutable, the same content is the same version. */
import type { Scenario } from "./context.js";
import { check, expectStatus, register } from "./helpers.js";

export const registerScenario: Scenario = {
  name: "register a workflow (201, same content 200, new content version 2, GET it back)",
  timeoutMs: 30_000,
  async run(ctx) {
    const name = ctx.unique("hello");
    const definition = {
      name,
      nodes: [
        { id: "fetch-a", type: "pass", params: { value: { rows: 3 } } },
        { id: "fetch-b", type: "noop" },
        { id: "join", type: "merge", dependsOn: ["fetch-a", "fetch-b"] },
      ],
    };
    const first = await ctx.api.post<{ version: number; definitionHash: string }>("/workflows", definition);
    expectStatus(first, 201, "POST /workflows");
    check(first.body.version === 1, `first version is ${first.body.version}`);
    const again = await ctx.api.post<{ version: number; definitionHash: string }>("/workflows", definition);
    expectStatus(again, 200, "POST /workflows (same content)");
    check(
      again.body.version === 1 && again.body.definitionHash === first.body.definitionHash,
      "same content, same version",
    );
    const second = await register(ctx, { ...definition, description: "changed" });
    check(second.version === 2, `changed content is version ${second.version}`);
    const stored = expectStatus(
      await ctx.api.get<{ version: number; definition: { nodes: unknown[] } }>(`/workflows/${name}`, {
        version: "1",
      }),
      200,
      "GET /workflows/{name}",
    );
    check(
      stored.version === 1 && stored.definition.nodes.length === 3,
      "GET /workflows/{name}?version=1 gives version 1",
    );
    const invalid = await ctx.api.post<{ error: { code: string; details: unknown[] } }>("/workflows", {
      name: ctx.unique("broken"),
      nodes: [{ id: "a", type: "nope", dependsOn: ["a"] }],
    });
    expectStatus(invalid, 400, "POST /workflows (invalid)");
    check(invalid.body.error.details.length >= 3, "every problem of an invalid definition listed");
    return "versions 1 and 2; an invalid definition refused with every problem";
  },
};
