/**
 * The DLQ Lambda: consumes the task queue's dead-letter queue. Each record is a task message SQS moved
 * there after maxReceiveCount failed receives; the engine records it (the node fails with that reason,
 * the failure policy runs, and the work is kept for GET /dlq and POST /dlq/redrive). Partial batch
 * failures (ReportBatchItemFailures) bring back only the records the engine could not record.
 */
import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import { Logger } from "@aws-lambda-powertools/logger";
import type { Metrics } from "@aws-lambda-powertools/metrics";
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import { publishMetrics } from "../../shared/adapters/metrics-powertools.js";
import type { Engine } from "../../shared/engine/engine.js";
import type { TaskMessage } from "../../shared/ports.js";
import { parseTaskMessage, receiveCountOf } from "../common/task-message.js";

export type DlqHandler = (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse>;

export interface DlqHandlerOptions {
  logger?: Logger;
  /** Powertools Metrics the engine records into (EMF), flushed at the end of every invocation. */
  metrics?: Metrics;
}

export function createDlqHandler(engine: Engine, options: DlqHandlerOptions = {}): DlqHandler {
  const logger = options.logger ?? new Logger({ serviceName: "weft-dlq" });

  const processRecord = async (record: SQSRecord): Promise<void> => {
    // In the DLQ, ApproximateReceiveCount carries over from the task queue (plus this receive).
    const delivery = { messageId: record.messageId, receiveCount: receiveCountOf(record) };
    let message: TaskMessage;
    try {
      message = parseTaskMessage(record.body);
    } catch (error) {
      // Not a task message: there is no node to fail and nothing a retry would change, so it is
      // acknowledged. The body is not logged (it may carry anything).
      logger.error("unparseable dead-lettered message acknowledged and dropped", {
        ...delivery,
        reason: error instanceof Error ? error.message : String(error),
      });
      return;
    }
    try {
      await engine.recordDeadLetter(message, delivery);
    } catch (error) {
      logger.warn("dead-lettered task could not be recorded; it will be delivered again", {
        ...delivery,
        executionId: message.executionId,
        nodeId: message.nodeId,
        attempt: message.attempt,
        error: error instanceof Error ? error : String(error),
      });
      throw error;
    }
    logger.info("dead-lettered task recorded", {
      ...delivery,
      executionId: message.executionId,
      nodeId: message.nodeId,
      attempt: message.attempt,
    });
  };

  return async (event, context) => {
    // One processor per invocation (see the worker): the local runtime may run invocations at once.
    const processor = new BatchProcessor(EventType.SQS);
    try {
      return await processPartialResponse(event, processRecord, processor, {
        ...(context === undefined ? {} : { context }),
        throwOnFullBatchFailure: false,
      });
    } finally {
      publishMetrics(options.metrics);
    }
  };
}
