/**
 * The AWS clients every weft function uses (DynamoDB, SQS, EventBridge, S3) and the engine's ports
 * on them. The clients only the worker's task types call (Lambda, Secrets Manager, SSM) are made in
 * wiring.ts, so the functions that never run those types do not bundle them.
 */
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { EventBridgeClient } from "@aws-sdk/client-eventbridge";
import { S3Client } from "@aws-sdk/client-s3";
import { SQSClient } from "@aws-sdk/client-sqs";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { DynamoStore, documentClient } from "../adapters/dynamo/store.js";
import { EventBridgePublisher } from "../adapters/eventbridge/publisher.js";
import { S3BlobStore } from "../adapters/s3/blobs.js";
import { SqsTaskQueue } from "../adapters/sqs/queue.js";
import { randomIds, systemClock } from "../adapters/system.js";
import type { EnginePorts } from "../ports.js";
import type { AwsEndpoints, WeftConfig } from "./env.js";

export interface AwsClientOptions {
  /**
   * Endpoint for every client (moto, LocalStack), or one per service (DynamoDB Local beside an SQS
   * emulator). A client given none resolves its own as the SDK does: AWS_ENDPOINT_URL_<SERVICE>
   * (AWS_ENDPOINT_URL_DYNAMODB, _SQS, _EVENTBRIDGE, _S3, _LAMBDA), else AWS_ENDPOINT_URL, else real AWS.
   */
  endpoint?: string | ClientEndpoints;
  region?: string;
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  /** Attempts per call, retries included (the SDK's default when unset). */
  maxAttempts?: number;
  /**
   * Instruments each client as it is made: the deployed functions pass Powertools Tracer's
   * `captureAWSv3Client` (functions/common/tracing.ts), so every AWS call is an X-Ray subsegment.
   * Nothing else does: the local runtime and the tests load no X-Ray at all.
   */
  capture?: <C>(client: C) => C;
}

/**
 * AwsEndpoints, and the secret stores' (the `http` task's secret references). Those two have no
 * setting of their own: unless given here (or one URL for all), the SDK resolves theirs
 * (AWS_ENDPOINT_URL_SECRETS_MANAGER, AWS_ENDPOINT_URL_SSM, else AWS_ENDPOINT_URL).
 */
export interface ClientEndpoints extends AwsEndpoints {
  secretsmanager?: string;
  ssm?: string;
}

export interface CoreAwsClients {
  dynamo: DynamoDBClient;
  doc: DynamoDBDocumentClient;
  sqs: SQSClient;
  eventBridge: EventBridgeClient;
  s3: S3Client;
  /** Releases the clients' sockets (the local runtime calls it on stop; Lambda never needs to). */
  destroy(): void;
}

/** The settings every client shares (region, credentials, attempts), with its endpoint, instrumented by `capture`. */
export function clientMaker(
  options: AwsClientOptions,
): <C>(service: keyof ClientEndpoints, make: (config: ClientConfig) => C) => C {
  const shared = {
    ...(options.region === undefined ? {} : { region: options.region }),
    ...(options.credentials === undefined ? {} : { credentials: options.credentials }),
    ...(options.maxAttempts === undefined ? {} : { maxAttempts: options.maxAttempts }),
  };
  const capture = options.capture ?? (<C>(client: C) => client);
  return (service, make) => {
    const endpoint = typeof options.endpoint === "string" ? options.endpoint : options.endpoint?.[service];
    return capture(make(endpoint === undefined ? shared : { ...shared, endpoint }));
  };
}

/** What clientMaker hands each client's constructor. */
export interface ClientConfig {
  region?: string;
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  maxAttempts?: number;
  endpoint?: string;
}

export function createCoreAwsClients(options: AwsClientOptions = {}): CoreAwsClients {
  const make = clientMaker(options);
  // The document client shares the DynamoDB client's middleware, so capturing that one covers both.
  const dynamo = make("dynamodb", (config) => new DynamoDBClient(config));
  const doc = documentClient(dynamo);
  const sqs = make("sqs", (config) => new SQSClient(config));
  const eventBridge = make("eventbridge", (config) => new EventBridgeClient(config));
  // Emulators on an IP address serve buckets by path (there is no bucket.127.0.0.1 host).
  const s3 = make(
    "s3",
    (config) => new S3Client({ ...config, forcePathStyle: config.endpoint !== undefined }),
  );
  return {
    dynamo,
    doc,
    sqs,
    eventBridge,
    s3,
    destroy() {
      doc.destroy();
      dynamo.destroy();
      sqs.destroy();
      eventBridge.destroy();
      s3.destroy();
    },
  };
}

/** The engine's ports on DynamoDB, SQS and EventBridge. */
export function createAwsPorts(
  config: WeftConfig,
  clients: CoreAwsClients = createCoreAwsClients(
    config.endpoint === undefined ? {} : { endpoint: config.endpoint },
  ),
): EnginePorts {
  return {
    store: new DynamoStore(
      clients.doc,
      config.tableName,
      config.retentionDays === undefined ? {} : { retentionDays: config.retentionDays },
    ),
    blobs: new S3BlobStore(clients.s3, config.payloadBucket),
    queue: new SqsTaskQueue(clients.sqs, config.queueUrl),
    events: new EventBridgePublisher(clients.eventBridge, config.eventBusName),
    clock: systemClock,
    ids: randomIds,
  };
}
