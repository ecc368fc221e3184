/**
 * The `http` task type through the real engine (in-memory ports) against a local HTTP server:
 * success, retries on 503 and 429 (Retry-After), terminal 4xx with a dead letter, timeouts,
 * oversized bodies, params checked at submit; the egress guard at registration and at run time
 * (a resolver injected through the task's options plays DNS), redirects, and secret references
 * resolved from a store (the AWS stores on the emulator: secrets.test.ts).
 *
 * The test server listens on loopback, so the tasks here allow loopback as `npm start` does, unless
 * a test is about refusing it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { HTTP_ALLOW_SETTING, httpEgressPolicy } from "../../shared/config/egress.js";
import { RetryableError, WeftError } from "../../shared/domain/errors.js";
import { definitionHash } from "../../shared/domain/hash.js";
import { attemptTrace, executionTrace, parseTraceparent } from "../../shared/domain/trace.js";
import { HISTORY } from "../../shared/engine/lifecycle.js";
import { EgressPolicy, parseEgressAllow } from "../../shared/tasks/egress.js";
import { httpTask } from "../../shared/tasks/http.js";
import type { Resolve } from "../../shared/tasks/http-connect.js";
import { parseRetryAfter } from "../../shared/tasks/http-request.js";
import { MapSecretStore } from "../../shared/tasks/secrets.js";
import { type Backend, createBackend } from "../support/backends.js";
import { countEvents, runToEnd } from "../support/harness.js";
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

/** `npm start`'s policy: loopback allowed. */
const LOCAL = httpEgressPolicy(undefined, "local");
/** The deployed default: public addresses only. */
const DEPLOYED = httpEgressPolicy(undefined, "deployed");

async function engineWith(options: Parameters<typeof httpTask>[0] = {}) {
  backend = await createBackend("memory", { tasks: [httpTask({ egress: LOCAL, ...options })] });
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

  it("sends each attempt's traceparent: the execution's trace id, a span id per attempt", async () => {
    respond = (_, res, index) =>
      index === 0 ? json(res, 503, { error: "busy" }) : json(res, 200, { done: true });
    const run = await runWorkflow(await engineWith(), {
      name: "http-traced",
      nodes: [
        { id: "call", type: "http", params: { method: "GET", url: `${baseUrl}/flaky` }, retry: fastRetry },
      ],
    });
    expect(run.view.status).toBe("SUCCEEDED");
    const sent = received.map((r) => parseTraceparent(r.headers.traceparent));
    const execution = executionTrace((await backend!.store.getExecution(run.executionId))!);
    expect(sent.map((t) => t?.traceId)).toEqual([execution.traceId, execution.traceId]);
    expect(sent.map((t) => t?.parentId)).toEqual([
      attemptTrace({ executionId: run.executionId }, "call", 1).spanId,
      attemptTrace({ executionId: run.executionId }, "call", 2).spanId,
    ]);
    expect(sent[0]?.parentId).not.toBe(sent[1]?.parentId);
    expect(sent[0]?.parentId).not.toBe(execution.spanId);
  });

  it("leaves a traceparent the node's params set as it is", async () => {
    const own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    await runWorkflow(await engineWith(), {
      name: "http-own-trace",
      nodes: [
        {
          id: "call",
          type: "http",
          params: { method: "GET", url: `${baseUrl}/x`, headers: { TraceParent: own } },
        },
      ],
    });
    expect(received[0]?.headers.traceparent).toBe(own);
  });

  it("sends no traceparent when its context has no trace (a context built outside the engine)", async () => {
    respond = (_, res) => json(res, 200, {});
    await httpTask({ egress: LOCAL }).run({
      input: null,
      params: { method: "GET", url: `${baseUrl}/bare` },
      deps: {},
      context: {
        executionId: "e",
        nodeId: "n",
        attempt: 1,
        idempotencyKey: "e:n:1",
        signal: new AbortController().signal,
        deadline: Date.now() + 60_000,
        sleep: async () => {},
        now: () => Date.now(),
      },
    });
    expect(received[0]?.headers.traceparent).toBeUndefined();
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
    const running = httpTask({ egress: LOCAL }).run({
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

/** A resolver that answers from a table, as DNS would; other names are not found. */
function resolver(table: Record<string, string[]>): Resolve {
  return async (hostname) => {
    const addresses = table[hostname];
    if (!addresses)
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
    return addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  };
}

function policy(allow: string): EgressPolicy {
  const parsed = parseEgressAllow(allow);
  if (!parsed.ok) throw new Error(parsed.problems.join("; "));
  return new EgressPolicy(parsed.value, HTTP_ALLOW_SETTING);
}

const port = () => new URL(baseUrl).port;

describe("http task egress guard", () => {
  const refused = [
    { id: "metadata", url: "http://169.254.169.254/latest/meta-data" },
    { id: "private", url: "http://10.0.0.1" },
    { id: "local", url: "http://localhost:1" },
    { id: "mapped", url: "http://[::ffff:127.0.0.1]:1/" },
  ];
  const definition = {
    name: "http-egress",
    nodes: [
      ...refused.map(({ id, url }) => ({ id, type: "http", params: { method: "GET", url } })),
      { id: "public", type: "http", params: { method: "GET", url: "https://example.com/" } },
    ],
  };

  it("refuses at registration a literal refused address or localhost, naming the node, the host and the setting", async () => {
    backend = await createBackend("memory", { tasks: [httpTask({ egress: DEPLOYED })] });
    const error = await backend.engine.registerWorkflow(definition).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(WeftError);
    const weft = error as WeftError;
    expect(weft.code).toBe("InvalidDefinition");
    // One problem per refused node; the public one passes.
    expect(weft.details.map((d) => [d.path, d.code])).toEqual(
      refused.map((_, i) => [`nodes[${i}].params.url`, "invalid_params"]),
    );
    const [metadata, privateNode, local, mapped] = weft.details.map((d) => d.message);
    expect(metadata).toContain('node "metadata"');
    expect(metadata).toContain(
      `169.254.169.254 is the cloud metadata service, which the http task refuses unless ${HTTP_ALLOW_SETTING} lists the CIDR 169.254.169.254/32`,
    );
    expect(privateNode).toContain('node "private"');
    expect(privateNode).toContain(
      "10.0.0.1 is private (10.0.0.0/8), which the http task refuses unless WEFT_HTTP_ALLOW",
    );
    expect(privateNode).toContain('lists "private" (or the CIDR 10.0.0.0/8)');
    expect(local).toContain('node "local"');
    expect(local).toContain("localhost is loopback (127.0.0.0/8)");
    expect(local).toContain('lists "loopback"');
    expect(mapped).toContain("::ffff:7f00:1 is loopback");
    expect(HTTP_ALLOW_SETTING).toContain("weft:httpAllow");
  });

  it("registers the same definition when the allow-list lets those addresses through", async () => {
    backend = await createBackend("memory", {
      tasks: [httpTask({ egress: policy("loopback,private,169.254.169.254/32") })],
    });
    await expect(backend.engine.registerWorkflow(definition)).resolves.toMatchObject({ version: 1 });
  });

  it("fails the attempt, before connecting, when a name resolves to a refused address", async () => {
    respond = (_, res) => json(res, 200, { ok: true });
    backend = await createBackend("memory", {
      tasks: [httpTask({ egress: DEPLOYED, resolve: resolver({ "service.internal.test": ["127.0.0.1"] }) })],
    });
    const run = await runWorkflow(backend, {
      name: "http-dns-refused",
      nodes: [
        {
          id: "call",
          type: "http",
          params: { method: "GET", url: `http://service.internal.test:${port()}/x` },
          retry: fastRetry,
        },
      ],
    });
    expect(run.node("call")).toMatchObject({
      status: "FAILED",
      attempt: 1,
      error: { name: "EgressRefused" },
    });
    const message = run.node("call").error?.message ?? "";
    expect(message).toContain(
      "service.internal.test resolves only to refused addresses: 127.0.0.1 is loopback (127.0.0.0/8)",
    );
    expect(message).toContain(`unless ${HTTP_ALLOW_SETTING} lists "loopback"`);
    expect(received).toHaveLength(0);
  });

  it("connects to the checked address when loopback is allowed", async () => {
    respond = (_, res) => json(res, 200, { ok: true });
    const run = await runWorkflow(
      await engineWith({ resolve: resolver({ "service.internal.test": ["127.0.0.1"] }) }),
      {
        name: "http-dns-allowed",
        nodes: [
          {
            id: "call",
            type: "http",
            params: { method: "GET", url: `http://service.internal.test:${port()}/x` },
          },
        ],
      },
    );
    expect(run.node("call")).toMatchObject({ status: "COMPLETED", output: { body: { ok: true } } });
    expect(received[0]?.headers.host).toBe(`service.internal.test:${port()}`);
  });

  it("connects only to the permitted ones of the addresses a name resolves to", async () => {
    respond = (_, res) => json(res, 200, { ok: true });
    const run = await runWorkflow(
      await engineWith({
        egress: policy("127.0.0.1/32"),
        resolve: resolver({ "mixed.test": ["10.0.0.7", "169.254.169.254", "127.0.0.1"] }),
      }),
      {
        name: "http-dns-mixed",
        nodes: [{ id: "call", type: "http", params: { method: "GET", url: `http://mixed.test:${port()}/` } }],
      },
    );
    expect(run.node("call")).toMatchObject({ status: "COMPLETED", attempt: 1 });
    expect(received).toHaveLength(1);
  });

  it("checks every redirect: one to a refused address fails the node", async () => {
    respond = (_, res) => {
      res.writeHead(302, { location: `http://127.0.0.2:${port()}/inside` });
      res.end();
    };
    const run = await runWorkflow(await engineWith({ egress: policy("127.0.0.1/32") }), {
      name: "http-redirect-refused",
      nodes: [
        { id: "call", type: "http", params: { method: "GET", url: `${baseUrl}/out` }, retry: fastRetry },
      ],
    });
    expect(run.node("call")).toMatchObject({
      status: "FAILED",
      attempt: 1,
      error: { name: "EgressRefused" },
    });
    expect(run.node("call").error?.message).toContain(
      `GET http://127.0.0.2:${port()}/inside: egress refused: 127.0.0.2 is loopback (127.0.0.0/8)`,
    );
    expect(received.map((r) => r.url)).toEqual(["/out"]);
  });
});

describe("http task secret references", () => {
  const secrets = new MapSecretStore({ "prod/api-token": "Bearer s3cr3t-value", "ssm:/weft/key": "k-123" });
  const context = (now: () => number) => ({
    executionId: "e",
    nodeId: "n",
    attempt: 1,
    idempotencyKey: "e:n:1",
    signal: new AbortController().signal,
    deadline: Date.now() + 60_000,
    sleep: async () => {},
    now,
  });

  it("sends the resolved values, stores only the references, and drops them on a redirect to another origin", async () => {
    respond = (req, res) => {
      if (req.url === "/start") {
        res.writeHead(307, { location: `http://other.test:${port()}/next` });
        res.end();
      } else json(res, 200, { ok: true });
    };
    const { store } = await engineWith({ secrets, resolve: resolver({ "other.test": ["127.0.0.1"] }) });
    const run = await runWorkflow(backend!, {
      name: "http-secrets",
      nodes: [
        {
          id: "call",
          type: "http",
          params: {
            method: "POST",
            url: `${baseUrl}/start`,
            headers: {
              Authorization: { secret: "prod/api-token" },
              "X-Api-Key": { secret: "ssm:/weft/key" },
              "X-Trace": "t-1",
            },
            body: { n: 1 },
          },
        },
      ],
    });
    expect(run.node("call")).toMatchObject({ status: "COMPLETED", output: { status: 200 } });
    expect(received[0]?.headers).toMatchObject({
      authorization: "Bearer s3cr3t-value",
      "x-api-key": "k-123",
      "x-trace": "t-1",
    });
    // Another origin: the credentials stay behind, the rest (a 307 keeps method and body) goes on.
    expect(received[1]?.url).toBe("/next");
    expect(received[1]?.method).toBe("POST");
    expect(received[1]?.headers.authorization).toBeUndefined();
    expect(received[1]?.headers["x-api-key"]).toBeUndefined();
    expect(received[1]?.headers["x-trace"]).toBe("t-1");

    const stored = JSON.stringify(await store.getWorkflowVersion("http-secrets"));
    expect(stored).toContain('{"secret":"prod/api-token"}');
    for (const text of [stored, JSON.stringify(run.view), JSON.stringify(run.history)]) {
      expect(text).not.toContain("s3cr3t-value");
      expect(text).not.toContain("k-123");
    }
  });

  it("reuses a resolved value for the TTL on the engine's clock, then reads it again", async () => {
    respond = (_, res) => json(res, 200, {});
    const reads: string[] = [];
    const counting = {
      description: "counting",
      get: async (name: string) => {
        reads.push(name);
        return "v";
      },
    };
    const task = httpTask({ egress: LOCAL, secrets: counting, secretTtlMs: 60_000 });
    const params = { method: "GET", url: `${baseUrl}/`, headers: { "X-Api-Key": { secret: "k" } } };
    let now = 1_000_000;
    const call = () =>
      task.run({ input: null, params: params as never, deps: {}, context: context(() => now) });
    await call();
    now += 59_999;
    await call();
    expect(reads).toEqual(["k"]);
    now += 1;
    await call();
    expect(reads).toEqual(["k", "k"]);
    expect(received).toHaveLength(3);
  });

  it("redacts an echoed value where the error's excerpt is cut inside it, and from a retryable error", async () => {
    const task = httpTask({ egress: LOCAL, secrets });
    const params = {
      method: "GET",
      url: `${baseUrl}/`,
      headers: { Authorization: { secret: "prod/api-token" } },
    };
    const call = async () =>
      (await task.run({
        input: null,
        params: params as never,
        deps: {},
        context: context(() => Date.now()),
      })) as object | undefined;
    // The 300-character excerpt would end in the middle of the echoed value: it is read whole first.
    respond = (req, res) => {
      res.writeHead(403, { "content-type": "text/plain" });
      res.end(`${"x".repeat(285)} ${req.headers.authorization} trailing text`);
    };
    const denied = await call().then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    expect(denied?.name).toBe("TerminalError");
    expect(denied?.message).toContain("answered 403");
    expect(denied?.message).toMatch(/x \*\*\* trail/);
    expect(denied?.message).not.toContain("s3cr");
    expect(denied?.stack).not.toContain("s3cr3t");

    respond = (req, res) => {
      res.writeHead(503, { "content-type": "application/json", "retry-after": "3" });
      res.end(JSON.stringify({ error: `bad token ${req.headers.authorization}` }));
    };
    const unavailable = await call().then(
      () => undefined,
      (error: unknown) => error as RetryableError,
    );
    expect(unavailable).toBeInstanceOf(RetryableError);
    expect(unavailable?.retryAfterSeconds).toBe(3);
    expect(unavailable?.message).toContain('{"error":"bad token ***"}');
  });

  it("fails terminally, naming the secret and never a value, when it cannot be resolved or used", async () => {
    const engine = await engineWith({
      secrets: new MapSecretStore({ broken: "line\nbreak-value" }, "the test's secrets"),
    });
    const node = (secret: string) => ({
      id: "call",
      type: "http",
      params: { method: "GET", url: `${baseUrl}/`, headers: { "X-Api-Key": { secret } } },
      retry: fastRetry,
    });
    const missing = await runWorkflow(engine, { name: "http-secret-missing", nodes: [node("nope")] });
    expect(missing.node("call")).toMatchObject({
      status: "FAILED",
      attempt: 1,
      error: {
        name: "SecretNotFound",
        message: 'secret "nope" was not found (looked in the test\'s secrets)',
      },
    });
    const unusable = await runWorkflow(engine, { name: "http-secret-unusable", nodes: [node("broken")] });
    expect(unusable.node("call")).toMatchObject({
      status: "FAILED",
      attempt: 1,
      error: { name: "SecretNotUsable" },
    });
    expect(unusable.node("call").error?.message).toContain(
      'secret "broken" cannot be the value of header "X-Api-Key"',
    );
    expect(JSON.stringify([unusable.view, unusable.history])).not.toContain("break-value");
    expect(received).toHaveLength(0);
  });

  it("refuses plain-text credential headers at registration, naming the node and the header", async () => {
    const { engine } = await engineWith();
    const error = await engine
      .registerWorkflow({
        name: "http-plain",
        nodes: [
          {
            id: "call",
            type: "http",
            params: {
              method: "GET",
              url: "https://example.com/",
              headers: {
                Authorization: "Bearer abc",
                "proxy-authorization": "Basic x",
                Cookie: "session=1",
                "X-API-KEY": "k",
                "X-Other": "fine",
                "X-Api-Key-Ref": { secret: "ok" },
              },
            },
          },
        ],
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    const weft = error as WeftError;
    expect(weft.code).toBe("InvalidDefinition");
    expect(weft.details.map((d) => d.path)).toEqual([
      "nodes[0].params.headers.Authorization",
      'nodes[0].params.headers["proxy-authorization"]',
      "nodes[0].params.headers.Cookie",
      'nodes[0].params.headers["X-API-KEY"]',
    ]);
    expect(weft.details[0]?.message).toContain('node "call"');
    expect(weft.details[0]?.message).toContain('header "Authorization" holds a plain-text credential');
    expect(weft.details[0]?.message).toContain('{"secret": "ssm:/path/to/parameter"}');
    // The refusal never quotes the value.
    expect(JSON.stringify(weft.details)).not.toContain("Bearer abc");
  });

  it("still runs a definition stored before credentials had to be references", async () => {
    respond = (_, res) => json(res, 200, {});
    const { engine, store } = await engineWith();
    const old = {
      name: "http-old",
      nodes: [
        {
          id: "call",
          type: "http",
          params: { method: "GET", url: `${baseUrl}/`, headers: { Authorization: "Bearer old-token" } },
        },
      ],
    };
    await store.putWorkflowVersion({
      name: old.name,
      version: 1,
      definitionHash: definitionHash(old as never),
      definition: old as never,
      createdAt: Date.now(),
    });
    const { executionId } = await engine.createExecution({ workflow: old.name });
    await runToEnd(engine, backend!.consumer, store, executionId);
    expect((await engine.describeExecution(executionId)).status).toBe("SUCCEEDED");
    expect(received[0]?.headers.authorization).toBe("Bearer old-token");
  });
});
