/** What route handlers share: the request they see, their answer, and the parsing and validation helpers. */
import { type ProblemDetail, RequestError } from "../../shared/domain/errors.js";
import { parseExact } from "../../shared/domain/exact-numbers.js";
import { jsonTextDepth } from "../../shared/domain/json.js";
import { PAYLOAD_LIMITS } from "../../shared/domain/payload.js";
import * as z from "../../shared/domain/zod.js";
import type { RouteName, RouteResponse } from "../../shared/http/contract.js";

/** What a route handler sees of the request. */
export interface ApiRequest {
  params: Record<string, string>;
  query: Record<string, string | undefined>;
  /** The raw body text (decoded when API Gateway sent it base64-encoded), or undefined when absent/blank. */
  body: string | undefined;
  /**
   * Aborted when the caller went away (the local runtime's HTTP server says so; behind API Gateway
   * nothing does): a long poll stops waiting then.
   */
  signal?: AbortSignal;
  /** The request's headers, names in lower case (repeated ones joined with commas, as API Gateway does). */
  headers?: Record<string, string>;
  /** Tells X-Ray the W3C trace id of what the request did (functions/common/tracing.ts); a no-op by default. */
  annotateTrace?: (traceId: string) => void;
}

export interface ApiResponse<T = unknown> {
  /** 204 answers no body (the handler's body is then undefined). */
  status: number;
  body: T;
}

/** The handler of one route of the contract, answering that route's type. */
export type RouteHandler<K extends RouteName = RouteName> = (
  request: ApiRequest,
) => Promise<ApiResponse<RouteResponse<K>>>;

/** Handlers for some routes of the contract, by name. */
export type RouteHandlers<K extends RouteName> = { [N in K]: RouteHandler<N> };

/**
 * Levels a request body adds around the values it carries (`{"input": …}`; a definition's
 * `{"nodes": [{"params": …}]}`): a body may nest this much deeper than a value may.
 */
const BODY_NESTING = 4;

export function parseJson(body: string | undefined, options: { required: boolean }): unknown {
  if (body === undefined) {
    if (!options.required) return undefined;
    throw new RequestError("InvalidJson", "the request body is empty; a JSON document is expected");
  }
  // Measured on the text, before anything recursive (schemas, hashing) meets the value.
  const maxDepth = PAYLOAD_LIMITS.maxDepth + BODY_NESTING;
  if (jsonTextDepth(body, maxDepth) > maxDepth) {
    throw new RequestError(
      "PayloadTooDeep",
      `the request body nests arrays and objects more than ${maxDepth} levels deep; a value may nest at most ${PAYLOAD_LIMITS.maxDepth}`,
      {
        details: [
          { path: "body", code: "too_deep", message: `at most ${PAYLOAD_LIMITS.maxDepth} levels in a value` },
        ],
      },
    );
  }
  try {
    // Exact numbers (exact-numbers.ts): an id beyond 2^53 keeps its digits from here on.
    return parseExact(body);
  } catch (error) {
    // The parser's message names the position of the problem, never more than a few characters of the body.
    const reason = error instanceof Error ? error.message : "unparseable";
    throw new RequestError("InvalidJson", "the request body is not valid JSON", {
      details: [{ path: "body", code: "invalid_json", message: reason }],
      cause: error,
    });
  }
}

/** An optional JSON object body validated by `schema`; an absent body validates as `{}`. */
export function optionalBody<S extends z.core.$ZodType>(schema: S, body: string | undefined): z.output<S> {
  const raw = parseJson(body, { required: false });
  return validate(schema, raw === undefined ? {} : raw);
}

export function validate<S extends z.core.$ZodType>(schema: S, value: unknown, prefix?: string): z.output<S> {
  const parsed = z.safeParse(schema, value);
  if (parsed.success) return parsed.data;
  const where = prefix === undefined ? "request body" : prefix;
  const details = issuesToDetails(parsed.error.issues, prefix);
  throw new RequestError("InvalidRequest", `the ${where} has ${details.length} problem(s)`, { details });
}

/** The query string validated by `schema`. A parameter given empty (`?status=`) counts as absent. */
export function validateQuery<S extends z.core.$ZodType>(
  schema: S,
  query: Record<string, string | undefined>,
): z.output<S> {
  const present: Record<string, string> = {};
  for (const [key, value] of Object.entries(query))
    if (value !== undefined && value !== "") present[key] = value;
  return validate(schema, present, "query");
}

/** The path parameters validated by `schema` (details under `path.`). */
export function validateParams<S extends z.core.$ZodType>(
  schema: S,
  params: Record<string, string>,
): z.output<S> {
  return validate(schema, params, "path");
}

/**
 * A cursor the store refused (InvalidCursor), answered as a problem of the query parameter that
 * carried it; anything else unchanged.
 */
export function cursorIn(parameter: string, error: unknown): unknown {
  if (!(error instanceof RequestError) || error.code !== "InvalidCursor") return error;
  return new RequestError("InvalidCursor", `"${parameter}" is not a cursor this API returned`, {
    details: [
      { path: `query.${parameter}`, code: "invalid_cursor", message: "not a cursor this API returned" },
    ],
    cause: error,
  });
}

/**
 * Every zod issue as a detail `{path, code, message}`. An unknown key becomes one detail per key, with the
 * key's own path, so a client sees exactly which fields to remove. `prefix` marks where the value came from
 * (e.g. "query").
 */
export function issuesToDetails(issues: readonly z.core.$ZodIssue[], prefix?: string): ProblemDetail[] {
  const join = (path: readonly PropertyKey[]) =>
    [...(prefix === undefined ? [] : [prefix]), ...path.map((part) => String(part))].join(".");
  const details: ProblemDetail[] = [];
  for (const issue of issues) {
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) {
        details.push({
          path: join([...issue.path, key]),
          code: issue.code,
          message: `unknown field "${key}"`,
        });
      }
    } else {
      details.push({ path: join(issue.path), code: issue.code, message: issue.message });
    }
  }
  return details;
}
