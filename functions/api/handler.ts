/** Lambda entry point of the HTTP API: the engine is built from the environment once per container. */
import { Logger } from "@aws-lambda-powertools/logger";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { createEngineFromEnv } from "../../shared/config/wiring.js";
import { type ApiHandler, createApiHandler } from "./app.js";

let app: ApiHandler | undefined;

export const handler = async (event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> => {
  if (app === undefined) {
    const logger = new Logger({ serviceName: "weft-api" });
    app = createApiHandler(createEngineFromEnv(process.env, { logger }), { logger });
  }
  return app(event);
};
