/**
 * The API's side of payloads, with the deployed defaults: large values come back as references
 * unless `?resolve=true` (and then only while the response stays under its budget); uploads and
 * `inputRef`; every bad payload a 4xx naming what is wrong.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { createApiHandler } from "../../functions/api/app.js";
import { PAYLOAD_LIMITS } from "../../shared/domain/payload.js";
import {
  type ApiFixture,
  apiEvent,
  chainDefinition,
  createApiFixture,
  expectErrorAnswer,
} from "./helpers.js";

// biome-ignore lint/suspicious/noExplicitAny: response bodies are untyped JSON the assertions check
type Json = any;

describe("api payloads", () => {
  let api: ApiFixture;

  beforeEach(async () => {
    api = createApiFixture();
    await api.call({ method: "POST", path: "/workflows", body: chainDefinition() });
  });

  async function create(input: unknown): Promise<string> {
    const answer = await api.call({
      method: "POST",
      path: "/executions",
      body: { workflow: "chain", input },
    });
    expect(answer.status).toBe(202);
    return (answer.body as Json).executionId;
  }

  it("answers a small input inline and a large one as a reference unless resolve=true", async () => {
    const small = await create({ n: 1 });
    expect((await api.call({ method: "GET", path: `/executions/${small}` })).body).toMatchObject({
      input: { n: 1 },
    });

    const input = { text: "x".repeat(PAYLOAD_LIMITS.inlineBytes + 1) };
    const large = await create(input);
    const view = (await api.call({ method: "GET", path: `/executions/${large}` })).body as Json;
    expect(view).not.toHaveProperty("input");
    expect(view.inputRef).toEqual({
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      bytes: JSON.stringify(input).length,
    });
    const resolved = (await api.call({ method: "GET", path: `/executions/${large}?resolve=true` }))
      .body as Json;
    expect(resolved.input).toEqual(input);
    expect(resolved).not.toHaveProperty("inputRef");
  });

  it("inlines only what fits the response budget, the rest stays a reference", async () => {
    const handler = createApiHandler(api.engine, {
      logger: api.logger,
      views: { resolveByDefault: true, maxInlineBytes: 10_000 },
    });
    const input = { text: "y".repeat(20_000) };
    const id = await create(input);
    const answer = await handler(apiEvent({ method: "GET", path: `/executions/${id}` }));
    const view = JSON.parse(answer.body ?? "{}") as Json;
    expect(view.inputRef.bytes).toBe(JSON.stringify(input).length);
  });

  it("refuses resolve values other than true and false", async () => {
    const id = await create(1);
    const error = expectErrorAnswer(
      await api.call({ method: "GET", path: `/executions/${id}?resolve=yes` }),
      400,
      "InvalidRequest",
    );
    expect(error.details[0]?.path).toBe("query.resolve");
  });

  it("refuses input and inputRef together, and an inputRef POST /payloads never answered", async () => {
    const both = expectErrorAnswer(
      await api.call({
        method: "POST",
        path: "/executions",
        body: { workflow: "chain", input: 1, inputRef: "up/x" },
      }),
      400,
      "InvalidRequest",
    );
    expect(both.details[0]?.message).toContain("not both");
    const bad = expectErrorAnswer(
      await api.call({
        method: "POST",
        path: "/executions",
        body: { workflow: "chain", inputRef: "s3://bucket/key" },
      }),
      400,
      "InvalidRequest",
    );
    expect(bad.details[0]?.path).toBe("inputRef");
  });

  it("answers 501 for an upload where the blob store serves no clients, naming why", async () => {
    const error = expectErrorAnswer(
      await api.call({ method: "POST", path: "/payloads", body: { bytes: 10 } }),
      501,
      "UploadsUnavailable",
    );
    expect(error.message).toContain("uploads");
  });

  it("answers 413 for an input over 10 MiB that fits the body limit of a looser handler, and stores nothing", async () => {
    const handler = createApiHandler(api.engine, { logger: api.logger, maxBodyBytes: 20 * 1024 * 1024 });
    const body = JSON.stringify({ workflow: "chain", input: "z".repeat(PAYLOAD_LIMITS.maxBytes) });
    const answer = await handler(apiEvent({ method: "POST", path: "/executions", rawBody: body }));
    expect(answer.statusCode).toBe(413);
    const error = JSON.parse(answer.body ?? "{}").error as Json;
    expect(error.code).toBe("PayloadTooLarge");
    expect(error.message).toContain(String(PAYLOAD_LIMITS.maxBytes));
    const listed = await api.call({ method: "GET", path: "/executions" });
    expect((listed.body as Json).executions).toEqual([]);
  });

  it("keeps odd inputs exactly: big integers, 1e-300, 1e400, -0, __proto__, constructor and empty keys", async () => {
    const text =
      '{"id":12345678901234567890,"tiny":1e-300,"huge":1e400,"neg":-0,"__proto__":{"constructor":{"":1}}}';
    const answer = await api.call({
      method: "POST",
      path: "/executions",
      rawBody: `{"workflow":"chain","input":${text}}`,
    });
    expect(answer.status).toBe(202);
    const view = await api.handler(
      apiEvent({ method: "GET", path: `/executions/${(answer.body as Json).executionId}` }),
    );
    const body = view.body ?? "";
    // Every digit, as sent (exact numbers, issue 28): the text comes back as it went in.
    expect(body).toContain(`"input":${text}`);
    expect(JSON.parse(body).input).toEqual(JSON.parse(text));
  });

  it("answers a definition nested deeper than the limit with 400 PayloadTooDeep, before validating it", async () => {
    const deep = `${"[".repeat(600)}${"]".repeat(600)}`;
    const error = expectErrorAnswer(
      await api.call({
        method: "POST",
        path: "/workflows",
        rawBody: `{"name":"deep","nodes":[{"id":"a","type":"pass","params":{"value":${deep}}}]}`,
      }),
      400,
      "PayloadTooDeep",
    );
    expect(error.message).toContain(String(PAYLOAD_LIMITS.maxDepth));
  });
});
