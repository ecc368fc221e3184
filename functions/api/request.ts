/** What route handlers share: the request they see, their answer, and the parsing and validation helpers. */
import type { z } from "zod";
import { jsonTextDepth } from "../../shared/domain/json.js";
import { PAYLOAD_LIMITS } from "../../shared/domain/payload.js";
import { WeftError } from "../../shared/engine/errors.js";
import type { Route } from "./routes.js";
import { issuesToDetails } from "./schemas.js";

/** What a route handler sees of the request. */
export interface ApiRequest {
  params: Record<string, string>;
  query: Record<string, string | undefined>;
  /** The raw body text (decoded when API Gateway sent it base64-encoded), or undefined when absent/blank. */
  body: string | undefined;
}

export interface ApiResponse {
  status: number;
  body: unknown;
}

export type RouteHandler = (request: ApiRequest) => Promise<ApiResponse>;
export type ApiRoute = Route<RouteHandler>;

/**
 * Levels a request body adds around the values it carries (`{"input": …}`; a definition's
 * `{"nodes": [{"params": …}]}`): a body may nest this much deeper than a value may.
 */
const BODY_NESTING = 4;

export function parseJson(body: string | undefined, options: { required: boolean }): unknown {
  if (body === undefined) {
    if (!options.required) return undefined;
    throw new WeftError(400, "InvalidJson", "the request body is empty; a JSON document is expected");
  }
  // Measured on the text, before anything recursive (schemas, hashing) meets the value.
  const maxDepth = PAYLOAD_LIMITS.maxDepth + BODY_NESTING;
  if (jsonTextDepth(body, maxDepth) > maxDepth) {
    throw new WeftError(
      400,
      "PayloadTooDeep",
      `the request body nests arrays and objects more than ${maxDepth} levels deep; a value may nest at most ${PAYLOAD_LIMITS.maxDepth}`,
      [{ path: "body", code: "too_deep", message: `at most ${PAYLOAD_LIMITS.maxDepth} levels in a value` }],
    );
  }
  try {
    return JSON.parse(body) as unknown;
  } catch (error) {
    // JSON.parse's message names the position of the problem, never more than a few characters of the body.
    const reason = error instanceof Error ? error.message : "unparseable";
    throw new WeftError(400, "InvalidJson", "the request body is not valid JSON", [
      { path: "body", code: "invalid_json", message: reason },
    ]);
  }
}

/** An optional JSON object body validated by `schema`; an absent body validates as `{}`. */
export function optionalBody<S extends z.ZodType>(schema: S, body: string | undefined): z.output<S> {
  const raw = parseJson(body, { required: false });
  return validate(schema, raw === undefined ? {} : raw);
}

export function validate<S extends z.ZodType>(schema: S, value: unknown, prefix?: string): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const where = prefix === undefined ? "request body" : prefix;
  const details = issuesToDetails(parsed.error.issues, prefix);
  throw new WeftError(400, "InvalidRequest", `the ${where} has ${details.length} problem(s)`, details);
}

/** The query string validated by `schema`. A parameter given empty (`?status=`) counts as absent. */
export function validateQuery<S extends z.ZodType>(
  schema: S,
  query: Record<string, string | undefined>,
): z.output<S> {
  const present: Record<string, string> = {};
  for (const [key, value] of Object.entries(query))
    if (value !== undefined && value !== "") present[key] = value;
  return validate(schema, present, "query");
}

export function param(params: Record<string, string>, name: string): string {
  const value = params[name];
  if (value === undefined) throw new Error(`route parameter "${name}" is missing`);
  return value;
}

/** A 400 the engine raised about a query parameter, with its details moved under `query.` like ours. */
export function inQuery(error: unknown): unknown {
  if (!(error instanceof WeftError) || error.status !== 400) return error;
  return new WeftError(
    error.status,
    error.code,
    error.message,
    error.details.map((detail) => ({ ...detail, path: `query.${detail.path}` })),
  );
}
