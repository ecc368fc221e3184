/** registerWorkflow, listWorkflows, getWorkflow. */
import type { Engine } from "../../shared/engine/engine.js";
import {
  getWorkflowQuerySchema,
  listWorkflowsQuerySchema,
  workflowNameParamsSchema,
} from "../../shared/http/schemas.js";
import { redactDefinition } from "../../shared/tasks/http-headers.js";
import { cursorIn, parseJson, type RouteHandlers, validateParams, validateQuery } from "./request.js";

export function workflowHandlers(
  engine: Engine,
): RouteHandlers<"registerWorkflow" | "listWorkflows" | "getWorkflow"> {
  return {
    registerWorkflow: async ({ body }) => {
      const definition = parseJson(body, { required: true });
      const result = await engine.registerWorkflow(definition);
      return {
        status: result.created ? 201 : 200,
        body: {
          name: result.name,
          version: result.version,
          definitionHash: result.definitionHash,
          ...(result.warnings ? { warnings: result.warnings } : {}),
        },
      };
    },
    listWorkflows: async ({ query }) => {
      const { limit, next } = validateQuery(listWorkflowsQuerySchema, query);
      // A listing of names: nothing for the engine to decide, so straight from the store.
      const page = await engine.ports.store
        .listWorkflows({ limit, ...(next === undefined ? {} : { next }) })
        .catch((error: unknown) => {
          throw cursorIn("next", error);
        });
      const workflows = page.items.map((item) => ({
        name: item.name,
        latestVersion: item.latestVersion,
        createdAt: new Date(item.createdAt).toISOString(),
        ...(item.description === undefined ? {} : { description: item.description }),
      }));
      return { status: 200, body: page.next === undefined ? { workflows } : { workflows, next: page.next } };
    },
    getWorkflow: async ({ params, query }) => {
      const { name } = validateParams(workflowNameParamsSchema, params);
      const { version } = validateQuery(getWorkflowQuerySchema, query);
      const record = await engine.getWorkflow(name, version);
      return {
        status: 200,
        body: {
          name: record.name,
          version: record.version,
          definitionHash: record.definitionHash,
          createdAt: new Date(record.createdAt).toISOString(),
          // A definition stored before plain-text credentials were refused may hold some: never shown.
          definition: redactDefinition(record.definition),
        },
      };
    },
  };
}
