/** Lambda entry point of the sweeper (an EventBridge schedule invokes it every minute). */
import { Logger } from "@aws-lambda-powertools/logger";
import { Tracer } from "@aws-lambda-powertools/tracer";
import type { Context, ScheduledEvent } from "aws-lambda";
import { createPowertoolsMetrics } from "../../shared/adapters/metrics-powertools.js";
import { declaredTasks, functionEngineFromEnv } from "../../shared/config/function-engine.js";
import type { SweepReport } from "../../shared/engine/sweeper.js";
import type { TaskModule } from "../../shared/tasks/task-modules.js";
import { captureWith, TRACER_OPTIONS, traceInvocation } from "../common/tracing.js";
import { createSweeperHandler, type SweeperHandler } from "./app.js";

// X-Ray (functions/common/tracing.ts): a no-op outside Lambda.
const tracer = new Tracer({ serviceName: "weft-sweeper", ...TRACER_OPTIONS });
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
    traceInvocation(tracer, async () => {
      if (app === undefined) {
        const logger = new Logger({ serviceName: "weft-sweeper" });
        // Runs no http or lambda node: those task types' params only (shared/tasks/declared.ts).
        const engine = functionEngineFromEnv(process.env, {
          logger,
          capture: captureWith(tracer),
          metrics,
          taskModules,
          tasks: declaredTasks,
        });
        app = createSweeperHandler(engine, { logger, metrics });
      }
      return app(event, context);
    });
