/** listDeadLetters, redrive. */
import type { Engine } from "../../shared/engine/engine.js";
import { listDeadLettersQuerySchema, redriveBodySchema } from "../../shared/http/schemas.js";
import { cursorIn, optionalBody, type RouteHandlers, validateQuery } from "./request.js";

export function dlqHandlers(engine: Engine): RouteHandlers<"listDeadLetters" | "redrive"> {
  return {
    listDeadLetters: async ({ query }) => {
      const { limit, next } = validateQuery(listDeadLettersQuerySchema, query);
      const page = await engine
        .listDeadLetters({ limit, ...(next === undefined ? {} : { next }) })
        .catch((error: unknown) => {
          throw cursorIn("next", error);
        });
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
    redrive: async ({ body }) => {
      const { messageIds } = optionalBody(redriveBodySchema, body);
      return { status: 202, body: await engine.redrive(messageIds) };
    },
  };
}
