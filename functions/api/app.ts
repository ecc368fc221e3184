/**
 * The HTTP API Lambda (API Gateway HTTP API, payload format 2.0): parses and validates requests, calls the
 * engine, maps results and errors to the contract's responses. No orchestration logic lives here.
 *
 * Status codes: POST /workflows 201 (new version) / 200 (same content already registered);
 * POST /executions 202 (new execution) / 200 (an idempotencyKey returned an existing one);
 * POST /executions/{id}/trigger 202 (409 when not PENDING); GET routes 200.
 * Errors: `{ error: { code, message, details } }` with 400 InvalidJson / InvalidRequest / the engine's codes,
 * 404 NotFound, 405 MethodNotAllowed, 413 PayloadTooLarge, 500 InternalError (bad input is never a 500).
 */
import { Logger } from "@aws-lambda-powertools/logger";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { ZodError, type z } from "zod";
import type { Engine } from "../../shared/engine/engine.js";
import { WeftError } from "../../shared/engine/errors.js";
import { MalformedPathError, type Route, Router } from "./routes.js";
import {
  createExecutionBodySchema,
  getWorkflowQuerySchema,
  issuesToDetails,
  triggerBodySchema,
} from "./schemas.js";

export type ApiHandler = (event: APIGatewayProxyEventV2) => Promise<APIGatewayProxyStructuredResultV2>;

export interface ApiHandlerOptions {
  logger?: Logger;
  /** Largest accepted request body in bytes (after base64 decoding). Default 1 MiB. */
  maxBodyBytes?: number;
}

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/** What a route handler sees of the request. */
export interface ApiRequest {
  params: Record<string, string>;
  query: Record<string, string | undefined>;
  /** The raw body text (decoded when API Gateway sent it base64-encoded), or undefined when absent/blank. */
  body: string | undefined;
}

interface ApiResponse {
  status: number;
  body: unknown;
}

type RouteHandler = (request: ApiRequest) => Promise<ApiResponse>;

const JSON_HEADERS = { "content-type": "application/json; charset=utf-8" };

export function createApiHandler(engine: Engine, options: ApiHandlerOptions = {}): ApiHandler {
  const logger = options.logger ?? new Logger({ serviceName: "weft-api" });
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const router = new Router<RouteHandler>(apiRoutes(engine));

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

function apiRoutes(engine: Engine): Route<RouteHandler>[] {
  return [
    {
      method: "POST",
      pattern: "/workflows",
      handler: async ({ body }) => {
        const definition = parseJson(body, { required: true });
        const result = await engine.registerWorkflow(definition);
        return {
          status: result.created ? 201 : 200,
          body: { name: result.name, version: result.version, definitionHash: result.definitionHash },
        };
      },
    },
    {
      method: "GET",
      pattern: "/workflows/{name}",
      handler: async ({ params, query }) => {
        const { version } = validate(getWorkflowQuerySchema, pickDefined(query), "query");
        const record = await engine.getWorkflow(param(params, "name"), version);
        return {
          status: 200,
          body: {
            name: record.name,
            version: record.version,
            definitionHash: record.definitionHash,
            createdAt: new Date(record.createdAt).toISOString(),
            definition: record.definition,
          },
        };
      },
    },
    {
      method: "POST",
      pattern: "/executions",
      handler: async ({ body }) => {
        const request = validate(createExecutionBodySchema, parseJson(body, { required: true }));
        const summary = await engine.createExecution(request);
        return {
          status: summary.created ? 202 : 200,
          body: { executionId: summary.executionId, status: summary.status },
        };
      },
    },
    {
      method: "POST",
      pattern: "/executions/{id}/trigger",
      handler: async ({ params, body }) => {
        const raw = parseJson(body, { required: false });
        const request = validate(triggerBodySchema, raw === undefined ? {} : raw);
        const summary = await engine.triggerExecution(param(params, "id"), request.input);
        return { status: 202, body: { executionId: summary.executionId, status: summary.status } };
      },
    },
    {
      method: "GET",
      pattern: "/executions/{id}",
      handler: async ({ params }) => ({
        status: 200,
        body: await engine.describeExecution(param(params, "id")),
      }),
    },
  ];
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

function parseJson(body: string | undefined, options: { required: boolean }): unknown {
  if (body === undefined) {
    if (!options.required) return undefined;
    throw new WeftError(400, "InvalidJson", "the request body is empty; a JSON document is expected");
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

function validate<S extends z.ZodType>(schema: S, value: unknown, prefix?: string): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const where = prefix === undefined ? "request body" : prefix;
  const details = issuesToDetails(parsed.error.issues, prefix);
  throw new WeftError(400, "InvalidRequest", `the ${where} has ${details.length} problem(s)`, details);
}

function param(params: Record<string, string>, name: string): string {
  const value = params[name];
  if (value === undefined) throw new Error(`route parameter "${name}" is missing`);
  return value;
}

function pickDefined(query: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(query)) if (value !== undefined) out[key] = value;
  return out;
}

function jsonResponse(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): APIGatewayProxyStructuredResultV2 {
  return { statusCode: status, headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(body) };
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
