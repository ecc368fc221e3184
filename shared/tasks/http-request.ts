/**
 * The `http` task's requests (http.ts is the task type): undici, loaded with the first request, the
 * egress-guarded agent, secret headers, redirects, the response read within its limit, and errors
 * thrown as the retry policy wants them. A module of its own, imported by http.ts on the first
 * request: a worker that runs no http node never loads it.
 */

import type * as Undici from "undici";
import { parseExact, stringifyExact } from "../domain/exact-numbers.js";
import { type Redactor, secretRedactor } from "../domain/redact.js";
import type { EgressPolicy } from "./egress.js";
import { RetryableError, TerminalError } from "./errors.js";
import { EgressRefusedError, egressAgent, type Resolve } from "./http-connect.js";
import { CREDENTIAL_HEADERS, type HttpHeaders } from "./http-headers.js";
import type { HttpParams } from "./http-params.js";
import type { SecretCache } from "./secrets.js";
import type { TaskContext } from "./task-type.js";

export const DEFAULT_HTTP_TIMEOUT_MS = 30_000;
/** A Retry-After longer than this (SQS's longest message delay) is shortened to it. */
export const MAX_RETRY_AFTER_SECONDS = 900;
/** Redirects followed before the request fails. */
export const MAX_REDIRECTS = 10;
/** How much of an error response's body is quoted in the error message. */
const ERROR_BODY_EXCERPT = 300;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

export interface HttpOutput {
  status: number;
  /** Response headers with lower-case names. */
  headers: Record<string, string>;
  /** Parsed when the response is JSON, else the text (null for an empty JSON body or HEAD). */
  body: unknown;
}

type Dispatcher = Undici.Dispatcher;
type Headers = Undici.Headers;
type Response = Undici.Response;

/** What the task type hands its requests: fixed for the task type's life. */
export interface HttpRequestOptions {
  egress: EgressPolicy;
  resolve: Resolve | undefined;
  secrets: SecretCache;
  maxBytes: number;
}

/** Runs the requests of one `http` task type: one agent, made with the first request. */
export function httpRequester(options: HttpRequestOptions): {
  run(params: HttpParams, context: TaskContext): Promise<HttpOutput>;
} {
  let agent: { undici: typeof Undici; dispatcher: Dispatcher } | undefined;
  return {
    async run(params, context) {
      if (agent === undefined) {
        const undici = await import("undici");
        agent = { undici, dispatcher: egressAgent(undici, options.egress, options.resolve) };
      }
      const { undici, dispatcher } = agent;
      const { headers, fromSecrets, secretValues } = await requestHeaders(
        new undici.Headers(),
        params.headers,
        context,
        options.secrets,
      );
      // What weft injected never leaves the task, however the server echoes it: the output and any
      // error are redacted here, before the engine writes them anywhere (shared/domain/redact.ts).
      const redactor = secretRedactor(secretValues);
      try {
        const output = await send(params, headers, fromSecrets, context, {
          fetch: undici.fetch,
          dispatcher,
          maxBytes: options.maxBytes,
          redactor,
        });
        return redactor.value(output) as HttpOutput;
      } catch (error) {
        throw redactor.error(error);
      }
    },
  };
}

async function send(
  params: HttpParams,
  headers: Headers,
  fromSecrets: ReadonlySet<string>,
  context: TaskContext,
  options: { fetch: typeof Undici.fetch; dispatcher: Dispatcher; maxBytes: number; redactor: Redactor },
): Promise<HttpOutput> {
  const { fetch, dispatcher, maxBytes, redactor } = options;
  const timeoutMs = params.timeoutMs ?? DEFAULT_HTTP_TIMEOUT_MS;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = AbortSignal.any([context.signal, timeout]);
  let url = new URL(params.url);
  let method: string = params.method;
  let body = requestBody(params, headers);
  headers.set("idempotency-key", context.idempotencyKey);
  // The attempt's span as the caller (W3C Trace Context), unless the node's params set one.
  if (context.trace && !headers.has("traceparent")) headers.set("traceparent", context.trace.traceparent);

  let response: Response;
  for (let hops = 0; ; hops++) {
    try {
      response = await fetch(url, {
        method,
        headers,
        ...(body === undefined ? {} : { body }),
        redirect: "manual",
        signal,
        dispatcher,
      });
    } catch (error) {
      throw requestFailure(error, describeTarget(method, url), context, timeout, timeoutMs);
    }
    const location = response.headers.get("location");
    if (!REDIRECT_STATUSES.has(response.status) || location === null) break;
    await response.body?.cancel().catch(() => {});
    const next = redirectTarget(location, url, describeTarget(method, url), hops);
    // Credentials stay with the origin they were meant for.
    if (next.origin !== url.origin)
      for (const name of [...CREDENTIAL_HEADERS, ...fromSecrets]) headers.delete(name);
    const toGet =
      response.status === 303
        ? method !== "HEAD"
        : (response.status === 301 || response.status === 302) && method === "POST";
    if (toGet) {
      method = "GET";
      body = undefined;
      headers.delete("content-type");
    }
    url = next;
  }
  const target = describeTarget(method, url);

  const status = response.status;
  if (isExpected(status, params.expectStatus)) {
    const responseHeaders = headerRecord(response.headers);
    // A HEAD answer has no body, whatever its content-length says.
    if (method === "HEAD") {
      await response.body?.cancel().catch(() => {});
      return { status, headers: responseHeaders, body: null };
    }
    let bytes: Uint8Array;
    try {
      bytes = await readBody(response, maxBytes, "refuse");
    } catch (error) {
      throw requestFailure(error, target, context, timeout, timeoutMs);
    }
    return { status, headers: responseHeaders, body: decodeBody(response, bytes) };
  }

  const excerpt = await errorExcerpt(response, redactor);
  const what = `${target} answered ${status}${response.statusText ? ` ${response.statusText}` : ""}`;
  if (status >= 500 || status === 429) {
    const retryAfter = parseRetryAfter(response.headers.get("retry-after"), context.now());
    throw new RetryableError(
      `${what}${excerpt}`,
      retryAfter === undefined ? {} : { retryAfterSeconds: retryAfter },
    );
  }
  throw new TerminalError(`${what}, expected ${describeExpected(params.expectStatus)}${excerpt}`);
}

/**
 * The request's headers, set on `headers` (an empty undici Headers), secret references resolved
 * (through the cache, on the engine's clock).
 * `fromSecrets` names the headers whose values came from secrets (lower case); `secretValues` are
 * those values, to be redacted from whatever the task returns.
 */
async function requestHeaders(
  headers: Headers,
  declared: HttpHeaders | undefined,
  context: TaskContext,
  secrets: SecretCache,
): Promise<{ headers: Headers; fromSecrets: Set<string>; secretValues: string[] }> {
  const fromSecrets = new Set<string>();
  const secretValues: string[] = [];
  for (const [name, value] of Object.entries(declared ?? {})) {
    if (typeof value === "string") {
      headers.set(name, value);
      continue;
    }
    const secret = (await secrets.resolve(value.secret, context.now(), context.signal)).trim();
    // Never let the value reach an error message: check it before Headers would quote it.
    if (/[^\t\x20-\x7e\x80-\xff]/.test(secret))
      throw new TerminalError(
        `secret "${value.secret}" cannot be the value of header "${name}": it holds a line break or a character a header cannot carry`,
        { code: "SecretNotUsable" },
      );
    headers.set(name, secret);
    fromSecrets.add(name.toLowerCase());
    secretValues.push(secret);
  }
  return { headers, fromSecrets, secretValues };
}

function requestBody(params: HttpParams, headers: Headers): string | undefined {
  if (params.body === undefined) return undefined;
  if (typeof params.body === "string") return params.body;
  if (!headers.has("content-type")) headers.set("content-type", "application/json");
  return stringifyExact(params.body);
}

/** The URL a redirect leads to; terminal when it cannot be followed. */
function redirectTarget(location: string, from: URL, target: string, hops: number): URL {
  if (hops >= MAX_REDIRECTS) throw new TerminalError(`${target} redirected more than ${MAX_REDIRECTS} times`);
  let next: URL;
  try {
    next = new URL(location, from);
  } catch {
    throw new TerminalError(`${target} redirected to a Location that is not a URL`);
  }
  if (next.protocol !== "http:" && next.protocol !== "https:")
    throw new TerminalError(
      `${target} redirected to a ${next.protocol} URL, which the http task does not follow`,
    );
  return next;
}

/** Method and URL without its query string or credentials, which may hold secrets. */
function describeTarget(method: string, url: URL): string {
  return `${method} ${url.origin}${url.pathname}`;
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
  const refused = egressRefusal(error);
  if (refused)
    return new TerminalError(`${target}: egress refused: ${refused.message}`, {
      code: "EgressRefused",
      cause: refused,
    });
  return new RetryableError(`${target} failed: ${describeNetworkError(error)}`);
}

/** The EgressRefusedError behind a fetch failure (fetch wraps the connector's error as its cause). */
function egressRefusal(error: unknown): EgressRefusedError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
    if (current instanceof EgressRefusedError) return current;
    current = current.cause;
  }
  return undefined;
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
    // Exact numbers (exact-numbers.ts): a 64-bit id in a response keeps its digits.
    return parseExact(text);
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

/**
 * A short quote of an error response's body for the error message (never fails), secrets redacted:
 * it reads far enough past the quote to see whole any secret that starts inside it, and a fragment
 * left where the quote is cut is redacted too.
 */
async function errorExcerpt(response: Response, redactor: Redactor): Promise<string> {
  try {
    const limit = ERROR_BODY_EXCERPT + redactor.longestBytes;
    const bytes = await readBody(response, limit, "truncate");
    let text = redactor.text(new TextDecoder().decode(bytes)).replace(/\s+/g, " ").trim();
    let cut = bytes.byteLength >= limit && !redactor.empty;
    if (text.length > ERROR_BODY_EXCERPT) {
      text = text.slice(0, ERROR_BODY_EXCERPT);
      cut = true;
    }
    if (cut) text = redactor.cutText(text);
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
