/** Lambda entry point of the worker (SQS event source with ReportBatchItemFailures). */
import { Logger } from "@aws-lambda-powertools/logger";
import type { Context, SQSBatchResponse, SQSEvent } from "aws-lambda";
import { createEngineFromEnv } from "../../shared/config/wiring.js";
import { createWorkerHandler, type WorkerHandler } from "./app.js";

let app: WorkerHandler | undefined;

export const handler = async (event: SQSEvent, context?: Context): Promise<SQSBatchResponse> => {
  if (app === undefined) {
    const logger = new Logger({ serviceName: "weft-worker" });
    app = createWorkerHandler(createEngineFromEnv(process.env, { logger }), { logger });
  }
  return app(event, context);
};
