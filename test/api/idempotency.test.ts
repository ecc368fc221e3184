/**
 * Idempotency keys of POST /executions (shared/engine/idempotency.ts): a key is unique within its
 * workflow; the same request with it answers 200 with the execution it made, any other request
 * 409 IdempotencyKeyConflict, creating nothing.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { type ApiFixture, chainDefinition, createApiFixture, expectErrorAnswer } from "./helpers.js";

type Json = Record<string, unknown>;

let api: ApiFixture;
beforeEach(async () => {
  api = createApiFixture();
  for (const name of ["x", "y"])
    expect((await api.call({ method: "POST", path: "/workflows", body: chainDefinition(name) })).status).toBe(
      201,
    );
});

const create = (body: Json) => api.call({ method: "POST", path: "/executions", body });
const idOf = (answer: { body: unknown }) => (answer.body as { executionId: string }).executionId;
const listed = async () =>
  ((await api.call({ method: "GET", path: "/executions?limit=100" })).body as { executions: Json[] })
    .executions;

describe("POST /executions with an idempotencyKey", () => {
  it("scopes the key to the workflow: x and y with the same key get their own executions", async () => {
    const x = await create({ workflow: "x", idempotencyKey: "order-1", input: { n: 1 } });
    const y = await create({ workflow: "y", idempotencyKey: "order-1", input: { n: 1 } });
    expect([x.status, y.status]).toEqual([202, 202]);
    expect(idOf(y)).not.toBe(idOf(x));
    const view = await api.call({ method: "GET", path: `/executions/${idOf(y)}` });
    expect((view.body as Json).workflow).toBe("y");

    // Each key keeps answering with its own workflow's execution.
    const xAgain = await create({ workflow: "x", idempotencyKey: "order-1", input: { n: 1 } });
    const yAgain = await create({ workflow: "y", idempotencyKey: "order-1", input: { n: 1 } });
    expect([xAgain.status, idOf(xAgain)]).toEqual([200, idOf(x)]);
    expect([yAgain.status, idOf(yAgain)]).toEqual([200, idOf(y)]);
    expect(await listed()).toHaveLength(2);
  });

  it("answers the same request (same input, start and version) with 200 and the same execution", async () => {
    const first = await create({ workflow: "x", idempotencyKey: "k", input: { a: 1, b: [2] } });
    const same = await create({ workflow: "x", idempotencyKey: "k", input: { a: 1, b: [2] }, start: true });
    const named = await create({ workflow: "x", idempotencyKey: "k", input: { a: 1, b: [2] }, version: 1 });
    expect(first.status).toBe(202);
    for (const answer of [same, named]) {
      expect(answer.status).toBe(200);
      expect(idOf(answer)).toBe(idOf(first));
    }
    // No input at all is the input null, as it is stored.
    const bare = await create({ workflow: "y", idempotencyKey: "k", start: false });
    const nullInput = await create({ workflow: "y", idempotencyKey: "k", input: null, start: false });
    expect([bare.status, nullInput.status]).toEqual([202, 200]);
    expect(idOf(nullInput)).toBe(idOf(bare));
    expect(await listed()).toHaveLength(2);
  });

  it("refuses the key with a different input: 409 IdempotencyKeyConflict naming the key and the execution, nothing created", async () => {
    const first = await create({ workflow: "x", idempotencyKey: "order-7", input: { amount: 10 } });
    const sent = api.queue.size;
    const answer = await create({ workflow: "x", idempotencyKey: "order-7", input: { amount: 11 } });
    const error = expectErrorAnswer(answer, 409, "IdempotencyKeyConflict");
    expect(error.message).toContain('"order-7"');
    expect(error.message).toContain(idOf(first));
    expect(error.details.map((d) => d.path)).toEqual(["input"]);
    // Exact JSON: the same members in another order are another input.
    const reordered = await create({ workflow: "x", idempotencyKey: "order-7", input: { b: 1, a: 2 } });
    expectErrorAnswer(reordered, 409, "IdempotencyKeyConflict");
    expect(await listed()).toHaveLength(1);
    expect(api.queue.size).toBe(sent);
    // The key still answers the first request.
    const again = await create({ workflow: "x", idempotencyKey: "order-7", input: { amount: 10 } });
    expect([again.status, idOf(again)]).toEqual([200, idOf(first)]);
  });

  it("refuses the key with another start flag or another named version", async () => {
    const first = await create({ workflow: "x", idempotencyKey: "two-step", input: 1, start: false });
    expect(first.status).toBe(202);
    const started = expectErrorAnswer(
      await create({ workflow: "x", idempotencyKey: "two-step", input: 1 }),
      409,
      "IdempotencyKeyConflict",
    );
    expect(started.details.map((d) => d.path)).toEqual(["start"]);

    // A version 2 of x: naming it is another request; naming none still asks for what the key made.
    const v2 = { ...chainDefinition("x"), description: "v2" };
    expect((await api.call({ method: "POST", path: "/workflows", body: v2 })).status).toBe(201);
    const versioned = expectErrorAnswer(
      await create({ workflow: "x", idempotencyKey: "two-step", input: 2, start: false, version: 2 }),
      409,
      "IdempotencyKeyConflict",
    );
    expect(versioned.details.map((d) => d.path)).toEqual(["input", "version"]);
    const latest = await create({ workflow: "x", idempotencyKey: "two-step", input: 1, start: false });
    expect([latest.status, idOf(latest)]).toEqual([200, idOf(first)]);
    expect(await listed()).toHaveLength(1);
  });

  it("compares an uploaded input (inputRef) by its content, as stored: the same value inline is the same request", async () => {
    await api.ports.blobs.put("up/same", '{ "order": 1,\n  "items": [1, 2] }');
    await api.ports.blobs.put("up/other", '{"order":2,"items":[1,2]}');
    const uploaded = await create({ workflow: "x", idempotencyKey: "up", inputRef: "up/same" });
    const inline = await create({ workflow: "x", idempotencyKey: "up", input: { order: 1, items: [1, 2] } });
    expect([uploaded.status, inline.status]).toEqual([202, 200]);
    expect(idOf(inline)).toBe(idOf(uploaded));
    const other = await create({ workflow: "x", idempotencyKey: "up", inputRef: "up/other" });
    expect(expectErrorAnswer(other, 409, "IdempotencyKeyConflict").details.map((d) => d.path)).toEqual([
      "input",
    ]);
    expect(await listed()).toHaveLength(1);
  });

  it("under concurrent requests with one key, creates one execution; a racing different input gets 409 or made it", async () => {
    const answers = await Promise.all([
      ...Array.from({ length: 5 }, () => create({ workflow: "x", idempotencyKey: "race", input: "a" })),
      create({ workflow: "x", idempotencyKey: "race", input: "b" }),
    ]);
    const ids = new Set(answers.filter((a) => a.status !== 409).map(idOf));
    expect(ids.size).toBe(1);
    expect(answers.filter((a) => a.status === 202)).toHaveLength(1);
    expect(await listed()).toHaveLength(1);
  });
});
