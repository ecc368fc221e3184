/** Lambda entry point of the DLQ consumer (SQS event source on the dead-letter queue, ReportBatchItemFailures). */
import { Logger } from "@aws-lambda-powertools/logger";
import type { Context, SQSBatchResponse, SQSEvent } from "aws-lambda";
import { createEngineFromEnv } from "../../shared/config/wiring.js";
import { createDlqHandler, type DlqHandler } from "./app.js";

let app: DlqHandler | undefined;

export const handler = async (event: SQSEvent, context?: Context): Promise<SQSBatchResponse> => {
  if (app === undefined) {
    const logger = new Logger({ serviceName: "weft-dlq" });
    app = createDlqHandler(createEngineFromEnv(process.env, { logger }), { logger });
  }
  return app(event, context);
};
