/** Variables at the API's edge: a definition past a vars limit, or with a secret in plain sight, is a 400 naming it. */
import { describe, expect, it } from "vitest";
import { createApiFixture } from "./helpers.js";

const AWS_KEY = "AKIAIOSFODNN7EXAMPLE";

describe("POST /workflows with variables", () => {
  it("answers 400 InvalidDefinition with each vars problem's own code and path, never quoting a secret", async () => {
    const api = createApiFixture();
    const answer = await api.call({
      method: "POST",
      path: "/workflows",
      body: {
        name: "bad-vars",
        nodes: [
          { id: "v", type: "vars", params: { op: "set", values: { "a.$b": 1, "c.key": AWS_KEY } } },
          { id: "w", type: "vars", params: { op: "incr" } },
          { id: "x", type: "noop", assign: { "": 1 } },
        ],
      },
    });
    expect(answer.status).toBe(400);
    const body = answer.body as {
      error: { code: string; details: Array<{ path: string; code: string; message: string }> };
    };
    expect(body.error.code).toBe("InvalidDefinition");
    expect(body.error.details.map((d) => [d.path, d.code])).toEqual([
      ['nodes[0].params.values["a.$b"]', "vars_invalid_segment"],
      ['nodes[0].params.values["c.key"]', "sensitive_value"],
      ["nodes[1].params.path", "invalid_params"],
      ['nodes[2].assign[""]', "vars_invalid_segment"],
    ]);
    expect(JSON.stringify(answer.body)).not.toContain(AWS_KEY);
  });

  it("registers a workflow of vars nodes, assign and metrics.aggregate", async () => {
    const api = createApiFixture();
    const answer = await api.call({
      method: "POST",
      path: "/workflows",
      body: {
        name: "good-vars",
        nodes: [
          { id: "a", type: "pass", params: { value: 1 }, assign: { "x.y": "{% $output + vars.x.y %}" } },
          { id: "v", type: "vars", dependsOn: ["a"], params: { op: "incr", path: "{% 'n' %}" } },
          { id: "m", type: "metrics.aggregate", dependsOn: ["a", "v"], params: { field: "value" } },
        ],
      },
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  });
});
