/** Lambda entry point of the worker (SQS event source with ReportBatchItemFailures). */
import { Logger } from "@aws-lambda-powertools/logger";
import type { Context, SQSBatchResponse, SQSEvent } from "aws-lambda";
import { createPowertoolsMetrics } from "../../shared/adapters/metrics-powertools.js";
import { createEngineFromEnv } from "../../shared/config/worker-engine.js";
import type { TaskModule } from "../../shared/tasks/task-modules.js";
import { invocationTracing } from "../common/tracing.js";
import { createWorkerHandler, type WorkerHandler } from "./app.js";

// X-Ray when the construct turned it on (functions/common/tracing.ts), loaded at init; else nothing.
const tracing = await invocationTracing("weft-worker", process.env);
// EMF metrics (namespace Weft), flushed by the app at the end of each invocation.
const metrics = createPowertoolsMetrics();
// One engine per container, built on the first invocation.
let app: WorkerHandler | undefined;

/**
 * The function's handler, with the custom task modules its bundle holds (the construct generates
 * the entry that imports them and calls this: infra/lib/function-entry.ts).
 */
export const lambdaHandler =
  (taskModules: readonly TaskModule[] = []) =>
  async (event: SQSEvent, context?: Context): Promise<SQSBatchResponse> =>
    tracing.invocation(async () => {
      if (app === undefined) {
        const logger = new Logger({ serviceName: "weft-worker" });
        const engine = createEngineFromEnv(process.env, {
          logger,
          capture: tracing.capture,
          metrics,
          taskModules,
        });
        app = createWorkerHandler(engine, { logger, tracing: tracing.app, metrics });
      }
      return app(event, context);
    });
