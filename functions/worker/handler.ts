/** Lambda entry point of the worker (SQS event source with ReportBatchItemFailures). */
import type { Context, SQSBatchResponse, SQSEvent } from "aws-lambda";
import { createEngineFromEnv } from "../../shared/config/wiring.js";
import { createWorkerHandler, type WorkerHandler } from "./app.js";

let app: WorkerHandler | undefined;

export const handler = async (event: SQSEvent, context?: Context): Promise<SQSBatchResponse> => {
  app ??= createWorkerHandler(createEngineFromEnv());
  return app(event, context);
};
