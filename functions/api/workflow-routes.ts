/** POST /workflows, GET /workflows/{name}. */
import type { Engine } from "../../shared/engine/engine.js";
import { type ApiRoute, param, parseJson, validateQuery } from "./request.js";
import { getWorkflowQuerySchema } from "./schemas.js";

export function workflowRoutes(engine: Engine): ApiRoute[] {
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
        const { version } = validateQuery(getWorkflowQuerySchema, query);
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
  ];
}
