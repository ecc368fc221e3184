/**
 * The HTTP API Lambda (API Gateway HTTP API, payload format 2.0): parses and validates requests, calls the
 * engine, maps results and errors to the contract's responses. No orchestration logic lives here.
 *
 * Status codes: POST /workflows 201 (new version) / 200 (same content already registered);
 * POST /executions 202 (new execution) / 200 (an idempotencyKey returned its execution to the same
 * request) / 409 IdempotencyKeyConflict (the key with another request);
 * POST /executions/{id}/trigger 202 (409 when not PENDING); POST /executions/{id}/cancel 202 (409 when
 * already finished); POST /dlq/redrive 202; POST /workers 201; POST /workers/{id}/heartbeat 200
 * and DELETE /workers/{id} 200 (404 for a worker not registered); POST /workers/{id}/poll 200 with
 * a task, or 204 without a body when none came within its wait; POST /tasks/heartbeat 200;
 * POST /tasks/complete, /tasks/fail and /callbacks/{complete,fail,heartbeat} 202 (409 for a token
 * whose attempt is over, 400 for one this API never gave); GET routes 200. The routes are the
 * contract's (shared/http/contract.ts); their handlers live per resource in *-routes.ts.
 * Errors: `{ error: { code, message, details } }`, the status chosen by code in problems.ts; 500
 * InternalError only for what nobody raised on purpose (bad input is never a 500).
 */
import { Logger } from "@aws-lambda-powertools/logger";
import type { Metrics } from "@aws-lambda-powertools/metrics";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { publishMetrics } from "../../shared/adapters/metrics-powertools.js";
import { RequestError } from "../../shared/domain/errors.js";
import { encodeJson } from "../../shared/domain/json.js";
import { $ZodError } from "../../shared/domain/zod.js";
import type { Engine } from "../../shared/engine/engine.js";
import { API_ROUTES, ROUTE_NAMES, type RouteName } from "../../shared/http/contract.js";
import { type FunctionTracing, NO_TRACING } from "../common/tracing.js";
import { dlqHandlers } from "./dlq-routes.js";
import { executionHandlers } from "./execution-routes.js";
import { internalError, type Problem, problemOf } from "./problems.js";
import { issuesToDetails, type RouteHandler, type RouteHandlers } from "./request.js";
import { MalformedPathError, type Route, Router } from "./routes.js";
import { workerHandlers } from "./worker-routes.js";
import { workflowHandlers } from "./workflow-routes.js";

export type { ApiRequest } from "./request.js";

/** What the server in front of the handler may add to an event. */
export interface ApiInvocation {
  /** Aborted when the caller went away: a long poll (POST /workers/{id}/poll) stops waiting. */
  signal?: AbortSignal;
}

export type ApiHandler = (
  event: APIGatewayProxyEventV2,
  invocation?: ApiInvocation,
) => Promise<APIGatewayProxyStructuredResultV2>;

/** How `GET /executions/{id}` shows values kept in the blob store. */
export interface ViewSettings {
  /** Inline them when the request does not say (`?resolve=`). */
  resolveByDefault: boolean;
  /** Most bytes of values one response inlines. */
  maxInlineBytes: number;
}

export interface ApiHandlerOptions {
  logger?: Logger;
  /** Largest accepted request body in bytes (after base64 decoding). Default DEFAULT_MAX_BODY_BYTES. */
  maxBodyBytes?: number;
  /** Default: references unless `?resolve=true`, inlining at most DEFAULT_MAX_INLINE_BYTES. */
  views?: ViewSettings;
  /** Powertools Metrics the engine records into (EMF), flushed at the end of every invocation. */
  metrics?: Metrics;
  /** X-Ray (functions/common/tracing.ts): the W3C trace id of a started execution annotated. Default none. */
  tracing?: FunctionTracing;
}

/**
 * A Lambda invocation carries 6 MB each way (its event, with headers and context, included); a
 * body up to this much fits with room to spare. Larger inputs are uploaded (POST /payloads).
 */
export const DEFAULT_MAX_BODY_BYTES = 6 * 1024 * 1024 - 64 * 1024;

/** What a view inlines at most when asked to resolve, so the response stays under Lambda's 6 MB. */
export const DEFAULT_MAX_INLINE_BYTES = 5 * 1024 * 1024;

const JSON_HEADERS = { "content-type": "application/json; charset=utf-8" };

export function createApiHandler(engine: Engine, options: ApiHandlerOptions = {}): ApiHandler {
  const logger = options.logger ?? new Logger({ serviceName: "weft-api" });
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const views = options.views ?? { resolveByDefault: false, maxInlineBytes: DEFAULT_MAX_INLINE_BYTES };
  const router = new Router(apiRoutes(engine, views));
  const tracing = options.tracing ?? NO_TRACING;

  const handle: ApiHandler = async (event, invocation = {}) => {
    const method = event.requestContext?.http?.method ?? "GET";
    const path = routePath(event);
    try {
      const match = router.match(method, path);
      if (match.kind === "not-found") {
        throw new RequestError("NotFound", `no route for ${method} ${path}`);
      }
      if (match.kind === "method-not-allowed") {
        return errorResponse(
          problemOf(
            new RequestError("MethodNotAllowed", `${method} is not allowed on ${path}`, {
              details: [
                {
                  path: "method",
                  code: "method_not_allowed",
                  message: `allowed: ${match.allowed.join(", ")}`,
                },
              ],
            }),
          ) ?? internalError(),
          { allow: match.allowed.join(", ") },
        );
      }
      const body = readBody(event, maxBodyBytes);
      const result = await match.route.handler({
        params: match.params,
        query: event.queryStringParameters ?? {},
        body,
        headers: lowerCaseHeaders(event.headers),
        annotateTrace: (traceId) => tracing.annotate(traceId),
        ...(invocation.signal === undefined ? {} : { signal: invocation.signal }),
      });
      // 204: no body, hence no content-type either.
      if (result.status === 204) return { statusCode: 204, headers: {} };
      return jsonResponse(result.status, result.body);
    } catch (error) {
      const problem = problemOf(asRequestError(error));
      if (problem) return errorResponse(problem);
      // Log the error and where it happened, never the request body (it may carry secrets).
      logger.error("unexpected error while handling a request", {
        method,
        path,
        requestId: event.requestContext?.requestId,
        error: error instanceof Error ? error : String(error),
      });
      return errorResponse(internalError());
    }
  };
  return async (event, invocation) => {
    try {
      return await handle(event, invocation);
    } finally {
      publishMetrics(options.metrics);
    }
  };
}

/** Every route of the contract with its handler; the compiler refuses a route left without one. */
export function apiRoutes(engine: Engine, views: ViewSettings): Route<RouteHandler>[] {
  const handlers: RouteHandlers<RouteName> = {
    ...workflowHandlers(engine),
    ...executionHandlers(engine, views),
    ...dlqHandlers(engine),
    ...workerHandlers(engine),
  };
  return ROUTE_NAMES.map((name) => ({
    method: API_ROUTES[name].method,
    pattern: API_ROUTES[name].path,
    handler: handlers[name] as RouteHandler,
  }));
}

/** Errors from below that are the caller's input, not a fault: a bad path, a schema the engine checks. */
function asRequestError(error: unknown): unknown {
  if (error instanceof MalformedPathError) return new RequestError("InvalidRequest", error.message);
  if (error instanceof $ZodError) {
    // The engine validates some input itself with zod; bad input is never a 500.
    return new RequestError("InvalidRequest", "the request is invalid", {
      details: issuesToDetails(error.issues),
    });
  }
  return error;
}

/**
 * The path to route on. With a named stage (not `$default`), API Gateway puts the stage in rawPath
 * (`/prod/executions`); strip it so the same routes match.
 */
function routePath(event: APIGatewayProxyEventV2): string {
  const raw = event.rawPath || event.requestContext?.http?.path || "/";
  const stage = event.requestContext?.stage;
  if (stage && stage !== "$default") {
    const prefix = `/${stage}`;
    if (raw === prefix) return "/";
    if (raw.startsWith(`${prefix}/`)) return raw.slice(prefix.length);
  }
  return raw;
}

/** Header names in lower case (API Gateway's HTTP API sends them so already; a test event may not). */
function lowerCaseHeaders(headers: APIGatewayProxyEventV2["headers"] | undefined): Record<string, string> {
  const lower: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {}))
    if (value !== undefined) lower[name.toLowerCase()] = value;
  return lower;
}

function readBody(event: APIGatewayProxyEventV2, maxBytes: number): string | undefined {
  if (event.body === undefined || event.body === null) return undefined;
  const bytes = event.isBase64Encoded ? Buffer.from(event.body, "base64") : Buffer.from(event.body, "utf8");
  if (bytes.byteLength > maxBytes) {
    throw new RequestError("PayloadTooLarge", `the request body is larger than ${maxBytes} bytes`, {
      details: [
        {
          path: "body",
          code: "too_big",
          message: `${bytes.byteLength} bytes; at most ${maxBytes} are accepted`,
        },
      ],
    });
  }
  const text = event.isBase64Encoded ? bytes.toString("utf8") : event.body;
  return text.trim() === "" ? undefined : text;
}

const RESPONSE_LIMITS = {
  maxBytes: Number.POSITIVE_INFINITY,
  maxDepth: Number.POSITIVE_INFINITY,
  what: "the response",
};

function jsonResponse(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): APIGatewayProxyStructuredResultV2 {
  // Exact JSON: values come back as they were sent (-0, and exact numbers' digits: exact-numbers.ts).
  return {
    statusCode: status,
    headers: { ...JSON_HEADERS, ...headers },
    body: encodeJson(body, RESPONSE_LIMITS),
  };
}

function errorResponse(
  problem: Problem,
  headers: Record<string, string> = {},
): APIGatewayProxyStructuredResultV2 {
  return jsonResponse(
    problem.status,
    { error: { code: problem.code, message: problem.message, details: problem.details } },
    problem.retryAfterSeconds === undefined
      ? headers
      : { ...headers, "retry-after": String(problem.retryAfterSeconds) },
  );
}
