/**
 * Payloads end to end through the local runtime (HTTP → handlers → engine), on the embedded backend
 * and on DynamoDB + SQS + S3 (this run's emulators): any JSON round-trips exactly, large values go to
 * the blob store and pass through chains and joins by reference, and every limit is a clear 4xx or
 * a terminal PayloadTooLarge — never a 500, never a lease-expiry loop.
 */
import { isDeepStrictEqual } from "node:util";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import type { LocalRuntime } from "../../local/runtime.js";
import { encodeJson } from "../../shared/domain/json.js";
import { PAYLOAD_LIMITS } from "../../shared/domain/payload.js";
import { createTaskRegistry } from "../../shared/tasks/builtins.js";
import { defineTask } from "../../shared/tasks/task-type.js";
import { BACKEND_KINDS } from "../support/backends.js";
import { jsonValue } from "../support/json-arbitrary.js";
import { PATIENT } from "../support/progress.js";
import { type ApiClient, apiClient, type JsonBody, startRuntime } from "../support/runtime.js";

const MiB = 1024 * 1024;
const exact = (value: unknown) =>
  encodeJson(value, { maxBytes: Number.POSITIVE_INFINITY, maxDepth: Number.POSITIVE_INFINITY, what: "body" });

/** Outputs a string of `bytes` characters: a node output as large as asked. */
const bigOutput = defineTask({
  type: "big-output",
  params: z.object({ bytes: z.number().int().min(0) }).strict(),
  run: ({ params }) => "o".repeat(params.bytes),
});

/** A string input of about `bytes` bytes, with unicode and an odd key, so exactness is tested too. */
function largeInput(bytes: number): Record<string, unknown> {
  const input = JSON.parse('{"__proto__":{"n":-0},"":1e400}') as Record<string, unknown>;
  input.text = "ünïcödé·".repeat(Math.ceil(bytes / 13));
  return input;
}

describe.each(BACKEND_KINDS)("payloads end to end (%s)", PATIENT, (kind) => {
  let runtime: LocalRuntime;
  let api: ApiClient;

  beforeAll(async () => {
    runtime = await startRuntime(kind, {
      concurrency: 4,
      tasks: createTaskRegistry([bigOutput]),
    });
    api = apiClient(runtime.url);
    const workflows = [
      {
        name: "echo",
        nodes: [
          { id: "a", type: "pass" },
          { id: "b", type: "pass" },
          { id: "j", type: "merge", dependsOn: ["a", "b"] },
        ],
      },
      {
        name: "chain-and-join",
        nodes: [
          { id: "a", type: "pass" },
          { id: "b", type: "merge", dependsOn: ["a"] },
          { id: "c", type: "pass", dependsOn: ["b"] },
          { id: "d", type: "pass", dependsOn: ["a"] },
          { id: "j", type: "merge", dependsOn: ["c", "d"] },
        ],
      },
      {
        name: "too-large-output",
        nodes: [
          { id: "big", type: "big-output", params: { bytes: 12 * MiB }, retry: { maxAttempts: 3 } },
          { id: "after", type: "pass", dependsOn: ["big"] },
        ],
      },
    ];
    for (const definition of workflows) {
      const registered = await api.call("POST", "/workflows", definition);
      expect([200, 201]).toContain(registered.status);
    }
  });
  afterAll(async () => {
    await runtime?.stop();
  });

  async function start(body: Record<string, unknown>): Promise<string> {
    const started = await api.raw("POST", "/executions", exact(body));
    expect(started.status).toBe(202);
    return started.body.executionId as string;
  }

  it("round-trips any JSON exactly: input → pass → output, and through a merge join", async () => {
    await fc.assert(
      fc.asyncProperty(jsonValue, async (input) => {
        const executionId = await start({ workflow: "echo", input });
        const view: JsonBody = await api.waitForEnd(executionId, 60_000);
        expect(view.status).toBe("SUCCEEDED");
        const nodeA = view.nodes.find((n: { id: string }) => n.id === "a");
        expect(isDeepStrictEqual(view.input, input)).toBe(true);
        expect(isDeepStrictEqual(nodeA.output, input)).toBe(true);
        expect(isDeepStrictEqual(view.output, { j: { a: input, b: input } })).toBe(true);
      }),
      { numRuns: kind === "memory" ? 60 : 20 },
    );
  });

  /** The stored payloads: large values are blobs, and a merge holds references to them, not copies. */
  async function expectByReference(executionId: string): Promise<void> {
    const store = runtime.ports.store;
    const execution = await store.getExecution(executionId);
    expect(execution?.input).toHaveProperty("blob");
    const a = await store.getNode(executionId, "a");
    expect(a?.output).toHaveProperty("blob");
    const join = await store.getNode(executionId, "j");
    expect(join?.output).toHaveProperty("parts");
  }

  it("passes a 5 MiB input sent in the request through a chain and a join", async () => {
    const input = largeInput(5 * MiB - 4096);
    expect(Buffer.byteLength(exact({ workflow: "chain-and-join", input }))).toBeLessThan(5 * MiB + 1024);
    const executionId = await start({ workflow: "chain-and-join", input });
    const view: JsonBody = await api.waitForEnd(executionId, 120_000);
    expect(view.status).toBe("SUCCEEDED");
    expect(isDeepStrictEqual(view.output, { j: { c: input, d: input } })).toBe(true);
    const b = view.nodes.find((n: { id: string }) => n.id === "b");
    expect(isDeepStrictEqual(b.output, { a: input })).toBe(true);
    await expectByReference(executionId);
  });

  it("takes an 8 MiB input by upload (POST /payloads, then inputRef) through a chain and a join", async () => {
    const input = largeInput(8 * MiB);
    const text = exact(input);
    const bytes = Buffer.byteLength(text);
    const ticket = await api.call("POST", "/payloads", { bytes });
    expect(ticket.status).toBe(201);
    expect(ticket.body.inputRef).toMatch(/^up\//);
    const put = await fetch(ticket.body.upload.url, {
      method: ticket.body.upload.method,
      headers: ticket.body.upload.headers,
      body: text,
    });
    expect(put.status).toBe(200);
    const executionId = await start({ workflow: "chain-and-join", inputRef: ticket.body.inputRef });
    const view: JsonBody = await api.waitForEnd(executionId, 120_000);
    expect(view.status).toBe("SUCCEEDED");
    expect(isDeepStrictEqual(view.input, input)).toBe(true);
    expect(isDeepStrictEqual(view.output, { j: { c: input, d: input } })).toBe(true);
    await expectByReference(executionId);
  });

  it("answers a 12 MiB body with 413 in weft's error shape, and creates nothing", async () => {
    const before = await api.call("GET", "/executions?workflow=chain-and-join&limit=200");
    const answer = await api.raw(
      "POST",
      "/executions",
      exact({ workflow: "chain-and-join", input: "x".repeat(12 * MiB) }),
    );
    expect(answer.status).toBe(413);
    expect(answer.body.error.code).toBe("PayloadTooLarge");
    expect(answer.body.error.message).toContain("POST /payloads");
    const after = await api.call("GET", "/executions?workflow=chain-and-join&limit=200");
    expect(after.body.executions).toHaveLength(before.body.executions.length);
  });

  it("refuses an upload announced over 10 MiB, and an uploaded input that is not JSON, with 4xx", async () => {
    const over = await api.call("POST", "/payloads", { bytes: PAYLOAD_LIMITS.maxBytes + 1 });
    expect(over.status).toBe(400);
    expect(over.body.error.details[0].message).toContain(String(PAYLOAD_LIMITS.maxBytes));
    const text = "{ not json";
    const ticket = await api.call("POST", "/payloads", { bytes: Buffer.byteLength(text) });
    await fetch(ticket.body.upload.url, { method: "PUT", headers: ticket.body.upload.headers, body: text });
    const answer = await api.call("POST", "/executions", {
      workflow: "echo",
      inputRef: ticket.body.inputRef,
    });
    expect(answer.status).toBe(400);
    expect(answer.body.error.message).toContain("not valid JSON");
    const missing = await api.call("POST", "/executions", { workflow: "echo", inputRef: "up/never-made" });
    expect(missing.status).toBe(400);
    expect(missing.body.error.details[0].code).toBe("upload_missing");
  });

  it("fails a node whose output is 12 MiB at once with a terminal PayloadTooLarge (one attempt)", async () => {
    const executionId = await start({ workflow: "too-large-output" });
    const view: JsonBody = await api.waitForEnd(executionId, 120_000);
    expect(view.status).toBe("FAILED");
    const big = view.nodes.find((n: { id: string }) => n.id === "big");
    expect(big).toMatchObject({ status: "FAILED", attempt: 1 });
    expect(big.error).toMatchObject({ name: "PayloadTooLarge", retryable: false });
    expect(big.error.message).toContain(`${PAYLOAD_LIMITS.maxBytes} bytes`);
    const dead = await api.call("GET", "/dlq?limit=200");
    expect(dead.body.deadLetters.some((d: JsonBody) => d.executionId === executionId)).toBe(true);
  });

  it("answers inputs nested 10,000 levels with 400 PayloadTooDeep, and 513 levels too; 512 are taken", async () => {
    for (const levels of [10_000, 513]) {
      const input = `${"[".repeat(levels)}${"]".repeat(levels)}`;
      const answer = await api.raw("POST", "/executions", `{"workflow":"echo","input":${input}}`);
      expect(answer.status).toBe(400);
      expect(answer.body.error.code).toBe("PayloadTooDeep");
      expect(answer.body.error.message).toContain("512");
    }
    const input = `${"[".repeat(512)}${"]".repeat(512)}`;
    const answer = await api.raw("POST", "/executions", `{"workflow":"echo","input":${input}}`);
    expect(answer.status).toBe(202);
    const view: JsonBody = await api.waitForEnd(answer.body.executionId, 60_000);
    expect(view.status).toBe("SUCCEEDED");
    expect(exact(view.output.j.a)).toBe(input);
  });
});
