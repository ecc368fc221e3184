/**
 * The `http` task type: one HTTP request with the node's idempotency key. 5xx, 429, network errors
 * and timeouts are retryable (honouring Retry-After); any other unexpected status is terminal.
 */
import { z } from "zod";
import { RetryableError, TerminalError } from "./errors.js";
import { defineTask, type TaskContext, type TaskType } from "./task-type.js";

export const HTTP_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"] as const;
export const DEFAULT_HTTP_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024;
/** A Retry-After longer than this (SQS's longest message delay) is shortened to it. */
export const MAX_RETRY_AFTER_SECONDS = 900;
/** How much of an error response's body is quoted in the error message. */
const ERROR_BODY_EXCERPT = 300;

const statusCode = z.number().int().min(100).max(599);

export const httpParamsSchema = z
  .object({
    method: z.enum(HTTP_METHODS),
    url: z.url({ protocol: /^https?$/, error: "url must be an http:// or https:// URL" }),
    headers: z.record(z.string(), z.string()).optional(),
    /** Any JSON value; sent as JSON (content-type application/json) unless it is a string. */
    body: z.json().optional(),
    timeoutMs: z.number().int().min(1).max(900_000).optional(),
    /** Statuses that count as success; default any 2xx. */
    expectStatus: z.union([statusCode, z.array(statusCode).min(1)]).optional(),
  })
  .strict()
  .refine((p) => p.body === undefined || (p.method !== "GET" && p.method !== "HEAD"), {
    message: "a GET or HEAD request cannot have a body",
    path: ["body"],
  });

export type HttpParams = z.output<typeof httpParamsSchema>;

export interface HttpOutput {
  status: number;
  /** Response headers with lower-case names. */
  headers: Record<string, string>;
  /** Parsed when the response is JSON, else the text (null for an empty JSON body or HEAD). */
  body: unknown;
}

export interface HttpTaskOptions {
  /** Larger response bodies fail the node with a TerminalError. Default 256 KiB. */
  maxResponseBytes?: number;
  /** Default the global fetch. */
  fetch?: typeof fetch;
}

export function httpTask(options: HttpTaskOptions = {}): TaskType<HttpParams> {
  const maxBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  if (!Number.isInteger(maxBytes) || maxBytes < 0)
    throw new Error(`http task: maxResponseBytes must be a whole number ≥ 0, got ${maxBytes}`);
  const doFetch = options.fetch ?? ((input, init) => fetch(input, init));

  return defineTask({
    type: "http",
    params: httpParamsSchema,
    async run({ params: raw, context }): Promise<HttpOutput> {
      // Params arrive as stored in the definition: parse them for the defaults and normalised URL.
      const params = httpParamsSchema.parse(raw);
      const timeoutMs = params.timeoutMs ?? DEFAULT_HTTP_TIMEOUT_MS;
      const timeout = AbortSignal.timeout(timeoutMs);
      const signal = AbortSignal.any([context.signal, timeout]);
      const target = describeTarget(params);

      let response: Response;
      try {
        response = await doFetch(params.url, { ...requestInit(params, context), signal });
      } catch (error) {
        throw requestFailure(error, target, context, timeout, timeoutMs);
      }

      const status = response.status;
      if (isExpected(status, params.expectStatus)) {
        const headers = headerRecord(response.headers);
        // A HEAD answer has no body, whatever its content-length says.
        if (params.method === "HEAD") {
          await response.body?.cancel().catch(() => {});
          return { status, headers, body: null };
        }
        let bytes: Uint8Array;
        try {
          bytes = await readBody(response, maxBytes, "refuse");
        } catch (error) {
          throw requestFailure(error, target, context, timeout, timeoutMs);
        }
        return { status, headers, body: decodeBody(response, bytes) };
      }

      const excerpt = await errorExcerpt(response);
      const what = `${target} answered ${status}${response.statusText ? ` ${response.statusText}` : ""}`;
      if (status >= 500 || status === 429) {
        const retryAfter = parseRetryAfter(response.headers.get("retry-after"), context.now());
        throw new RetryableError(
          `${what}${excerpt}`,
          retryAfter === undefined ? {} : { retryAfterSeconds: retryAfter },
        );
      }
      throw new TerminalError(`${what}, expected ${describeExpected(params.expectStatus)}${excerpt}`);
    },
  });
}

/** `http` with the default options. */
export const defaultHttpTask = httpTask();

function requestInit(params: HttpParams, context: TaskContext): RequestInit {
  const headers = new Headers(params.headers ?? {});
  let body: string | undefined;
  if (params.body !== undefined) {
    if (typeof params.body === "string") body = params.body;
    else {
      body = JSON.stringify(params.body);
      if (!headers.has("content-type")) headers.set("content-type", "application/json");
    }
  }
  headers.set("idempotency-key", context.idempotencyKey);
  return { method: params.method, headers, ...(body === undefined ? {} : { body }), redirect: "follow" };
}

/** Method and URL without its query string or credentials, which may hold secrets. */
function describeTarget(params: HttpParams): string {
  const url = new URL(params.url);
  return `${params.method} ${url.origin}${url.pathname}`;
}

function requestFailure(
  error: unknown,
  target: string,
  context: TaskContext,
  timeout: AbortSignal,
  timeoutMs: number,
): unknown {
  if (error instanceof TerminalError || error instanceof RetryableError) return error;
  // Cancellation or a lost lease: the engine decides from its own signal; pass the reason on.
  if (context.signal.aborted) return context.signal.reason;
  if (timeout.aborted) return new RetryableError(`${target} timed out after ${timeoutMs} ms`);
  return new RetryableError(`${target} failed: ${describeNetworkError(error)}`);
}

function describeNetworkError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause;
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    return `${error.message} (${typeof code === "string" ? `${code}: ` : ""}${cause.message})`;
  }
  return error.message;
}

function isExpected(status: number, expect: HttpParams["expectStatus"]): boolean {
  if (expect === undefined) return status >= 200 && status <= 299;
  return Array.isArray(expect) ? expect.includes(status) : status === expect;
}

function describeExpected(expect: HttpParams["expectStatus"]): string {
  if (expect === undefined) return "a 2xx status";
  return Array.isArray(expect) ? `one of ${expect.join(", ")}` : String(expect);
}

/**
 * Reads the body, stopping as soon as it passes `maxBytes`: "refuse" throws a TerminalError then,
 * "truncate" returns the first `maxBytes`.
 */
export async function readBody(
  response: Response,
  maxBytes: number,
  overflow: "refuse" | "truncate",
): Promise<Uint8Array> {
  const tooLarge = () => new TerminalError(`response body exceeds ${maxBytes} bytes`);
  const declared = Number(response.headers.get("content-length"));
  if (overflow === "refuse" && Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel().catch(() => {});
    throw tooLarge();
  }
  if (!response.body) return new Uint8Array(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      total += value.byteLength;
      if (total > maxBytes) {
        await reader.cancel().catch(() => {});
        if (overflow === "refuse") throw tooLarge();
        break;
      }
    }
  } finally {
    reader.releaseLock();
  }
  const bytes = Buffer.concat(chunks);
  return bytes.byteLength > maxBytes ? bytes.subarray(0, maxBytes) : bytes;
}

function decodeBody(response: Response, bytes: Uint8Array): unknown {
  const text = new TextDecoder().decode(bytes);
  if (!isJson(response.headers.get("content-type"))) return text;
  if (text.trim() === "") return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    // Declared JSON but is not: hand over the text rather than fail a request that succeeded.
    return text;
  }
}

function isJson(contentType: string | null): boolean {
  if (!contentType) return false;
  const mediaType = contentType.split(";")[0]?.trim().toLowerCase() ?? "";
  return mediaType === "application/json" || mediaType.endsWith("+json");
}

/** A short quote of an error response's body for the error message (never fails). */
async function errorExcerpt(response: Response): Promise<string> {
  try {
    const bytes = await readBody(response, ERROR_BODY_EXCERPT, "truncate");
    const text = new TextDecoder().decode(bytes).replace(/\s+/g, " ").trim();
    return text === "" ? "" : `: ${text}`;
  } catch {
    return "";
  }
}

function headerRecord(headers: Headers): Record<string, string> {
  const record: Record<string, string> = {};
  // Headers iterates with lower-case names and joins repeated ones.
  headers.forEach((value, name) => {
    record[name.toLowerCase()] = value;
  });
  return record;
}

/** Retry-After as seconds (delta-seconds or an HTTP-date), capped at 900; undefined when absent or bad. */
export function parseRetryAfter(value: string | null, now: number): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  let seconds: number;
  if (/^\d+$/.test(text)) seconds = Number(text);
  else {
    const at = Date.parse(text);
    if (Number.isNaN(at)) return undefined;
    seconds = Math.max(0, Math.ceil((at - now) / 1000));
  }
  return Math.min(MAX_RETRY_AFTER_SECONDS, seconds);
}
