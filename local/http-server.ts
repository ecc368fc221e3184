/**
 * Serves an API Gateway HTTP API (payload v2) handler over node:http: each request becomes a real
 * APIGatewayProxyEventV2 (as a `$default` route delivers it), and the handler's result is written back.
 * Beside the API it serves a folder of static files (the web console's build, console/dist) for
 * every GET or HEAD that is not an API route: `/` is its index.html.
 */
import { randomUUID } from "node:crypto";
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { MalformedPathError, Router } from "../functions/api/routes.js";
import { MEMORY_BLOB_PATH, type MemoryBlobStore } from "../shared/adapters/memory/blobs.js";
import { PAYLOAD_LIMITS } from "../shared/domain/payload.js";
import { API_ROUTES, ROUTE_NAMES } from "../shared/http/contract.js";
import { setConsoleHeaders } from "./console-headers.js";
import { METRICS_PATH, serveMetrics } from "./metrics.js";

/**
 * The api function's handler. `signal` is aborted when the client goes away before its answer (or
 * the server closes): a long poll stops waiting then, as nothing behind API Gateway could tell it.
 */
export type HttpApiHandler = (
  event: APIGatewayProxyEventV2,
  invocation?: { signal?: AbortSignal },
) => Promise<APIGatewayProxyStructuredResultV2>;

export interface HttpServerOptions {
  handler: HttpApiHandler;
  /** 0 picks any free port. Default 3000. */
  port?: number;
  host?: string;
  /**
   * Largest request body: a Lambda invocation carries 6 MB, so larger ones never reach the function
   * (inputs that large are uploaded: `POST /payloads`). Refused before the handler runs.
   */
  maxRequestBytes?: number;
  /** An in-memory blob store whose presigned requests this server answers (under `/_blobs/`). */
  blobs?: MemoryBlobStore;
  /**
   * A folder of static files served for GET and HEAD of paths that are not API routes (`/`: its
   * index.html); a path with no file there goes to the handler (its 404). Read at each request, so
   * the folder may appear (be built) after the server started.
   */
  staticDir?: string;
  /** Prometheus text for `GET /metrics` (local/metrics.ts), a local-only route; absent: not served. */
  metrics?: () => Promise<string>;
  onError?: (error: unknown) => void;
}

export interface RunningHttpServer {
  url: string;
  port: number;
  /**
   * Stops accepting connections and resolves once in-flight requests have been answered (a long
   * poll in flight is told to stop waiting, and answers at once).
   */
  close(): Promise<void>;
}

export interface IncomingRequestInfo {
  method: string;
  /** The request target: path and query string, e.g. `/workflows/x?version=2`. */
  url: string;
  headers: IncomingHttpHeaders;
  sourceIp: string;
  protocol?: string;
  body?: string;
  now?: number;
}

/** Lambda's limit of a synchronous invocation's request (6 MB). */
export const LAMBDA_PAYLOAD_BYTES = 6 * 1024 * 1024;
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** API Gateway's `requestContext.time` format: `12/Mar/2020:19:03:58 +0000`. */
export function formatRequestTime(epochMs: number): string {
  const d = new Date(epochMs);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${pad(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:${pad(d.getUTCHours())}:${pad(
    d.getUTCMinutes(),
  )}:${pad(d.getUTCSeconds())} +0000`;
}

/** Builds the event API Gateway (HTTP API, `$default` route, payload 2.0) would hand the function. */
export function toApiGatewayEvent(request: IncomingRequestInfo): APIGatewayProxyEventV2 {
  const now = request.now ?? Date.now();
  const queryAt = request.url.indexOf("?");
  const rawPath = queryAt === -1 ? request.url : request.url.slice(0, queryAt);
  const rawQueryString = queryAt === -1 ? "" : request.url.slice(queryAt + 1);

  // Header names arrive lower-cased from node:http; repeated headers are joined with commas, as API Gateway does.
  const headers: Record<string, string> = {};
  let cookies: string[] | undefined;
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    const joined = Array.isArray(value) ? value.join(",") : value;
    if (name.toLowerCase() === "cookie") {
      cookies = joined
        .split(";")
        .map((cookie) => cookie.trim())
        .filter((cookie) => cookie !== "");
      continue;
    }
    headers[name.toLowerCase()] = joined;
  }

  let queryStringParameters: Record<string, string> | undefined;
  if (rawQueryString !== "") {
    queryStringParameters = {};
    for (const [key, value] of new URLSearchParams(rawQueryString)) {
      const previous = queryStringParameters[key];
      queryStringParameters[key] = previous === undefined ? value : `${previous},${value}`;
    }
  }

  const domainName = headers.host ?? "127.0.0.1";
  const event: APIGatewayProxyEventV2 = {
    version: "2.0",
    routeKey: "$default",
    rawPath,
    rawQueryString,
    headers,
    requestContext: {
      accountId: "000000000000",
      apiId: "local",
      domainName,
      domainPrefix: domainName.split(".")[0] ?? domainName,
      http: {
        method: request.method.toUpperCase(),
        path: rawPath,
        protocol: request.protocol ?? "HTTP/1.1",
        sourceIp: request.sourceIp,
        userAgent: headers["user-agent"] ?? "",
      },
      requestId: randomUUID(),
      routeKey: "$default",
      stage: "$default",
      time: formatRequestTime(now),
      timeEpoch: now,
    },
    isBase64Encoded: false,
  };
  if (cookies !== undefined) event.cookies = cookies;
  if (queryStringParameters !== undefined) event.queryStringParameters = queryStringParameters;
  // API Gateway leaves `body` out when the request has none.
  if (request.body !== undefined && request.body !== "") event.body = request.body;
  return event;
}

/** Writes a handler result back as API Gateway would. */
export function writeResult(response: ServerResponse, result: APIGatewayProxyStructuredResultV2): void {
  const status = result.statusCode ?? 200;
  for (const [name, value] of Object.entries(result.headers ?? {})) response.setHeader(name, String(value));
  if (result.cookies !== undefined && result.cookies.length > 0)
    response.setHeader("set-cookie", result.cookies);
  const body =
    result.body === undefined
      ? undefined
      : result.isBase64Encoded
        ? Buffer.from(result.body, "base64")
        : Buffer.from(result.body, "utf8");
  if (body !== undefined) response.setHeader("content-length", body.byteLength);
  response.statusCode = status;
  response.end(body);
}

function writeGatewayError(response: ServerResponse, status: number, message: string): void {
  // API Gateway's own errors (not the function's) have this shape.
  writeResult(response, {
    statusCode: status,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ message }),
  });
}

/** A body over the limit, answered in weft's error shape, naming the limit and the way around it. */
function writeTooLarge(response: ServerResponse, maxBytes: number): void {
  const message =
    `the request body is larger than ${maxBytes} bytes, the most a Lambda invocation carries; ` +
    "send a larger input by upload (POST /payloads, then inputRef)";
  writeResult(response, {
    statusCode: 413,
    headers: { "content-type": "application/json; charset=utf-8" },
    body: JSON.stringify({
      error: {
        code: "PayloadTooLarge",
        message,
        details: [{ path: "body", code: "too_big", message: `at most ${maxBytes} bytes are accepted` }],
      },
    }),
  });
}

async function readBody(request: IncomingMessage, maxBytes: number): Promise<Buffer | "too-large"> {
  const chunks: Buffer[] = [];
  let size = 0;
  let tooLarge = false;
  for await (const chunk of request) {
    const buffer = chunk as Buffer;
    size += buffer.byteLength;
    if (size > maxBytes)
      tooLarge = true; // keep draining so the client gets the answer
    else chunks.push(buffer);
  }
  return tooLarge ? "too-large" : Buffer.concat(chunks);
}

// ── static files (the web console) ────────────────────────────────────────────────────────────

const API_ROUTER = new Router(
  ROUTE_NAMES.map((name) => ({
    method: API_ROUTES[name].method,
    pattern: API_ROUTES[name].path,
    handler: name,
  })),
);

/** True when `pathname` is one of the contract's routes, whatever the method (the API answers it). */
export function isApiPath(pathname: string): boolean {
  try {
    return API_ROUTER.match("GET", pathname).kind !== "not-found";
  } catch (error) {
    // A bad percent-encoding in a route's parameter: the API's own 400.
    if (error instanceof MalformedPathError) return true;
    throw error;
  }
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".woff2": "font/woff2",
  ".txt": "text/plain; charset=utf-8",
};

/**
 * Answers GET/HEAD `pathname` from the files under `root` (`/` → index.html): true when it did,
 * false when there is no such file (nothing written then). Never outside `root`, never a dotfile.
 * Built assets (`assets/`, named by their content's hash) are cached for good; the rest revalidated.
 */
export async function serveStatic(
  root: string,
  method: string,
  pathname: string,
  response: ServerResponse,
): Promise<boolean> {
  if (method !== "GET" && method !== "HEAD") return false;
  let relative: string;
  try {
    relative = decodeURIComponent(pathname === "/" ? "/index.html" : pathname);
  } catch {
    return false;
  }
  if (relative.includes("\0") || relative.split("/").some((part) => part.startsWith("."))) return false;
  const base = path.resolve(root);
  const file = path.resolve(base, `.${relative}`);
  if (file !== base && !file.startsWith(`${base}${path.sep}`)) return false;
  const info = await stat(file).catch(() => undefined);
  if (info === undefined || !info.isFile()) return false;
  response.statusCode = 200;
  response.setHeader(
    "content-type",
    CONTENT_TYPES[path.extname(file).toLowerCase()] ?? "application/octet-stream",
  );
  response.setHeader("content-length", info.size);
  response.setHeader(
    "cache-control",
    relative.startsWith("/assets/") ? "public, max-age=31536000, immutable" : "no-cache",
  );
  setConsoleHeaders(response);
  if (method === "HEAD") {
    response.end();
    return true;
  }
  await new Promise<void>((resolve, reject) => {
    const stream = createReadStream(file);
    stream.once("error", reject);
    response.once("close", () => resolve());
    stream.pipe(response);
  }).catch((error: unknown) => {
    response.destroy(error instanceof Error ? error : undefined);
  });
  return true;
}

export function startHttpServer(options: HttpServerOptions): Promise<RunningHttpServer> {
  const host = options.host ?? "127.0.0.1";
  const maxRequestBytes = options.maxRequestBytes ?? LAMBDA_PAYLOAD_BYTES;
  const blobs = options.blobs;
  const onError =
    options.onError ?? ((error: unknown) => console.error("[weft local] api handler failed:", error));

  // The requests being handled: each one's signal is aborted when its client goes away, or at close.
  const inFlight = new Set<AbortController>();

  const server = createServer((request, response) => {
    const controller = new AbortController();
    inFlight.add(controller);
    response.on("close", () => {
      inFlight.delete(controller);
      // Closed before the answer was written: the client went away.
      if (!response.writableFinished) controller.abort();
    });
    void (async () => {
      try {
        const target = new URL(request.url ?? "/", "http://local");
        if (options.metrics && target.pathname === METRICS_PATH && request.method === "GET")
          return await serveMetrics(response, options.metrics);
        if (blobs && target.pathname.startsWith(MEMORY_BLOB_PATH)) {
          const blobBody = await readBody(request, PAYLOAD_LIMITS.maxBytes);
          if (blobBody === "too-large") return writeGatewayError(response, 413, "Request Entity Too Large");
          const answer = await blobs.serveRequest(
            request.method ?? "GET",
            target.pathname,
            target.searchParams,
            blobBody,
          );
          response.statusCode = answer.status;
          response.end(answer.body);
          return;
        }
        if (
          options.staticDir !== undefined &&
          !isApiPath(target.pathname) &&
          (await serveStatic(options.staticDir, request.method ?? "GET", target.pathname, response))
        ) {
          return;
        }
        const body = await readBody(request, maxRequestBytes);
        if (body === "too-large") return writeTooLarge(response, maxRequestBytes);
        const event = toApiGatewayEvent({
          method: request.method ?? "GET",
          url: request.url ?? "/",
          headers: request.headers,
          sourceIp: request.socket.remoteAddress ?? "127.0.0.1",
          protocol: `HTTP/${request.httpVersion}`,
          body: body.toString("utf8"),
        });
        const result = await options.handler(event, { signal: controller.signal });
        if (!response.destroyed) writeResult(response, result);
      } catch (error) {
        // What API Gateway answers when the function itself fails.
        onError(error);
        if (!response.headersSent) writeGatewayError(response, 500, "Internal Server Error");
        else response.end();
      }
    })();
  });

  return listen(server, options.port ?? 3000, host).then(({ url, port }) => ({
    url,
    port,
    close: () =>
      new Promise<void>((done, fail) => {
        // Busy connections finish their request first; idle keep-alive sockets would hold close() open.
        const sweep = setInterval(() => server.closeIdleConnections(), 50);
        server.close((error) => {
          clearInterval(sweep);
          if (error) fail(error);
          else done();
        });
        server.closeIdleConnections();
        for (const controller of inFlight) controller.abort();
      }),
  }));
}

/** Listens on `host:port` (port 0: a free one); answers the server's URL and the port it took. */
export function listen(server: Server, port: number, host: string): Promise<{ url: string; port: number }> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      const taken = (server.address() as AddressInfo).port;
      const urlHost = host.includes(":") ? `[${host}]` : host;
      resolve({ url: `http://${urlHost}:${taken}`, port: taken });
    });
  });
}
