/**
 * The worker Lambda: takes SQS batches of task messages and hands each to the engine, reporting partial
 * batch failures (ReportBatchItemFailures) so only the failed records come back.
 */
import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import { Logger } from "@aws-lambda-powertools/logger";
import type { Metrics } from "@aws-lambda-powertools/metrics";
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import { publishMetrics } from "../../shared/adapters/metrics-powertools.js";
import { parseTraceparent } from "../../shared/domain/trace.js";
import type { Engine, Invocation } from "../../shared/engine/engine.js";
import { invocationDeadline } from "../../shared/engine/worker-time.js";
import type { TaskMessage } from "../../shared/ports.js";
import { parseTaskMessage, receiveCountOf } from "../common/task-message.js";
import { type FunctionTracing, NO_TRACING } from "../common/tracing.js";

// The task message schema lives in functions/common (the DLQ function parses the same bodies).
export { MalformedTaskMessageError, parseTaskMessage, taskMessageSchema } from "../common/task-message.js";

export type WorkerHandler = (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse>;

export interface WorkerHandlerOptions {
  logger?: Logger;
  /** Powertools Metrics the engine records into (EMF), flushed at the end of every invocation. */
  metrics?: Metrics;
  /** X-Ray (functions/common/tracing.ts): each record a subsegment with its W3C trace id. Default none. */
  tracing?: FunctionTracing;
}

export function createWorkerHandler(engine: Engine, options: WorkerHandlerOptions = {}): WorkerHandler {
  const logger = options.logger ?? new Logger({ serviceName: "weft-worker" });
  const tracing = options.tracing ?? NO_TRACING;

  const processRecord = async (
    record: SQSRecord,
    invocation: { deadline?: number; scope: Invocation },
  ): Promise<void> => {
    const sentAt = Number(record.attributes.SentTimestamp);
    const { deadline, scope } = invocation;
    const delivery = {
      receiveCount: receiveCountOf(record),
      ...(Number.isFinite(sentAt) ? { sentAt } : {}),
      // Bounds every attempt of the invocation, and lets the engine run a ready child in this same
      // invocation while it is expected to fit before it.
      ...(deadline === undefined ? {} : { deadline }),
    };
    let message: TaskMessage;
    try {
      message = parseTaskMessage(record.body);
    } catch (error) {
      // Never retried into success: it fails on every receive until the redrive policy moves it to the DLQ.
      // The body is not logged (it may carry anything); the message id finds it in the DLQ.
      logger.error(
        "malformed task message: failing it so the redrive policy moves it to the DLQ after maxReceiveCount",
        {
          messageId: record.messageId,
          receiveCount: delivery.receiveCount,
          reason: error instanceof Error ? error.message : String(error),
        },
      );
      throw error;
    }
    try {
      const { executionId, nodeId, attempt } = message;
      const traceId = parseTraceparent(message.trace)?.traceId;
      await tracing.span("weft task", traceId, { executionId, nodeId, attempt }, () =>
        scope.handleTask(message, delivery),
      );
    } catch (error) {
      logger.warn("task message failed; it will be delivered again", {
        messageId: record.messageId,
        executionId: message.executionId,
        nodeId: message.nodeId,
        attempt: message.attempt,
        receiveCount: delivery.receiveCount,
        error: error instanceof Error ? error : String(error),
      });
      throw error;
    }
  };

  return async (event, context) => {
    // One processor per invocation: a BatchProcessor keeps the batch's state between register() and
    // response(), and the local runtime runs several invocations of this handler at once.
    const processor = new BatchProcessor(EventType.SQS);
    // No attempt runs past this: the Lambda timeout less the margin the worker keeps for its last
    // writes and the batch response (shared/engine/worker-time.ts states the rule). On the engine's
    // clock, which its deadlines are compared with (the system clock when deployed).
    const deadline =
      context === undefined
        ? undefined
        : invocationDeadline(engine.ports.clock.now(), context.getRemainingTimeInMillis());
    // The records of a batch run at once, in one scope: their arrivals at one wide fan-in share
    // writes, and their task sends share SendMessageBatch calls.
    const invocation = { ...(deadline === undefined ? {} : { deadline }), scope: engine.invocation() };
    try {
      return await processPartialResponse(
        event,
        (record: SQSRecord) => processRecord(record, invocation),
        processor,
        {
          ...(context === undefined ? {} : { context }),
          // Report every failed record instead of throwing when all fail: SQS treats both alike, and the
          // response stays the same shape for the local poller.
          throwOnFullBatchFailure: false,
        },
      );
    } finally {
      publishMetrics(options.metrics);
    }
  };
}
