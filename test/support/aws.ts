/** Helpers for tests that talk to the AWS emulators (moto by default, see test/setup/emulators.ts). */
import { randomBytes } from "node:crypto";
import { DeleteTableCommand } from "@aws-sdk/client-dynamodb";
import { DeleteEventBusCommand } from "@aws-sdk/client-eventbridge";
import { DeleteQueueCommand } from "@aws-sdk/client-sqs";
import { DynamoStore } from "../../shared/adapters/dynamo/store.js";
import { ensureTable } from "../../shared/adapters/dynamo/table.js";
import { EventBridgePublisher, ensureEventBus } from "../../shared/adapters/eventbridge/publisher.js";
import { S3BlobStore } from "../../shared/adapters/s3/blobs.js";
import { ensureBucket } from "../../shared/adapters/s3/bucket.js";
import { SqsQueueConsumer, SqsTaskQueue } from "../../shared/adapters/sqs/queue.js";
import { ensureQueues } from "../../shared/adapters/sqs/queues.js";
import { type AwsClients, createAwsClients } from "../../shared/config/wiring.js";
import type { ServiceEndpoints } from "../../tools/emulators/set.js";

export type { AwsClients } from "../../shared/config/wiring.js";
export type { ServiceEndpoints } from "../../tools/emulators/set.js";

/**
 * Clients for the emulators (`inject("awsEndpoints")`), built by the same function as the deployed
 * ones: us-east-1, static dummy credentials, few retries.
 */
export function awsClients(endpoints: ServiceEndpoints): AwsClients {
  return createAwsClients({
    endpoint: endpoints,
    region: "us-east-1",
    credentials: { accessKeyId: "test", secretAccessKey: "test" },
    maxAttempts: 3,
  });
}

/** `prefix-<random>`: unique per call, so test files running in parallel never share resources. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${randomBytes(4).toString("hex")}`;
}

export interface TestBackend {
  clients: AwsClients;
  names: { table: string; queue: string; deadLetter: string; bus: string; bucket: string };
  queueUrl: string;
  deadLetterUrl: string;
  deadLetterArn: string;
  store: DynamoStore;
  blobs: S3BlobStore;
  queue: SqsTaskQueue;
  consumer: SqsQueueConsumer;
  deadLetterConsumer: SqsQueueConsumer;
  events: EventBridgePublisher;
  /** Deletes everything created here (best effort) and closes the clients. */
  cleanup(): Promise<void>;
}

/** A fresh table, task queue + DLQ and event bus with unique names, and the adapters on them. */
export async function createTestBackend(
  endpoints: ServiceEndpoints,
  options: { prefix?: string; maxReceiveCount?: number; visibilityTimeoutSeconds?: number } = {},
): Promise<TestBackend> {
  const prefix = options.prefix ?? "weft-test";
  const clients = awsClients(endpoints);
  const names = {
    table: uniqueName(`${prefix}-table`),
    queue: uniqueName(`${prefix}-tasks`),
    deadLetter: uniqueName(`${prefix}-dlq`),
    bus: uniqueName(`${prefix}-bus`),
    bucket: uniqueName(`${prefix}-payloads`).toLowerCase(),
  };
  const [, queues] = await Promise.all([
    ensureTable(clients.dynamo, names.table),
    ensureQueues(
      clients.sqs,
      { queue: names.queue, deadLetter: names.deadLetter },
      {
        maxReceiveCount: options.maxReceiveCount,
        visibilityTimeoutSeconds: options.visibilityTimeoutSeconds,
      },
    ),
    ensureEventBus(clients.eventBridge, names.bus),
    ensureBucket(clients.s3, names.bucket),
  ]);
  return {
    clients,
    names,
    ...queues,
    store: new DynamoStore(clients.doc, names.table),
    blobs: new S3BlobStore(clients.s3, names.bucket),
    queue: new SqsTaskQueue(clients.sqs, queues.queueUrl),
    consumer: new SqsQueueConsumer(clients.sqs, queues.queueUrl),
    deadLetterConsumer: new SqsQueueConsumer(clients.sqs, queues.deadLetterUrl),
    events: new EventBridgePublisher(clients.eventBridge, names.bus),
    async cleanup() {
      await Promise.allSettled([
        clients.dynamo.send(new DeleteTableCommand({ TableName: names.table })),
        clients.sqs.send(new DeleteQueueCommand({ QueueUrl: queues.queueUrl })),
        clients.sqs.send(new DeleteQueueCommand({ QueueUrl: queues.deadLetterUrl })),
        clients.eventBridge.send(new DeleteEventBusCommand({ Name: names.bus })),
      ]);
      clients.destroy();
    },
  };
}
