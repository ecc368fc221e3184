/**
 * The HTTP API Lambda (API Gateway HTTP API, payload format 2.0): parses and validates requests, calls the
 * engine, maps results and errors to the contract's responses. No orchestration logic lives here.
 *
 * Status codes: POST /workflows 201 (new version) / 200 (same content already registered);
 * POST /executions 202 (new execution) / 200 (an idempotencyKey returned an existing one);
 * POST /executions/{id}/trigger 202 (409 when not PENDING); POST /executions/{id}/cancel 202 (409 when
 * already finished); POST /dlq/redrive 202; GET routes 200. Routes live per resource in *-routes.ts.
 * Errors: `{ error: { code, message, details } }` with 400 InvalidJson / InvalidRequest / the engine's codes,
 * 404 NotFound, 405 MethodNotAllowed, 413 PayloadTooLarge, 500 InternalError (bad input is never a 500).
 */
import { Logger } from "@aws-lambda-powertools/logger";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { ZodError } from "zod";
import { encodeJson, PayloadError } from "../../shared/domain/json.js";
import { PAYLOAD_LIMITS } from "../../shared/domain/payload.js";
import type { Engine } from "../../shared/engine/engine.js";
import { WeftError } from "../../shared/engine/errors.js";
import { dlqRoutes } from "./dlq-routes.js";
import { executionRoutes } from "./execution-routes.js";
import type { RouteHandler } from "./request.js";
import { MalformedPathError, Router } from "./routes.js";
import { issuesToDetails } from "./schemas.js";
import { workflowRoutes } from "./workflow-routes.js";

export type { ApiRequest } from "./request.js";

export type ApiHandler = (event: APIGatewayProxyEventV2) => Promise<APIGatewayProxyStructuredResultV2>;

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
  const router = new Router<RouteHandler>([
    ...workflowRoutes(engine),
    ...executionRoutes(engine, views),
    ...dlqRoutes(engine),
  ]);

  return async (event) => {
    const method = event.requestContext?.http?.method ?? "GET";
    const path = routePath(event);
    try {
      const match = router.match(method, path);
      if (match.kind === "not-found") {
        throw new WeftError(404, "NotFound", `no route for ${method} ${path}`);
      }
      if (match.kind === "method-not-allowed") {
        return errorResponse(
          new WeftError(405, "MethodNotAllowed", `${method} is not allowed on ${path}`, [
            { path: "method", code: "method_not_allowed", message: `allowed: ${match.allowed.join(", ")}` },
          ]),
          { allow: match.allowed.join(", ") },
        );
      }
      const body = readBody(event, maxBodyBytes);
      const result = await match.route.handler({
        params: match.params,
        query: event.queryStringParameters ?? {},
        body,
      });
      return jsonResponse(result.status, result.body);
    } catch (error) {
      if (error instanceof WeftError) return errorResponse(error);
      if (error instanceof PayloadError) return errorResponse(payloadProblem(error));
      if (error instanceof MalformedPathError) {
        return errorResponse(new WeftError(400, "InvalidRequest", error.message));
      }
      if (error instanceof ZodError) {
        // The engine validates some input itself with zod; bad input is never a 500.
        return errorResponse(
          new WeftError(400, "InvalidRequest", "the request is invalid", issuesToDetails(error.issues)),
        );
      }
      // Log the error and where it happened, never the request body (it may carry secrets).
      logger.error("unexpected error while handling a request", {
        method,
        path,
        requestId: event.requestContext?.requestId,
        error: error instanceof Error ? error : String(error),
      });
      return errorResponse(new WeftError(500, "InternalError", "an unexpected error occurred"));
    }
  };
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

function readBody(event: APIGatewayProxyEventV2, maxBytes: number): string | undefined {
  if (event.body === undefined || event.body === null) return undefined;
  const bytes = event.isBase64Encoded ? Buffer.from(event.body, "base64") : Buffer.from(event.body, "utf8");
  if (bytes.byteLength > maxBytes) {
    throw new WeftError(413, "PayloadTooLarge", `the request body is larger than ${maxBytes} bytes`, [
      {
        path: "body",
        code: "too_big",
        message: `${bytes.byteLength} bytes; at most ${maxBytes} are accepted`,
      },
    ]);
  }
  const text = event.isBase64Encoded ? bytes.toString("utf8") : event.body;
  return text.trim() === "" ? undefined : text;
}

/** A value that cannot be taken: 413 over the size limit, 400 otherwise, naming the limit. */
function payloadProblem(error: PayloadError): WeftError {
  const status = error.code === "PayloadTooLarge" ? 413 : 400;
  const limit =
    error.code === "PayloadTooLarge"
      ? `at most ${PAYLOAD_LIMITS.maxBytes} bytes a value`
      : error.code === "PayloadTooDeep"
        ? `at most ${PAYLOAD_LIMITS.maxDepth} levels of nesting`
        : "JSON values only";
  return new WeftError(status, error.code, error.message, [
    { path: "input", code: error.code, message: limit },
  ]);
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
  // Exact JSON: values come back as JSON.parse gave them in (-0, 1e400 included).
  return {
    statusCode: status,
    headers: { ...JSON_HEADERS, ...headers },
    body: encodeJson(body, RESPONSE_LIMITS),
  };
}

function errorResponse(
  error: WeftError,
  headers: Record<string, string> = {},
): APIGatewayProxyStructuredResultV2 {
  return jsonResponse(
    error.status,
    { error: { code: error.code, message: error.message, details: error.details } },
    headers,
  );
}
