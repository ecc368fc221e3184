/** Lambda entry point of the HTTP API: the engine is built from the environment once per container. */
import { Logger } from "@aws-lambda-powertools/logger";
import { Tracer } from "@aws-lambda-powertools/tracer";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { createPowertoolsMetrics } from "../../shared/adapters/metrics-powertools.js";
import { createEngineFromEnv } from "../../shared/config/wiring.js";
import { captureWith, TRACER_OPTIONS, traceInvocation, xrayTracing } from "../common/tracing.js";
import { type ApiHandler, createApiHandler } from "./app.js";

// X-Ray (functions/common/tracing.ts): a no-op outside Lambda.
const tracer = new Tracer({ serviceName: "weft-api", ...TRACER_OPTIONS });
// EMF metrics (namespace Weft), flushed by the app at the end of each invocation.
const metrics = createPowertoolsMetrics();
let app: ApiHandler | undefined;

export const handler = async (event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> =>
  traceInvocation(tracer, async () => {
    if (app === undefined) {
      const logger = new Logger({ serviceName: "weft-api" });
      const engine = createEngineFromEnv(process.env, { logger, capture: captureWith(tracer), metrics });
      app = createApiHandler(engine, { logger, tracing: xrayTracing(tracer), metrics });
    }
    return app(event);
  });
