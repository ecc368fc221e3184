/** GET /dlq, POST /dlq/redrive. */
import type { Engine } from "../../shared/engine/engine.js";
import { type ApiRoute, optionalBody, validateQuery } from "./request.js";
import { listDeadLettersQuerySchema, redriveBodySchema } from "./schemas.js";

export function dlqRoutes(engine: Engine): ApiRoute[] {
  return [
    {
      method: "GET",
      pattern: "/dlq",
      handler: async ({ query }) => {
        const { limit, next } = validateQuery(listDeadLettersQuerySchema, query);
        const page = await engine.listDeadLetters({ limit, ...(next === undefined ? {} : { next }) });
        const deadLetters = page.items.map((record) => ({
          id: record.id,
          executionId: record.executionId,
          nodeId: record.nodeId,
          attempt: record.attempt,
          error: record.error,
          at: new Date(record.at).toISOString(),
          reason: record.reason,
          ...(record.receiveCount === undefined ? {} : { receiveCount: record.receiveCount }),
        }));
        return {
          status: 200,
          body: page.next === undefined ? { deadLetters } : { deadLetters, next: page.next },
        };
      },
    },
    {
      method: "POST",
      pattern: "/dlq/redrive",
      handler: async ({ body }) => {
        const { messageIds } = optionalBody(redriveBodySchema, body);
        return { status: 202, body: await engine.redrive(messageIds) };
      },
    },
  ];
}
