/**
 * POST /executions, GET /executions, GET /executions/{id}, POST /executions/{id}/trigger,
 * POST /executions/{id}/cancel, GET /executions/{id}/events.
 */
import type { Engine } from "../../shared/engine/engine.js";
import { WeftError } from "../../shared/engine/errors.js";
import type { ViewSettings } from "./app.js";
import {
  type ApiRoute,
  inQuery,
  optionalBody,
  param,
  parseJson,
  validate,
  validateQuery,
} from "./request.js";
import {
  cancelBodySchema,
  createExecutionBodySchema,
  createUploadBodySchema,
  describeExecutionQuerySchema,
  listEventsQuerySchema,
  listExecutionsQuerySchema,
  triggerBodySchema,
} from "./schemas.js";

export function executionRoutes(engine: Engine, views: ViewSettings): ApiRoute[] {
  return [
    {
      method: "POST",
      pattern: "/payloads",
      handler: async ({ body }) => {
        const { bytes } = validate(createUploadBodySchema, parseJson(body, { required: true }));
        return { status: 201, body: await engine.createUpload(bytes) };
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
      method: "GET",
      pattern: "/executions",
      handler: async ({ query }) => {
        const { workflow, status, limit, next } = validateQuery(listExecutionsQuerySchema, query);
        try {
          const page = await engine.listExecutions({
            limit,
            ...(workflow === undefined ? {} : { workflow }),
            ...(status === undefined ? {} : { status }),
            ...(next === undefined ? {} : { next }),
          });
          return { status: 200, body: page };
        } catch (error) {
          // The store refuses a cursor it cannot decode with a RangeError.
          if (error instanceof RangeError) {
            throw new WeftError(400, "InvalidRequest", `"next" is not a cursor this API returned`, [
              { path: "query.next", code: "invalid_cursor", message: "not a cursor this API returned" },
            ]);
          }
          throw error;
        }
      },
    },
    {
      method: "GET",
      pattern: "/executions/{id}",
      handler: async ({ params, query }) => {
        const { resolve } = validateQuery(describeExecutionQuerySchema, query);
        const view = await engine.describeExecution(param(params, "id"), {
          resolve: resolve === undefined ? views.resolveByDefault : resolve === "true",
          maxBytes: views.maxInlineBytes,
        });
        return { status: 200, body: view };
      },
    },
    {
      method: "POST",
      pattern: "/executions/{id}/trigger",
      handler: async ({ params, body }) => {
        const request = optionalBody(triggerBodySchema, body);
        const summary = await engine.triggerExecution(param(params, "id"), request);
        return { status: 202, body: { executionId: summary.executionId, status: summary.status } };
      },
    },
    {
      method: "POST",
      pattern: "/executions/{id}/cancel",
      handler: async ({ params, body }) => {
        const { reason } = optionalBody(cancelBodySchema, body);
        const summary = await engine.cancelExecution(param(params, "id"), reason);
        return { status: 202, body: { executionId: summary.executionId, status: summary.status } };
      },
    },
    {
      method: "GET",
      pattern: "/executions/{id}/events",
      handler: async ({ params, query }) => {
        const { after, limit } = validateQuery(listEventsQuerySchema, query);
        const page = await engine
          .listEvents(param(params, "id"), { limit, ...(after === undefined ? {} : { after }) })
          .catch((error: unknown) => {
            // The engine names a bad cursor's detail "after"; answer it under "query." like our own.
            throw inQuery(error);
          });
        return { status: 200, body: page };
      },
    },
  ];
}
