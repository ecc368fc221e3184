/** The TaskQueue and QueueConsumer ports on an SQS standard queue. */
import {
  ChangeMessageVisibilityCommand,
  DeleteMessageBatchCommand,
  type DeleteMessageBatchRequestEntry,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type SendMessageBatchRequestEntry,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import { MAX_DELAY_SECONDS } from "../../domain/timers.js";
import type { QueueConsumer, ReceivedMessage, TaskMessage, TaskQueue } from "../../ports.js";

/** SQS limits: 10 entries per batch call, DelaySeconds ≤ 900, 10 messages per receive. */
const BATCH_SIZE = 10;
const MAX_RECEIVE = 10;
const MAX_WAIT_SECONDS = 20;

function chunks<T>(items: readonly T[], size: number): T[][] {
  const result: T[][] = [];
  for (let i = 0; i < items.length; i += size) result.push(items.slice(i, i + size));
  return result;
}

export class SqsTaskQueue implements TaskQueue {
  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async send(messages: readonly TaskMessage[], options: { delaySeconds?: number } = {}): Promise<void> {
    const delay = Math.min(MAX_DELAY_SECONDS, Math.max(0, Math.ceil(options.delaySeconds ?? 0)));
    await Promise.all(
      chunks(messages, BATCH_SIZE).map((chunk) =>
        this.sendBatch(
          chunk.map((message, i) => ({
            Id: String(i),
            MessageBody: JSON.stringify({
              executionId: message.executionId,
              nodeId: message.nodeId,
              attempt: message.attempt,
              ...(message.deps !== undefined ? { deps: message.deps } : {}),
              ...(message.trace !== undefined ? { trace: message.trace } : {}),
              ...(message.lease !== undefined ? { lease: message.lease } : {}),
              ...(message.check !== undefined ? { check: message.check } : {}),
              ...(message.hops !== undefined ? { hops: message.hops } : {}),
            } satisfies TaskMessage),
            DelaySeconds: delay > 0 ? delay : undefined,
          })),
        ),
      ),
    );
  }

  /** Sends one batch; entries that failed are retried once, then the call throws. */
  private async sendBatch(entries: SendMessageBatchRequestEntry[]): Promise<void> {
    let pending = entries;
    for (let attempt = 0; attempt < 2; attempt++) {
      const result = await this.client.send(
        new SendMessageBatchCommand({ QueueUrl: this.queueUrl, Entries: pending }),
      );
      const failed = new Set((result.Failed ?? []).map((entry) => entry.Id));
      if (failed.size === 0) return;
      const failures = result.Failed ?? [];
      pending = pending.filter((entry) => failed.has(entry.Id));
      if (attempt === 1) {
        const detail = failures.map((f) => `${f.Id}: ${f.Code ?? "?"} ${f.Message ?? ""}`).join("; ");
        throw new Error(`SQS SendMessageBatch failed for ${pending.length} message(s): ${detail}`);
      }
    }
  }
}

export class SqsQueueConsumer implements QueueConsumer {
  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async receive(options: {
    maxMessages: number;
    waitSeconds: number;
    visibilityTimeoutSeconds: number;
  }): Promise<ReceivedMessage[]> {
    const result = await this.client.send(
      new ReceiveMessageCommand({
        QueueUrl: this.queueUrl,
        MaxNumberOfMessages: Math.min(MAX_RECEIVE, Math.max(1, Math.floor(options.maxMessages))),
        WaitTimeSeconds: Math.min(MAX_WAIT_SECONDS, Math.max(0, Math.floor(options.waitSeconds))),
        VisibilityTimeout: Math.max(0, Math.floor(options.visibilityTimeoutSeconds)),
        MessageSystemAttributeNames: ["ApproximateReceiveCount", "SentTimestamp"],
      }),
    );
    return (result.Messages ?? []).map((message) => ({
      messageId: message.MessageId ?? "",
      receiptHandle: message.ReceiptHandle ?? "",
      body: message.Body ?? "",
      receiveCount: Number(message.Attributes?.ApproximateReceiveCount ?? 1),
      sentAt: Number(message.Attributes?.SentTimestamp ?? 0),
    }));
  }

  async delete(receiptHandles: readonly string[]): Promise<void> {
    await Promise.all(
      chunks(receiptHandles, BATCH_SIZE).map((chunk) =>
        this.deleteBatch(chunk.map((handle, i) => ({ Id: String(i), ReceiptHandle: handle }))),
      ),
    );
  }

  async changeVisibility(receiptHandle: string, seconds: number): Promise<void> {
    await this.client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: this.queueUrl,
        ReceiptHandle: receiptHandle,
        VisibilityTimeout: Math.max(0, Math.floor(seconds)),
      }),
    );
  }

  /** Deletes one batch; entries that failed are retried once, then the call throws. */
  private async deleteBatch(entries: DeleteMessageBatchRequestEntry[]): Promise<void> {
    let pending = entries;
    for (let attempt = 0; attempt < 2; attempt++) {
      const result = await this.client.send(
        new DeleteMessageBatchCommand({ QueueUrl: this.queueUrl, Entries: pending }),
      );
      const failures = result.Failed ?? [];
      if (failures.length === 0) return;
      const failed = new Set(failures.map((entry) => entry.Id));
      pending = pending.filter((entry) => failed.has(entry.Id));
      if (attempt === 1) {
        const detail = failures.map((f) => `${f.Id}: ${f.Code ?? "?"} ${f.Message ?? ""}`).join("; ");
        throw new Error(`SQS DeleteMessageBatch failed for ${pending.length} message(s): ${detail}`);
      }
    }
  }
}
