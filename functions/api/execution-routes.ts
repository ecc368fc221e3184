/** createUpload and the execution routes: start, list, describe, trigger, cancel, events. */
import { executionTrace, parseTraceparent } from "../../shared/domain/trace.js";
import type { Engine } from "../../shared/engine/engine.js";
import type { TracedCreateRequest } from "../../shared/engine/executions.js";
import {
  cancelBodySchema,
  createExecutionBodySchema,
  createUploadBodySchema,
  describeExecutionQuerySchema,
  executionIdParamsSchema,
  listEventsQuerySchema,
  listExecutionsQuerySchema,
  triggerBodySchema,
} from "../../shared/http/schemas.js";
import type { ViewSettings } from "./app.js";
import {
  cursorIn,
  optionalBody,
  parseJson,
  type RouteHandlers,
  validate,
  validateParams,
  validateQuery,
} from "./request.js";

type ExecutionRoutes =
  | "createUpload"
  | "startExecution"
  | "listExecutions"
  | "describeExecution"
  | "triggerExecution"
  | "cancelExecution"
  | "listEvents";

export function executionHandlers(engine: Engine, views: ViewSettings): RouteHandlers<ExecutionRoutes> {
  return {
    createUpload: async ({ body }) => {
      const { bytes } = validate(createUploadBodySchema, parseJson(body, { required: true }));
      return { status: 201, body: await engine.createUpload(bytes) };
    },
    startExecution: async ({ body, headers, annotateTrace }) => {
      const request = validate(createExecutionBodySchema, parseJson(body, { required: true }));
      // W3C Trace Context: the execution continues the caller's trace. A malformed traceparent is
      // ignored — the execution starts a trace of its own — never refused (shared/domain/trace.ts).
      const given = parseTraceparent(headers?.traceparent);
      const traced: TracedCreateRequest =
        given === undefined ? request : { ...request, traceparent: headers?.traceparent };
      const summary = await engine.createExecution(traced);
      // The trace that X-Ray's segment joins: the caller's, or the new one a new execution started (an
      // existing one, returned by its idempotency key, keeps the trace of the request that made it).
      const traceId = given?.traceId ?? (summary.created ? executionTrace(summary).traceId : undefined);
      if (traceId !== undefined) annotateTrace?.(traceId);
      return {
        status: summary.created ? 202 : 200,
        body: { executionId: summary.executionId, status: summary.status },
      };
    },
    listExecutions: async ({ query }) => {
      const { workflow, status, limit, next } = validateQuery(listExecutionsQuerySchema, query);
      const page = await engine
        .listExecutions({
          limit,
          ...(workflow === undefined ? {} : { workflow }),
          ...(status === undefined ? {} : { status }),
          ...(next === undefined ? {} : { next }),
        })
        .catch((error: unknown) => {
          throw cursorIn("next", error);
        });
      return { status: 200, body: page };
    },
    describeExecution: async ({ params, query }) => {
      const { id } = validateParams(executionIdParamsSchema, params);
      const { resolve } = validateQuery(describeExecutionQuerySchema, query);
      const view = await engine.describeExecution(id, {
        resolve: resolve === undefined ? views.resolveByDefault : resolve === "true",
        maxBytes: views.maxInlineBytes,
        // The modeled cost (shared/engine/cost-model.ts): what the protocol's counts give for its records.
        cost: true,
      });
      const { cost } = view;
      if (cost === undefined) throw new Error("the description left out the cost it was asked for");
      return { status: 200, body: { ...view, cost } };
    },
    triggerExecution: async ({ params, body }) => {
      const { id } = validateParams(executionIdParamsSchema, params);
      const request = optionalBody(triggerBodySchema, body);
      const summary = await engine.triggerExecution(id, request);
      return { status: 202, body: { executionId: summary.executionId, status: summary.status } };
    },
    cancelExecution: async ({ params, body }) => {
      const { id } = validateParams(executionIdParamsSchema, params);
      const { reason } = optionalBody(cancelBodySchema, body);
      const summary = await engine.cancelExecution(id, reason);
      return { status: 202, body: { executionId: summary.executionId, status: summary.status } };
    },
    listEvents: async ({ params, query }) => {
      const { id } = validateParams(executionIdParamsSchema, params);
      const { after, limit } = validateQuery(listEventsQuerySchema, query);
      const page = await engine
        .listEvents(id, { limit, ...(after === undefined ? {} : { after }) })
        .catch((error: unknown) => {
          throw cursorIn("after", error);
        });
      return { status: 200, body: page };
    },
  };
}
