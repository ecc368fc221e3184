/** The api handler on the real engine with in-memory ports: routes, status codes and the error contract. */
import { beforeEach, describe, expect, it, vi } from "vitest";
import { DEFAULT_MAX_BODY_BYTES } from "../../functions/api/app.js";
import { type ApiFixture, apiEvent, chainDefinition, createApiFixture, type ErrorBody } from "./helpers.js";

let api: ApiFixture;
beforeEach(() => {
  api = createApiFixture();
});

function expectError(
  answer: { status: number; body: unknown },
  status: number,
  code: string,
): ErrorBody["error"] {
  expect(answer.status).toBe(status);
  const body = answer.body as ErrorBody;
  expect(Object.keys(body)).toEqual(["error"]);
  expect(body.error.code).toBe(code);
  expect(typeof body.error.message).toBe("string");
  expect(Array.isArray(body.error.details)).toBe(true);
  return body.error;
}

describe("api routing", () => {
  it("answers 404 NotFound with the error shape for an unknown route", async () => {
    const answer = await api.call({ method: "GET", path: "/nothing/here" });
    expectError(answer, 404, "NotFound");
    expect(answer.headers["content-type"]).toMatch(/^application\/json/);
  });

  it("answers 405 MethodNotAllowed with an Allow header for a wrong method on a known path", async () => {
    const answer = await api.call({ method: "DELETE", path: "/executions/ex-1" });
    expectError(answer, 405, "MethodNotAllowed");
    expect(answer.headers.allow).toBe("GET");
    const listing = await api.call({ method: "DELETE", path: "/executions" });
    expectError(listing, 405, "MethodNotAllowed");
    expect(listing.headers.allow).toBe("GET, POST");
    expectError(await api.call({ method: "GET", path: "/dlq/redrive" }), 405, "MethodNotAllowed");
    expectError(await api.call({ method: "GET", path: "/executions/ex-1/trigger" }), 405, "MethodNotAllowed");
  });

  it("strips a named stage from rawPath (explicit stages) and routes on the request's method", async () => {
    const event = apiEvent({ method: "POST", path: "/prod/workflows", body: chainDefinition() });
    event.requestContext.stage = "prod";
    event.routeKey = "POST /workflows";
    const answer = await api.handler(event);
    expect(answer.statusCode).toBe(201);
  });

  it("answers 400 for malformed percent-encoding in a path parameter", async () => {
    expectError(await api.call({ method: "GET", path: "/executions/%E0%A4%A" }), 400, "InvalidRequest");
  });
});

describe("api request bodies", () => {
  it("answers 400 InvalidJson for malformed JSON", async () => {
    const error = expectError(
      await api.call({ method: "POST", path: "/workflows", rawBody: '{"name": "x", nodes: [' }),
      400,
      "InvalidJson",
    );
    expect(error.details).toHaveLength(1);
    expectError(await api.call({ method: "POST", path: "/executions", rawBody: "{" }), 400, "InvalidJson");
    expectError(
      await api.call({ method: "POST", path: "/executions/ex-1/trigger", rawBody: "nope" }),
      400,
      "InvalidJson",
    );
  });

  it("answers 400 InvalidJson when a required body is missing", async () => {
    expectError(await api.call({ method: "POST", path: "/executions" }), 400, "InvalidJson");
    expectError(await api.call({ method: "POST", path: "/workflows", rawBody: "  \n" }), 400, "InvalidJson");
  });

  it("lists every problem of an invalid POST /executions body", async () => {
    const error = expectError(
      await api.call({
        method: "POST",
        path: "/executions",
        body: { workflow: 7, version: 0, start: "yes", idempotencyKey: "", extra: 1, other: true },
      }),
      400,
      "InvalidRequest",
    );
    const paths = error.details.map((detail) => detail.path).sort();
    expect(paths).toEqual(["extra", "idempotencyKey", "other", "start", "version", "workflow"]);
    for (const detail of error.details) {
      expect(detail.code).toEqual(expect.any(String));
      expect(detail.message).toEqual(expect.any(String));
    }
    expect(error.details.find((detail) => detail.path === "extra")?.code).toBe("unrecognized_keys");
  });

  it("refuses a body that is not an object, and a version that is not a whole number", async () => {
    expectError(await api.call({ method: "POST", path: "/executions", body: [1, 2] }), 400, "InvalidRequest");
    const error = expectError(
      await api.call({ method: "POST", path: "/executions", body: { workflow: "w", version: 1.5 } }),
      400,
      "InvalidRequest",
    );
    expect(error.details.map((detail) => detail.path)).toEqual(["version"]);
  });

  it("validates query parameters", async () => {
    const error = expectError(
      await api.call({ method: "GET", path: "/workflows/chain?version=abc" }),
      400,
      "InvalidRequest",
    );
    expect(error.details.map((detail) => detail.path)).toEqual(["query.version"]);
  });

  it("refuses unknown fields of a trigger body", async () => {
    const error = expectError(
      await api.call({ method: "POST", path: "/executions/ex-1/trigger", body: { input: 1, inptu: 2 } }),
      400,
      "InvalidRequest",
    );
    expect(error.details.map((detail) => detail.path)).toEqual(["inptu"]);
  });

  it("answers 413 PayloadTooLarge for a body over what a Lambda invocation carries, base64 or not", async () => {
    const big = JSON.stringify({ workflow: "chain", input: { blob: "x".repeat(DEFAULT_MAX_BODY_BYTES) } });
    expectError(
      await api.call({ method: "POST", path: "/executions", rawBody: big }),
      413,
      "PayloadTooLarge",
    );
    expectError(
      await api.call({ method: "POST", path: "/executions", rawBody: big, base64: true }),
      413,
      "PayloadTooLarge",
    );
  });

  it("decodes base64-encoded bodies", async () => {
    const answer = await api.call({
      method: "POST",
      path: "/workflows",
      body: chainDefinition("b64"),
      base64: true,
    });
    expect(answer.status).toBe(201);
    expect(answer.body).toMatchObject({ name: "b64", version: 1 });
    expectError(
      await api.call({ method: "POST", path: "/workflows", rawBody: "{not json", base64: true }),
      400,
      "InvalidJson",
    );
  });
});

describe("api workflows", () => {
  it("registers a definition: 201 when new, 200 with the same version when the content exists, next version on change", async () => {
    const first = await api.call({ method: "POST", path: "/workflows", body: chainDefinition() });
    expect(first.status).toBe(201);
    expect(first.body).toEqual({ name: "chain", version: 1, definitionHash: expect.any(String) });

    const again = await api.call({ method: "POST", path: "/workflows", body: chainDefinition() });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);

    const changed = { ...chainDefinition(), description: "v2" };
    const second = await api.call({ method: "POST", path: "/workflows", body: changed });
    expect(second.status).toBe(201);
    expect(second.body).toMatchObject({ name: "chain", version: 2 });
  });

  it("answers the stored definition, latest by default or the ?version asked for", async () => {
    await api.call({ method: "POST", path: "/workflows", body: chainDefinition() });
    await api.call({ method: "POST", path: "/workflows", body: { ...chainDefinition(), description: "v2" } });

    const latest = await api.call({ method: "GET", path: "/workflows/chain" });
    expect(latest.status).toBe(200);
    expect(latest.body).toMatchObject({
      name: "chain",
      version: 2,
      definitionHash: expect.any(String),
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      definition: { name: "chain", description: "v2" },
    });
    const v1 = await api.call({ method: "GET", path: "/workflows/chain?version=1" });
    expect(v1.body).toMatchObject({
      version: 1,
      definition: { name: "chain", nodes: chainDefinition().nodes },
    });

    expectError(await api.call({ method: "GET", path: "/workflows/chain?version=9" }), 404, "NotFound");
    expectError(await api.call({ method: "GET", path: "/workflows/unknown" }), 404, "NotFound");
  });

  it("lists the workflows by name with their latest version, in pages", async () => {
    expect((await api.call({ method: "GET", path: "/workflows" })).body).toEqual({ workflows: [] });
    for (const name of ["zeta", "alpha", "mid"]) {
      await api.call({ method: "POST", path: "/workflows", body: { ...chainDefinition(), name } });
    }
    const described = { ...chainDefinition(), name: "mid", description: "the second version" };
    expect((await api.call({ method: "POST", path: "/workflows", body: described })).status).toBe(201);

    const all = await api.call({ method: "GET", path: "/workflows" });
    expect(all.status).toBe(200);
    expect(all.body).toEqual({
      workflows: [
        { name: "alpha", latestVersion: 1, createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) },
        {
          name: "mid",
          latestVersion: 2,
          createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
          description: "the second version",
        },
        { name: "zeta", latestVersion: 1, createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) },
      ],
    });
    // createdAt is the first version's: a new version leaves it.
    const first = await api.call({ method: "GET", path: "/workflows/mid?version=1" });
    const mid = (all.body as { workflows: Array<{ name: string; createdAt: string }> }).workflows[1];
    expect(mid?.createdAt).toBe((first.body as { createdAt: string }).createdAt);

    const page1 = await api.call({ method: "GET", path: "/workflows?limit=2" });
    const body1 = page1.body as { workflows: Array<{ name: string }>; next?: string };
    expect(body1.workflows.map((w) => w.name)).toEqual(["alpha", "mid"]);
    expect(body1.next).toEqual(expect.any(String));
    const page2 = await api.call({ method: "GET", path: `/workflows?limit=2&next=${body1.next}` });
    expect(page2.body).toEqual({ workflows: [expect.objectContaining({ name: "zeta" })] });

    expectError(await api.call({ method: "GET", path: "/workflows?limit=0" }), 400, "InvalidRequest");
    expectError(await api.call({ method: "GET", path: "/workflows?limit=201" }), 400, "InvalidRequest");
    const bad = expectError(
      await api.call({ method: "GET", path: "/workflows?next=not-a-cursor" }),
      400,
      "InvalidCursor",
    );
    expect(bad.details[0]?.path).toBe("query.next");
    expectError(await api.call({ method: "DELETE", path: "/workflows" }), 405, "MethodNotAllowed");
  });

  it("answers 400 with every problem of an invalid definition", async () => {
    const answer = await api.call({
      method: "POST",
      path: "/workflows",
      body: {
        name: "bad",
        nodes: [
          { id: "a", type: "noop" },
          { id: "a", type: "noop" },
          { id: "b", type: "noop", dependsOn: ["missing"] },
        ],
      },
    });
    expect(answer.status).toBe(400);
    expect((answer.body as ErrorBody).error.details.length).toBeGreaterThanOrEqual(2);
  });
});

describe("api executions", () => {
  beforeEach(async () => {
    expect((await api.call({ method: "POST", path: "/workflows", body: chainDefinition() })).status).toBe(
      201,
    );
  });

  it("creates a running execution (202) and describes it", async () => {
    const created = await api.call({
      method: "POST",
      path: "/executions",
      body: { workflow: "chain", input: { n: 1 } },
    });
    expect(created.status).toBe(202);
    const { executionId, status } = created.body as { executionId: string; status: string };
    expect(status).toBe("RUNNING");

    const described = await api.call({
      method: "GET",
      path: `/executions/${encodeURIComponent(executionId)}`,
    });
    expect(described.status).toBe(200);
    expect(described.body).toMatchObject({
      executionId,
      workflow: "chain",
      version: 1,
      status: "RUNNING",
      input: { n: 1 },
      createdAt: expect.any(String),
    });
    expect((described.body as { nodes: Array<{ id: string }> }).nodes.map((node) => node.id).sort()).toEqual([
      "a",
      "b",
      "c",
    ]);
  });

  it("creates PENDING with start:false, triggers it (202), and answers 409 to a second trigger", async () => {
    const created = await api.call({
      method: "POST",
      path: "/executions",
      body: { workflow: "chain", start: false },
    });
    expect(created.status).toBe(202);
    const { executionId } = created.body as { executionId: string };
    expect(created.body).toMatchObject({ status: "PENDING" });

    const triggered = await api.call({
      method: "POST",
      path: `/executions/${executionId}/trigger`,
      body: { input: { late: true } },
    });
    expect(triggered.status).toBe(202);
    expect(triggered.body).toEqual({ executionId, status: "RUNNING" });

    expectError(
      await api.call({ method: "POST", path: `/executions/${executionId}/trigger` }),
      409,
      "Conflict",
    );
  });

  it("accepts a trigger with no body at all", async () => {
    const created = await api.call({
      method: "POST",
      path: "/executions",
      body: { workflow: "chain", start: false },
    });
    const { executionId } = created.body as { executionId: string };
    const triggered = await api.call({ method: "POST", path: `/executions/${executionId}/trigger` });
    expect(triggered.status).toBe(202);
  });

  it("returns the same execution for the same idempotencyKey (202 then 200)", async () => {
    const body = { workflow: "chain", idempotencyKey: "order-42" };
    const first = await api.call({ method: "POST", path: "/executions", body });
    const second = await api.call({ method: "POST", path: "/executions", body });
    expect(first.status).toBe(202);
    expect(second.status).toBe(200);
    expect((second.body as { executionId: string }).executionId).toBe(
      (first.body as { executionId: string }).executionId,
    );
  });

  it("answers 404 for an unknown execution or workflow", async () => {
    expectError(await api.call({ method: "GET", path: "/executions/does-not-exist" }), 404, "NotFound");
    expectError(
      await api.call({ method: "POST", path: "/executions/does-not-exist/trigger" }),
      404,
      "NotFound",
    );
    expectError(
      await api.call({ method: "POST", path: "/executions", body: { workflow: "nope" } }),
      404,
      "NotFound",
    );
  });
});

describe("api unexpected errors", () => {
  it("answers 500 with a generic message and logs the error, not the request body", async () => {
    api.engine.createExecution = async () => {
      throw new Error("database exploded at secret-host");
    };
    const logged = vi.spyOn(api.logger, "error");
    const answer = await api.call({
      method: "POST",
      path: "/executions",
      body: { workflow: "chain", input: { password: "hunter2" } },
    });
    const error = expectError(answer, 500, "InternalError");
    expect(error.message).not.toContain("secret-host");
    expect(logged).toHaveBeenCalledTimes(1);
    const serialized = JSON.stringify(logged.mock.calls[0], (_key, value) =>
      value instanceof Error ? { message: value.message } : value,
    );
    expect(serialized).toContain("database exploded");
    expect(serialized).not.toContain("hunter2");
  });
});
