/** Helpers for tests that talk to the AWS emulators (moto by default, see test/setup/emulators.ts). */
import { randomBytes } from "node:crypto";
import { DeleteTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DeleteEventBusCommand, EventBridgeClient } from "@aws-sdk/client-eventbridge";
import { DeleteQueueCommand, SQSClient } from "@aws-sdk/client-sqs";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { DynamoStore, documentClient } from "../../shared/adapters/dynamo/store.js";
import { ensureTable } from "../../shared/adapters/dynamo/table.js";
import { EventBridgePublisher, ensureEventBus } from "../../shared/adapters/eventbridge/publisher.js";
import { SqsQueueConsumer, SqsTaskQueue } from "../../shared/adapters/sqs/queue.js";
import { ensureQueues } from "../../shared/adapters/sqs/queues.js";
import type { ServiceEndpoints } from "../../tools/emulators/set.js";

export type { ServiceEndpoints } from "../../tools/emulators/set.js";

export interface AwsClients {
  dynamo: DynamoDBClient;
  doc: DynamoDBDocumentClient;
  sqs: SQSClient;
  events: EventBridgeClient;
  destroy(): void;
}

/** Clients for the emulators (`inject("awsEndpoints")`): us-east-1, static dummy credentials, few retries. */
export function awsClients(endpoints: ServiceEndpoints): AwsClients {
  const config = {
    region: "us-east-1",
    credentials: { accessKeyId: "test", secretAccessKey: "test" },
    maxAttempts: 3,
  };
  const dynamo = new DynamoDBClient({ ...config, endpoint: endpoints.dynamodb });
  const sqs = new SQSClient({ ...config, endpoint: endpoints.sqs });
  const events = new EventBridgeClient({ ...config, endpoint: endpoints.eventbridge });
  return {
    dynamo,
    doc: documentClient(dynamo),
    sqs,
    events,
    destroy() {
      dynamo.destroy();
      sqs.destroy();
      events.destroy();
    },
  };
}

/** `prefix-<random>`: unique per call, so test files running in parallel never share resources. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${randomBytes(4).toString("hex")}`;
}

export interface TestBackend {
  clients: AwsClients;
  names: { table: string; queue: string; deadLetter: string; bus: string };
  queueUrl: string;
  deadLetterUrl: string;
  deadLetterArn: string;
  store: DynamoStore;
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
    ensureEventBus(clients.events, names.bus),
  ]);
  return {
    clients,
    names,
    ...queues,
    store: new DynamoStore(clients.doc, names.table),
    queue: new SqsTaskQueue(clients.sqs, queues.queueUrl),
    consumer: new SqsQueueConsumer(clients.sqs, queues.queueUrl),
    deadLetterConsumer: new SqsQueueConsumer(clients.sqs, queues.deadLetterUrl),
    events: new EventBridgePublisher(clients.events, names.bus),
    async cleanup() {
      await Promise.allSettled([
        clients.dynamo.send(new DeleteTableCommand({ TableName: names.table })),
        clients.sqs.send(new DeleteQueueCommand({ QueueUrl: queues.queueUrl })),
        clients.sqs.send(new DeleteQueueCommand({ QueueUrl: queues.deadLetterUrl })),
        clients.events.send(new DeleteEventBusCommand({ Name: names.bus })),
      ]);
      clients.destroy();
    },
  };
}
