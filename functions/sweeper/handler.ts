/** Lambda entry point of the sweeper (an EventBridge schedule invokes it every minute). */
import { Logger } from "@aws-lambda-powertools/logger";
import type { Context, ScheduledEvent } from "aws-lambda";
import { createEngineFromEnv } from "../../shared/config/wiring.js";
import type { SweepReport } from "../../shared/engine/sweeper.js";
import { createSweeperHandler, type SweeperHandler } from "./app.js";

let app: SweeperHandler | undefined;

export const handler = async (event?: ScheduledEvent, context?: Context): Promise<SweepReport> => {
  if (app === undefined) {
    const logger = new Logger({ serviceName: "weft-sweeper" });
    app = createSweeperHandler(createEngineFromEnv(process.env, { logger }), { logger });
  }
  return app(event, context);
};
