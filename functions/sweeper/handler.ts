/** Lambda entry point of the sweeper (an EventBridge schedule invokes it every minute). */
import { Logger } from "@aws-lambda-powertools/logger";
import type { Context, ScheduledEvent } from "aws-lambda";
import { createPowertoolsMetrics } from "../../shared/adapters/metrics-powertools.js";
import { declaredTasks, functionEngineFromEnv } from "../../shared/config/function-engine.js";
import type { SweepReport } from "../../shared/engine/sweeper.js";
import type { TaskModule } from "../../shared/tasks/task-modules.js";
import { invocationTracing } from "../common/tracing.js";
import { createSweeperHandler, type SweeperHandler } from "./app.js";

// X-Ray when the construct turned it on (functions/common/tracing.ts), loaded at init; else nothing.
const tracing = await invocationTracing("weft-sweeper", process.env);
// EMF metrics (namespace Weft), flushed by the app at the end of each invocation.
const metrics = createPowertoolsMetrics();
// One engine per container, built on the first invocation.
let app: SweeperHandler | undefined;

/**
 * The function's handler, with the custom task modules its bundle holds (the construct generates
 * the entry that imports them and calls this: infra/lib/function-entry.ts).
 */
export const lambdaHandler =
  (taskModules: readonly TaskModule[] = []) =>
  async (event?: ScheduledEvent, context?: Context): Promise<SweepReport> =>
    tracing.invocation(async () => {
      if (app === undefined) {
        const logger = new Logger({ serviceName: "weft-sweeper" });
        // Runs no http or lambda node: those task types' params only (shared/tasks/declared.ts).
        const engine = functionEngineFromEnv(process.env, {
          logger,
          capture: tracing.capture,
          metrics,
          taskModules,
          tasks: declaredTasks,
        });
        app = createSweeperHandler(engine, { logger, metrics });
      }
      return app(event, context);
    });
