/** Builds the api handler on the real engine with in-memory ports, and API Gateway v2 events for it. */
import { Logger } from "@aws-lambda-powertools/logger";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { type ApiHandler, createApiHandler } from "../../functions/api/app.js";
import { toApiGatewayEvent } from "../../local/http-server.js";
import { MemoryBlobStore } from "../../shared/adapters/memory/blobs.js";
import { MemoryEventPublisher } from "../../shared/adapters/memory/events.js";
import { MemoryQueue } from "../../shared/adapters/memory/queue.js";
import { MemoryStore } from "../../shared/adapters/memory/store.js";
import { randomIds, systemClock } from "../../shared/adapters/system.js";
import { Engine } from "../../shared/engine/engine.js";
import type { EnginePorts } from "../../shared/ports.js";
import { createTaskRegistry } from "../../shared/tasks/builtins.js";

export interface ApiFixture {
  engine: Engine;
  ports: EnginePorts;
  queue: MemoryQueue;
  logger: Logger;
  handler: ApiHandler;
  call(request: RequestSpec): Promise<ApiAnswer>;
}

export interface RequestSpec {
  method: string;
  path: string;
  body?: unknown;
  /** Send this text as the body verbatim (for malformed JSON and size tests). */
  rawBody?: string;
  base64?: boolean;
}

export interface ApiAnswer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
  raw: APIGatewayProxyStructuredResultV2;
}

export function apiEvent(request: RequestSpec): APIGatewayProxyEventV2 {
  const text = request.rawBody ?? (request.body === undefined ? undefined : JSON.stringify(request.body));
  const event = toApiGatewayEvent({
    method: request.method,
    url: request.path,
    headers: { host: "127.0.0.1:3000", "content-type": "application/json", "user-agent": "vitest" },
    sourceIp: "127.0.0.1",
    ...(text === undefined ? {} : { body: text }),
  });
  if (request.base64 && event.body !== undefined) {
    event.body = Buffer.from(event.body, "utf8").toString("base64");
    event.isBase64Encoded = true;
  }
  return event;
}

export function createApiFixture(): ApiFixture {
  const queue = new MemoryQueue({ clock: systemClock });
  const ports: EnginePorts = {
    store: new MemoryStore(),
    blobs: new MemoryBlobStore(),
    queue,
    events: new MemoryEventPublisher(),
    clock: systemClock,
    ids: randomIds,
  };
  const engine = new Engine(ports, createTaskRegistry());
  const logger = new Logger({ serviceName: "weft-api-test", logLevel: "SILENT" });
  const handler = createApiHandler(engine, { logger });
  return {
    engine,
    ports,
    queue,
    logger,
    handler,
    async call(request) {
      const raw = await handler(apiEvent(request));
      const headers = Object.fromEntries(
        Object.entries(raw.headers ?? {}).map(([name, value]) => [name.toLowerCase(), String(value)]),
      );
      return {
        status: raw.statusCode ?? 200,
        headers,
        body: raw.body === undefined ? undefined : JSON.parse(raw.body),
        raw,
      };
    },
  };
}

export interface ErrorBody {
  error: { code: string; message: string; details: Array<{ path: string; code: string; message: string }> };
}

export const chainDefinition = (name = "chain") => ({
  name,
  nodes: [
    { id: "a", type: "noop" },
    { id: "b", type: "pass", dependsOn: ["a"], params: { value: 1 } },
    { id: "c", type: "noop", dependsOn: ["b"] },
  ],
});

/** Asserts the error contract (`{error: {code, message, details}}`) and answers the error. */
export function expectErrorAnswer(
  answer: { status: number; body: unknown },
  status: number,
  code: string,
): ErrorBody["error"] {
  if (answer.status !== status) {
    throw new Error(`expected ${status} ${code}, got ${answer.status}: ${JSON.stringify(answer.body)}`);
  }
  const body = answer.body as ErrorBody;
  if (
    Object.keys(body).join() !== "error" ||
    body.error.code !== code ||
    !Array.isArray(body.error.details)
  ) {
    throw new Error(`expected the error shape with code ${code}, got ${JSON.stringify(body)}`);
  }
  return body.error;
}

/** The details' paths of an error answer, sorted. */
export const detailPaths = (error: ErrorBody["error"]) => error.details.map((detail) => detail.path).sort();
