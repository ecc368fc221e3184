/** Lambda entry point of the HTTP API: the engine is built from the environment once per container. */
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { createEngineFromEnv } from "../../shared/config/wiring.js";
import { type ApiHandler, createApiHandler } from "./app.js";

let app: ApiHandler | undefined;

export const handler = async (event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> => {
  app ??= createApiHandler(createEngineFromEnv());
  return app(event);
};
