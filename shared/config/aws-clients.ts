/**
 * The AWS clients every weft function makes at init (DynamoDB, SQS, EventBridge) and the engine's
 * ports on them. S3, which the functions call only for payloads over the inline threshold, is made
 * in s3-clients.ts, which the functions load on first use; the clients only the worker's task types
 * call (Lambda, Secrets Manager, SSM) in wiring.ts. So a function's init loads neither.
 */
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { EventBridgeClient } from "@aws-sdk/client-eventbridge";
import type { S3Client } from "@aws-sdk/client-s3";
import { SQSClient } from "@aws-sdk/client-sqs";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { DynamoStore, documentClient } from "../adapters/dynamo/store.js";
import { EventBridgePublisher } from "../adapters/eventbridge/publisher.js";
import { SqsTaskQueue } from "../adapters/sqs/queue.js";
import { randomIds, systemClock } from "../adapters/system.js";
import type { BlobStore, EnginePorts } from "../ports.js";
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

/** The clients a function makes at init. */
export interface InitAwsClients {
  dynamo: DynamoDBClient;
  doc: DynamoDBDocumentClient;
  sqs: SQSClient;
  eventBridge: EventBridgeClient;
  /** Releases the clients' sockets (the local runtime calls it on stop; Lambda never needs to). */
  destroy(): void;
}

/** Those and S3 (s3-clients.ts makes them): what the local runtime and the tests use. */
export interface CoreAwsClients extends InitAwsClients {
  s3: S3Client;
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

export function createInitAwsClients(options: AwsClientOptions = {}): InitAwsClients {
  const make = clientMaker(options);
  // The document client shares the DynamoDB client's middleware, so capturing that one covers both.
  const dynamo = make("dynamodb", (config) => new DynamoDBClient(config));
  const doc = documentClient(dynamo);
  const sqs = make("sqs", (config) => new SQSClient(config));
  const eventBridge = make("eventbridge", (config) => new EventBridgeClient(config));
  return {
    dynamo,
    doc,
    sqs,
    eventBridge,
    destroy() {
      doc.destroy();
      dynamo.destroy();
      sqs.destroy();
      eventBridge.destroy();
    },
  };
}

/** The engine's ports on DynamoDB, SQS and EventBridge, with the given blob store. */
export function awsPortsWith(config: WeftConfig, clients: InitAwsClients, blobs: BlobStore): EnginePorts {
  return {
    store: new DynamoStore(
      clients.doc,
      config.tableName,
      config.retentionDays === undefined ? {} : { retentionDays: config.retentionDays },
    ),
    blobs,
    queue: new SqsTaskQueue(clients.sqs, config.queueUrl),
    events: new EventBridgePublisher(clients.eventBridge, config.eventBusName),
    clock: systemClock,
    ids: randomIds,
  };
}
