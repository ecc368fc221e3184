/** Lambda entry point of the HTTP API: the engine is built from the environment once per container. */
import { Logger } from "@aws-lambda-powertools/logger";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { createPowertoolsMetrics } from "../../shared/adapters/metrics-powertools.js";
import { declaredTasks, functionEngineFromEnv } from "../../shared/config/function-engine.js";
import type { TaskModule } from "../../shared/tasks/task-modules.js";
import { invocationTracing } from "../common/tracing.js";
import { type ApiHandler, createApiHandler } from "./app.js";

// X-Ray when the construct turned it on (functions/common/tracing.ts), loaded at init; else nothing.
const tracing = await invocationTracing("weft-api", process.env);
// EMF metrics (namespace Weft), flushed by the app at the end of each invocation.
const metrics = createPowertoolsMetrics();
// One engine per container, built on the first invocation.
let app: ApiHandler | undefined;

/**
 * The function's handler, with the custom task modules its bundle holds (the construct generates
 * the entry that imports them and calls this: infra/lib/function-entry.ts).
 */
export const lambdaHandler =
  (taskModules: readonly TaskModule[] = []) =>
  async (event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> =>
    tracing.invocation(async () => {
      if (app === undefined) {
        const logger = new Logger({ serviceName: "weft-api" });
        // Runs no http or lambda node: those task types' params only (shared/tasks/declared.ts).
        const engine = functionEngineFromEnv(process.env, {
          logger,
          capture: tracing.capture,
          metrics,
          taskModules,
          tasks: declaredTasks,
        });
        app = createApiHandler(engine, { logger, tracing: tracing.app, metrics });
      }
      return app(event);
    });
