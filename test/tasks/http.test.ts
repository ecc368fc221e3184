/**
 * The `http` task type through the real engine (in-memory ports) against a local HTTP server:
 * success, retries on 503 and 429 (Retry-After), terminal 4xx with a dead letter, timeouts,
 * oversized bodies, and params checked at submit.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { WeftError } from "../../shared/domain/errors.js";
import { HISTORY } from "../../shared/engine/lifecycle.js";
import { httpTask, parseRetryAfter } from "../../shared/tasks/http.js";
import { type Backend, createBackend } from "../support/backends.js";
import { countEvents } from "../support/harness.js";
import { fastRetry, runWorkflow } from "./helpers.js";

interface Received {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

let server: Server;
let baseUrl: string;
let received: Received[] = [];
let respond: (request: Received, response: ServerResponse, index: number) => void = (_, res) => res.end();

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const request = {
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      };
      received.push(request);
      respond(request, res, received.length - 1);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

let backend: Backend | undefined;
afterEach(async () => {
  await backend?.cleanup();
  backend = undefined;
  received = [];
});

async function engineWith(options: Parameters<typeof httpTask>[0] = {}) {
  backend = await createBackend("memory", { tasks: [httpTask(options)] });
  return backend;
}

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
};

describe("http task", () => {
  it("sends the request with its Idempotency-Key and returns status, headers and the parsed JSON body", async () => {
    respond = (_, res) => json(res, 201, { id: 7, ok: true }, { "X-Request-Id": "abc" });
    const run = await runWorkflow(await engineWith(), {
      name: "http-ok",
      nodes: [
        {
          id: "create",
          type: "http",
          params: {
            method: "POST",
            url: `${baseUrl}/orders?token=secret`,
            headers: { "X-Custom": "yes" },
            body: { item: "book", qty: 2 },
          },
        },
      ],
    });
    expect(run.view.status).toBe("SUCCEEDED");
    expect(run.node("create").output).toEqual({
      status: 201,
      headers: expect.objectContaining({ "content-type": "application/json", "x-request-id": "abc" }),
      body: { id: 7, ok: true },
    });
    expect(received).toHaveLength(1);
    const request = received[0]!;
    expect(request.method).toBe("POST");
    expect(request.url).toBe("/orders?token=secret");
    expect(request.headers["idempotency-key"]).toBe(`${run.executionId}:create:1`);
    expect(request.headers["x-custom"]).toBe("yes");
    expect(request.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(request.body)).toEqual({ item: "book", qty: 2 });
  });

  it("sends a string body as is and returns a text body as text", async () => {
    respond = (_, res) => {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("pong");
    };
    const run = await runWorkflow(await engineWith(), {
      name: "http-text",
      nodes: [
        {
          id: "ping",
          type: "http",
          params: {
            method: "PUT",
            url: `${baseUrl}/ping`,
            body: "ping",
            headers: { "content-type": "text/plain" },
          },
        },
      ],
    });
    expect(run.view.status).toBe("SUCCEEDED");
    expect(run.node("ping").output).toMatchObject({ status: 200, body: "pong" });
    expect(received[0]?.body).toBe("ping");
    expect(received[0]?.headers["content-type"]).toBe("text/plain");
  });

  it("answers a HEAD with headers and no body, whatever its content-length", async () => {
    respond = (_, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": String(10 * 1024 * 1024) });
      res.end();
    };
    const run = await runWorkflow(await engineWith({ maxResponseBytes: 1024 }), {
      name: "http-head",
      nodes: [{ id: "probe", type: "http", params: { method: "HEAD", url: `${baseUrl}/file` } }],
    });
    expect(run.node("probe")).toMatchObject({
      status: "COMPLETED",
      output: { status: 200, headers: { "content-length": String(10 * 1024 * 1024) }, body: null },
    });
    expect(received[0]?.method).toBe("HEAD");
  });

  it("retries a 503 and succeeds, with a new Idempotency-Key for the new attempt", async () => {
    respond = (_, res, index) =>
      index === 0 ? json(res, 503, { error: "busy" }) : json(res, 200, { done: true });
    const run = await runWorkflow(await engineWith(), {
      name: "http-503",
      nodes: [
        { id: "call", type: "http", params: { method: "GET", url: `${baseUrl}/flaky` }, retry: fastRetry },
      ],
    });
    expect(run.view.status).toBe("SUCCEEDED");
    expect(run.node("call")).toMatchObject({
      status: "COMPLETED",
      attempt: 2,
      output: { body: { done: true } },
    });
    expect(countEvents(run.history, HISTORY.nodeRetryScheduled, "call")).toBe(1);
    const retry = run.history.find((e) => e.type === HISTORY.nodeRetryScheduled);
    expect(retry?.detail).toMatchObject({ error: { name: "RetryableError", retryable: true } });
    expect(retry?.detail?.error).toMatchObject({ message: expect.stringContaining("503") });

    // One key per attempt: `${executionId}:${nodeId}:${attempt}`, stable within the attempt, new for the next.
    const keys = received.map((r) => r.headers["idempotency-key"]);
    expect(keys).toEqual([`${run.executionId}:call:1`, `${run.executionId}:call:2`]);
    expect(keys[0]).not.toBe(keys[1]);
  });

  it("honours Retry-After (seconds) on a 429", async () => {
    respond = (_, res, index) =>
      index === 0
        ? json(res, 429, { error: "slow down" }, { "Retry-After": "1" })
        : json(res, 200, { ok: 1 });
    const run = await runWorkflow(await engineWith(), {
      name: "http-429",
      nodes: [
        { id: "call", type: "http", params: { method: "GET", url: `${baseUrl}/limited` }, retry: fastRetry },
      ],
    });
    expect(run.view.status).toBe("SUCCEEDED");
    expect(run.node("call").attempt).toBe(2);
    const retry = run.history.find((e) => e.type === HISTORY.nodeRetryScheduled);
    // The definition's backoff would be 50 ms: the server's Retry-After wins.
    expect(retry?.detail?.delayMs).toBe(1000);
    const started = run.history.filter((e) => e.type === HISTORY.nodeStarted).map((e) => e.at);
    expect(started[1]! - started[0]!).toBeGreaterThanOrEqual(1000);
  });

  it("reads Retry-After as an HTTP-date too, and caps it at 900 seconds", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(parseRetryAfter("Thu, 01 Jan 2026 00:00:30 GMT", now)).toBe(30);
    expect(parseRetryAfter("Wed, 31 Dec 2025 23:00:00 GMT", now)).toBe(0);
    expect(parseRetryAfter("86400", now)).toBe(900);
    expect(parseRetryAfter("soon", now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });

  it("fails a 400 at once: one attempt, execution FAILED, a dead letter kept", async () => {
    respond = (_, res) => json(res, 400, { error: "bad order" });
    const { engine } = await engineWith();
    const run = await runWorkflow(backend!, {
      name: "http-400",
      nodes: [
        {
          id: "call",
          type: "http",
          params: { method: "POST", url: `${baseUrl}/orders?key=hidden`, body: {} },
          retry: fastRetry,
        },
        { id: "after", type: "noop", dependsOn: ["call"] },
      ],
    });
    expect(run.view.status).toBe("FAILED");
    const call = run.node("call");
    expect(call).toMatchObject({ status: "FAILED", attempt: 1 });
    expect(call.error?.name).toBe("TerminalError");
    expect(call.error?.message).toContain("answered 400");
    expect(call.error?.message).toContain("bad order");
    // The query string may hold secrets: it is left out of the error.
    expect(call.error?.message).not.toContain("hidden");
    expect(run.node("after").status).toBe("CANCELLED");
    expect(received).toHaveLength(1);
    expect(countEvents(run.history, HISTORY.nodeRetryScheduled)).toBe(0);

    const dead = await engine.listDeadLetters({ limit: 10 });
    expect(dead.items).toHaveLength(1);
    expect(dead.items[0]).toMatchObject({
      executionId: run.executionId,
      nodeId: "call",
      attempt: 1,
      reason: "terminal",
      error: { name: "TerminalError" },
    });
  });

  it("accepts the statuses listed in expectStatus and refuses others", async () => {
    respond = (req, res) => (req.url === "/gone" ? json(res, 404, { missing: true }) : json(res, 200, {}));
    const run = await runWorkflow(await engineWith(), {
      name: "http-expect",
      nodes: [
        {
          id: "gone",
          type: "http",
          params: { method: "DELETE", url: `${baseUrl}/gone`, expectStatus: [200, 404] },
        },
        { id: "strict", type: "http", params: { method: "GET", url: `${baseUrl}/ok`, expectStatus: 204 } },
      ],
    });
    expect(run.node("gone")).toMatchObject({
      status: "COMPLETED",
      output: { status: 404, body: { missing: true } },
    });
    expect(run.node("strict")).toMatchObject({ status: "FAILED", attempt: 1 });
    expect(run.node("strict").error?.message).toContain("expected 204");
  });

  it("refuses a response body above the limit, and stops reading it", async () => {
    let closed = false;
    respond = (_, res) => {
      // An endless chunked stream: only a reader that stops on the limit lets this request end.
      res.writeHead(200, { "content-type": "application/octet-stream" });
      const chunk = Buffer.alloc(1024, 97);
      const timer = setInterval(() => res.write(chunk), 5);
      res.on("close", () => {
        closed = true;
        clearInterval(timer);
      });
    };
    const run = await runWorkflow(await engineWith({ maxResponseBytes: 4096 }), {
      name: "http-big",
      nodes: [
        { id: "download", type: "http", params: { method: "GET", url: `${baseUrl}/big` }, retry: fastRetry },
      ],
    });
    expect(run.view.status).toBe("FAILED");
    const node = run.node("download");
    expect(node).toMatchObject({ status: "FAILED", attempt: 1 });
    expect(node.error).toMatchObject({ name: "TerminalError", message: "response body exceeds 4096 bytes" });
    await expect.poll(() => closed).toBe(true);
  });

  it("refuses a body whose content-length is above the default 256 KiB without reading it", async () => {
    respond = (_, res) => json(res, 200, { blob: "x".repeat(300 * 1024) });
    const run = await runWorkflow(await engineWith(), {
      name: "http-big-default",
      nodes: [{ id: "download", type: "http", params: { method: "GET", url: `${baseUrl}/big` } }],
    });
    expect(run.node("download").error?.message).toBe(`response body exceeds ${256 * 1024} bytes`);
  });

  it("retries a request that times out, then fails when attempts run out", async () => {
    respond = () => {}; // never answers
    const run = await runWorkflow(await engineWith(), {
      name: "http-timeout",
      nodes: [
        {
          id: "slow",
          type: "http",
          params: { method: "GET", url: `${baseUrl}/slow`, timeoutMs: 100 },
          retry: { ...fastRetry, maxAttempts: 2 },
        },
      ],
    });
    expect(run.node("slow")).toMatchObject({ status: "FAILED", attempt: 2 });
    expect(run.node("slow").error).toMatchObject({ name: "RetryableError", retryable: true });
    expect(run.node("slow").error?.message).toContain("timed out after 100 ms");
    expect(received).toHaveLength(2);
  });

  it("retries a refused connection (network error)", async () => {
    const closedServer = createServer();
    await new Promise<void>((resolve) => closedServer.listen(0, "127.0.0.1", resolve));
    const port = (closedServer.address() as AddressInfo).port;
    await new Promise((resolve) => closedServer.close(resolve));
    const run = await runWorkflow(await engineWith(), {
      name: "http-refused",
      nodes: [
        {
          id: "x",
          type: "http",
          params: { method: "GET", url: `http://127.0.0.1:${port}/` },
          retry: fastRetry,
        },
      ],
    });
    expect(run.node("x")).toMatchObject({ status: "FAILED", attempt: 3, error: { name: "RetryableError" } });
    expect(run.node("x").error?.message).toContain("ECONNREFUSED");
  });

  it("stops the request when the attempt's signal fires (cancellation, lost lease)", async () => {
    respond = () => {}; // never answers
    const controller = new AbortController();
    const reason = new Error("attempt aborted: cancelled");
    const running = httpTask().run({
      input: null,
      params: { method: "GET", url: `${baseUrl}/hang` },
      deps: {},
      context: {
        executionId: "e",
        nodeId: "n",
        attempt: 1,
        idempotencyKey: "e:n:1",
        signal: controller.signal,
        deadline: Date.now() + 60_000,
        sleep: async () => {},
        now: () => Date.now(),
      },
    });
    await expect.poll(() => received.length).toBe(1);
    controller.abort(reason);
    await expect(running).rejects.toBe(reason);
  });

  it("refuses bad params at submit, listing every problem", async () => {
    const { engine } = await engineWith();
    const error = await engine
      .registerWorkflow({
        name: "http-bad",
        nodes: [
          { id: "a", type: "http", params: { method: "FETCH", url: "ftp://example.test/x" } },
          { id: "b", type: "http", params: { method: "GET", url: "https://example.test", body: { no: 1 } } },
          { id: "c", type: "http", params: { method: "GET", url: "https://example.test", timeoutMs: 0 } },
        ],
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(WeftError);
    const weft = error as WeftError;
    expect(weft.code).toBe("InvalidDefinition");
    const paths = weft.details.filter((d) => d.code === "invalid_params").map((d) => d.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        "nodes[0].params.method",
        "nodes[0].params.url",
        "nodes[1].params.body",
        "nodes[2].params.timeoutMs",
      ]),
    );
  });
});
