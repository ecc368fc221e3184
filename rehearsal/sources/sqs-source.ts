/**
 * An SQS event source mapping as Lambda runs it, from the template's AWS::Lambda::EventSourceMapping:
 * pollers long-poll the queue with the function's own role (through its IAM proxy, so the grants
 * the mapping needs are checked and counted), hand each batch (up to BatchSize) to the function as
 * an SQSEvent, delete the records that succeeded and, with ReportBatchItemFailures, leave the
 * failed ones for SQS to deliver again — and to move to the DLQ after maxReceiveCount, by the
 * queue's own redrive policy. A failed or timed-out invocation leaves the whole batch to come back
 * after the visibility timeout.
 *
 * Compression: records reported as failed are made visible again after `failedVisibilitySeconds`
 * (by the rehearsal, not the role) instead of after the queue's visibility timeout; the records of
 * a failed invocation too, while a scenario asks for it (setFailedInvocationVisibility).
 */
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import type { SQSRecord } from "aws-lambda";
import type { InvokeOutcome } from "../lambda/container.js";
import type { FunctionPool } from "../lambda/pool.js";
import { recordsToDelete, toSqsRecord } from "./sqs-records.js";

export interface EventSourceMapping {
  logicalId: string;
  functionLogicalId: string;
  queueArn: string;
  queueUrl: string;
  batchSize: number;
  maximumConcurrency: number | undefined;
  reportBatchItemFailures: boolean;
  enabled: boolean;
}

export interface SqsSourceOptions {
  mapping: EventSourceMapping;
  pool: FunctionPool;
  /** SQS through the function role's proxy: what the mapping does with the role. */
  roleClient: SQSClient;
  /** SQS as the operator: only for the compression of failed records' visibility. */
  adminClient: SQSClient;
  pollers: number;
  failedVisibilitySeconds: number;
  onError: (message: string) => void;
}

export interface SqsSourceStats {
  batches: number;
  records: number;
  deleted: number;
  reportedFailures: number;
  failedInvocations: number;
}

export interface SqsSource {
  readonly mapping: EventSourceMapping;
  readonly stats: SqsSourceStats;
  /**
   * A compression a scenario may ask for: the records of a failed invocation (a crash, a timeout)
   * come back after this many seconds instead of the queue's visibility timeout; undefined resets.
   */
  setFailedInvocationVisibility(seconds: number | undefined): void;
  /** Calls `listener` with the records of every batch handed to the function; returns how to stop. */
  observe(listener: (records: readonly SQSRecord[]) => void): () => void;
  stop(): Promise<void>;
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

export async function startSqsSource(options: SqsSourceOptions): Promise<SqsSource> {
  const { mapping, pool, roleClient, adminClient } = options;
  const stats: SqsSourceStats = {
    batches: 0,
    records: 0,
    deleted: 0,
    reportedFailures: 0,
    failedInvocations: 0,
  };
  // Lambda reads the queue's attributes when the mapping is created (and needs the grant for it).
  await roleClient.send(
    new GetQueueAttributesCommand({
      QueueUrl: mapping.queueUrl,
      AttributeNames: ["QueueArn", "VisibilityTimeout", "RedrivePolicy"],
    }),
  );
  const abort = new AbortController();
  let running = mapping.enabled;

  const deleteRecords = async (records: SQSRecord[]) => {
    for (const batch of chunks(records, 10)) {
      const result = await roleClient.send(
        new DeleteMessageBatchCommand({
          QueueUrl: mapping.queueUrl,
          Entries: batch.map((record, i) => ({ Id: String(i), ReceiptHandle: record.receiptHandle })),
        }),
      );
      stats.deleted += batch.length - (result.Failed?.length ?? 0);
      if (result.Failed?.length)
        options.onError(`${mapping.logicalId}: ${result.Failed.length} record(s) not deleted`);
    }
  };

  let failedInvocationVisibility: number | undefined;
  const observers = new Set<(records: readonly SQSRecord[]) => void>();
  const shortenVisibility = async (records: SQSRecord[], seconds = options.failedVisibilitySeconds) => {
    for (const batch of chunks(records, 10)) {
      await adminClient.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: mapping.queueUrl,
          Entries: batch.map((record, i) => ({
            Id: String(i),
            ReceiptHandle: record.receiptHandle,
            VisibilityTimeout: seconds,
          })),
        }),
      );
    }
  };

  const poll = async () => {
    while (running) {
      let messages: Message[];
      try {
        const received = await roleClient.send(
          new ReceiveMessageCommand({
            QueueUrl: mapping.queueUrl,
            MaxNumberOfMessages: mapping.batchSize,
            WaitTimeSeconds: 20,
            MessageSystemAttributeNames: ["All"],
            MessageAttributeNames: ["All"],
          }),
          { abortSignal: abort.signal },
        );
        messages = received.Messages ?? [];
      } catch (error) {
        if (!running) return;
        options.onError(
          `${mapping.logicalId}: receive failed: ${error instanceof Error ? error.message : String(error)}`,
        );
        await new Promise((resolve) => setTimeout(resolve, 1000));
        continue;
      }
      if (messages.length === 0) continue;
      const records = messages.map((message) => toSqsRecord(message, mapping.queueArn));
      stats.batches++;
      stats.records += records.length;
      for (const observer of observers) observer(records);
      let outcome: InvokeOutcome;
      try {
        outcome = await pool.invoke({ Records: records });
      } catch (error) {
        if (!running) return;
        throw error;
      }
      if (!outcome.ok) {
        stats.failedInvocations++;
        if (failedInvocationVisibility !== undefined) {
          await shortenVisibility(records, failedInvocationVisibility).catch((error: unknown) =>
            options.onError(`${mapping.logicalId}: ${String(error)}`),
          );
        }
        continue;
      }
      const { delete: done, failed } = recordsToDelete(
        records,
        outcome.result,
        mapping.reportBatchItemFailures,
      );
      stats.reportedFailures += failed.length;
      try {
        if (done.length > 0) await deleteRecords(done);
        if (failed.length > 0) await shortenVisibility(failed);
      } catch (error) {
        options.onError(
          `${mapping.logicalId}: after the invocation: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
    }
  };

  const pollers = Array.from({ length: options.pollers }, () =>
    poll().catch((error: unknown) =>
      options.onError(`${mapping.logicalId}: poller stopped: ${String(error)}`),
    ),
  );
  return {
    mapping,
    stats,
    setFailedInvocationVisibility(seconds) {
      failedInvocationVisibility = seconds;
    },
    observe(listener) {
      observers.add(listener);
      return () => observers.delete(listener);
    },
    async stop() {
      running = false;
      abort.abort();
      await Promise.all(pollers);
    },
  };
}
