/**
 * GET /executions/{id} gives the execution's modeled cost (`cost`: requests and dollars by service,
 * the total, the price model) through the local runtime on the embedded backend and on this run's
 * emulators. Its counts are checked against the engine's own calls in test/bench/cost-model.test.ts;
 * here: the field, its arithmetic, and what the records show (a blob, the events).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalRuntime } from "../../local/runtime.js";
import { PRICES } from "../../shared/domain/prices.js";
import { BACKEND_KINDS } from "../support/backends.js";
import { PATIENT } from "../support/progress.js";
import { type ApiClient, apiClient, startRuntime } from "../support/runtime.js";

const definition = {
  name: "costed",
  nodes: [
    { id: "a", type: "pass", params: { value: "small" } },
    // Over the inline threshold (4 KiB): written once to the blob store.
    { id: "b", type: "pass", params: { value: "x".repeat(6000) }, dependsOn: ["a"] },
    { id: "c", type: "pass", params: { value: 1 }, dependsOn: ["b"] },
  ],
};

describe.each(BACKEND_KINDS)("the modeled cost of an execution (%s)", PATIENT, (kind) => {
  let runtime: LocalRuntime;
  let api: ApiClient;

  beforeAll(async () => {
    runtime = await startRuntime(kind, { concurrency: 2 });
    api = apiClient(runtime.url);
    expect((await api.call("POST", "/workflows", definition)).status).toBe(201);
  });
  afterAll(async () => {
    await runtime?.stop();
  });

  it("GET /executions/{id} answers `cost`: requests and dollars by service, the total and the model", async () => {
    const started = await api.call("POST", "/executions", { workflow: "costed", input: {} });
    expect(started.status).toBe(202);
    const id = started.body.executionId as string;
    await api.waitForEnd(id);
    const { status, body } = await api.call("GET", `/executions/${id}`);
    expect(status).toBe(200);
    expect(body.status).toBe("SUCCEEDED");
    const { requests, usd, totalUsd, model } = body.cost;
    expect(model).toMatch(/us-east-1/);
    // Three short nodes each written once (their claims ride their completions), the execution
    // created and ended: at least 5 writes; its one listing index entry (its start sent its entry
    // first, so it never entered the due index); one blob; the execution's two lifecycle events.
    expect(requests.dynamodb.writeUnits).toBeGreaterThanOrEqual(5);
    expect(requests.dynamodb.indexWriteUnits).toBe(1);
    expect(requests.s3.puts).toBe(1);
    expect(requests.eventbridge.events).toBe(2);
    expect(requests.sqs.messages).toBeGreaterThanOrEqual(1);
    expect(requests.lambda.invocations).toBe(requests.sqs.messages);
    // Dollars are the requests at the list prices, and the total their sum.
    expect(usd.dynamodb).toBeCloseTo(
      ((requests.dynamodb.writeUnits + requests.dynamodb.indexWriteUnits) *
        PRICES.dynamoWritePerMillionUnits +
        requests.dynamodb.readUnits * PRICES.dynamoReadPerMillionUnits) /
        1e6,
      12,
    );
    expect(usd.s3).toBeCloseTo(
      (requests.s3.puts * PRICES.s3PutPerMillionRequests + requests.s3.gets * 0.4) / 1e6,
      12,
    );
    expect(usd.eventbridge).toBeCloseTo((2 * PRICES.eventBridgePerMillionEvents) / 1e6, 12);
    expect(totalUsd).toBeCloseTo(usd.dynamodb + usd.sqs + usd.lambda + usd.eventbridge + usd.s3, 12);
    expect(totalUsd).toBeGreaterThan(0);
  });

  it("a running execution's cost counts what happened so far; an unknown one is a 404", async () => {
    const started = await api.call("POST", "/executions", { workflow: "costed", input: {}, start: false });
    const id = started.body.executionId as string;
    const pending = await api.call("GET", `/executions/${id}`);
    expect(pending.status).toBe(200);
    // Created, not started: its create write and its listing index entry; started later by a
    // trigger, the sweeper looks at it first: its due index entry (put, and removed at its end).
    expect(pending.body.cost.requests.dynamodb).toMatchObject({ writeUnits: 1, indexWriteUnits: 1 });
    expect(pending.body.cost.requests.sqs.messages).toBe(0);
    expect(pending.body.cost.requests.eventbridge.events).toBe(0);
    expect(pending.body.cost.requests.s3.puts).toBe(0);
    // Triggered, it runs: its trigger write and its Started event are counted too.
    expect((await api.call("POST", `/executions/${id}/trigger`)).status).toBe(202);
    await api.waitForEnd(id);
    const ended = await api.call("GET", `/executions/${id}`);
    expect(ended.body.cost.requests.eventbridge.events).toBe(2);
    expect(ended.body.cost.requests.s3.puts).toBe(1);
    const missing = await api.call("GET", "/executions/no-such-execution");
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe("NotFound");
  });
});
