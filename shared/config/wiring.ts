/**
 * Wiring: builds the AWS SDK clients, the AWS-backed ports and the engine from configuration.
 * No engine logic lives here.
 */

import { Logger } from "@aws-lambda-powertools/logger";
import type { Metrics } from "@aws-lambda-powertools/metrics";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { EventBridgeClient } from "@aws-sdk/client-eventbridge";
import { LambdaClient } from "@aws-sdk/client-lambda";
import { S3Client } from "@aws-sdk/client-s3";
import { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { SQSClient } from "@aws-sdk/client-sqs";
import { SSMClient } from "@aws-sdk/client-ssm";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { DynamoStore, documentClient } from "../adapters/dynamo/store.js";
import { EventBridgePublisher } from "../adapters/eventbridge/publisher.js";
import { sharedIsolatedExpressions } from "../adapters/expressions/isolated.js";
import { PowertoolsMetricsPort } from "../adapters/metrics-powertools.js";
import { S3BlobStore } from "../adapters/s3/blobs.js";
import { SqsTaskQueue } from "../adapters/sqs/queue.js";
import { randomIds, systemClock } from "../adapters/system.js";
import type { EngineLogger } from "../engine/context.js";
import { Engine, type EngineOptions } from "../engine/engine.js";
import type { EnginePorts } from "../ports.js";
import { EventBridgeSender } from "../tasks/emit-eventbridge.js";
import { AwsLambdaInvoker } from "../tasks/lambda-aws.js";
import { collectTaskTypes, createFullTaskRegistry, type TaskModule } from "../tasks/loader.js";
import { AwsSecretStore } from "../tasks/secrets-aws.js";
import type { TaskRegistry } from "../tasks/task-type.js";
import { httpEgressPolicy } from "./egress.js";
import { type AwsEndpoints, type EngineSettings, loadConfig, type WeftConfig } from "./env.js";

export type { AwsEndpoints } from "./env.js";

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

export interface AwsClients {
  dynamo: DynamoDBClient;
  doc: DynamoDBDocumentClient;
  sqs: SQSClient;
  eventBridge: EventBridgeClient;
  s3: S3Client;
  /** Invokes the user's functions for the `lambda` task type. */
  lambda: LambdaClient;
  /** Read the `http` task's secret references: Secrets Manager, and SSM for `ssm:` names. */
  secretsManager: SecretsManagerClient;
  ssm: SSMClient;
  /** Releases the clients' sockets (the local runtime calls it on stop; Lambda never needs to). */
  destroy(): void;
}

/**
 * The AWS clients of weft, with every setting they need, in one place: the deployed functions, the
 * local runtime and the tests all build theirs here.
 */
export function createAwsClients(options: AwsClientOptions = {}): AwsClients {
  const config = {
    ...(options.region === undefined ? {} : { region: options.region }),
    ...(options.credentials === undefined ? {} : { credentials: options.credentials }),
    ...(options.maxAttempts === undefined ? {} : { maxAttempts: options.maxAttempts }),
  };
  const endpointOf = (service: keyof ClientEndpoints) => {
    const endpoint = typeof options.endpoint === "string" ? options.endpoint : options.endpoint?.[service];
    return endpoint === undefined ? {} : { endpoint };
  };
  const capture = options.capture ?? (<C>(client: C) => client);
  // The document client shares the DynamoDB client's middleware, so capturing that one covers both.
  const dynamo = capture(new DynamoDBClient({ ...config, ...endpointOf("dynamodb") }));
  const doc = documentClient(dynamo);
  const sqs = capture(new SQSClient({ ...config, ...endpointOf("sqs") }));
  const eventBridge = capture(new EventBridgeClient({ ...config, ...endpointOf("eventbridge") }));
  const s3Endpoint = endpointOf("s3");
  // Emulators on an IP address serve buckets by path (there is no bucket.127.0.0.1 host).
  const s3 = capture(
    new S3Client({ ...config, ...s3Endpoint, forcePathStyle: s3Endpoint.endpoint !== undefined }),
  );
  const lambda = capture(new LambdaClient({ ...config, ...endpointOf("lambda") }));
  const secretsManager = capture(new SecretsManagerClient({ ...config, ...endpointOf("secretsmanager") }));
  const ssm = capture(new SSMClient({ ...config, ...endpointOf("ssm") }));
  return {
    dynamo,
    doc,
    sqs,
    eventBridge,
    s3,
    lambda,
    secretsManager,
    ssm,
    destroy() {
      doc.destroy();
      dynamo.destroy();
      sqs.destroy();
      eventBridge.destroy();
      s3.destroy();
      lambda.destroy();
      secretsManager.destroy();
      ssm.destroy();
    },
  };
}

/** The engine's ports on DynamoDB, SQS and EventBridge. */
export function createAwsPorts(
  config: WeftConfig,
  clients: AwsClients = createAwsClients(config.endpoint === undefined ? {} : { endpoint: config.endpoint }),
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

/** The engine's logger on a Powertools Logger, so the engine's warnings reach CloudWatch as structured logs. */
export function powertoolsEngineLogger(logger: Logger): EngineLogger {
  return {
    info: (message, fields) => (fields === undefined ? logger.info(message) : logger.info(message, fields)),
    warn: (message, fields) => (fields === undefined ? logger.warn(message) : logger.warn(message, fields)),
    error: (message, fields) =>
      fields === undefined ? logger.error(message) : logger.error(message, fields),
  };
}

/** The engine options a configuration asks for (lease, attempts, worker timeout, sweeper timing), with the given logger. */
export function engineOptionsFromConfig(config: EngineSettings, logger?: Logger): EngineOptions {
  return {
    leaseSeconds: config.leaseSeconds,
    defaultMaxAttempts: config.defaultMaxAttempts,
    ...(config.workerTimeoutSeconds === undefined
      ? {}
      : { workerTimeoutSeconds: config.workerTimeoutSeconds }),
    sweep: config.sweep,
    ...(logger === undefined ? {} : { logger: powertoolsEngineLogger(logger) }),
  };
}

/**
 * The engine as a deployed function builds it: configuration from the environment, AWS ports, built-in
 * tasks, and the function's Powertools logger for the engine's own logs (a "weft-engine" one by default).
 * `capture` instruments the AWS clients (AwsClientOptions.capture: the functions' X-Ray tracer).
 */
export function createEngineFromEnv(
  env: Record<string, string | undefined> = process.env,
  options: {
    logger?: Logger;
    capture?: AwsClientOptions["capture"];
    /** The function's Powertools Metrics (EMF), which the engine records into; the function flushes it. */
    metrics?: Metrics;
    /** The custom task modules bundled into the function (the entry the construct generates imports them). */
    taskModules?: readonly TaskModule[];
  } = {},
): Engine {
  const config = loadConfig(env);
  const logger = options.logger ?? new Logger({ serviceName: "weft-engine" });
  const clients = createAwsClients({
    ...(config.endpoint === undefined ? {} : { endpoint: config.endpoint }),
    ...(options.capture === undefined ? {} : { capture: options.capture }),
  });
  const ports = { ...createAwsPorts(config, clients), expressions: sharedIsolatedExpressions() };
  return new Engine(
    options.metrics === undefined
      ? ports
      : { ...ports, metrics: new PowertoolsMetricsPort(options.metrics, config.metricLimits) },
    createDeployedTaskRegistry(config, clients, options.taskModules),
    engineOptionsFromConfig(config, logger),
  );
}

/**
 * Every task type a deployed function knows: the built-ins, `http`, `lambda` (invoking the user's
 * functions), `emit` (to the lifecycle bus or a named one), and the custom task types of the modules
 * bundled into it (the construct's `tasks` folder). The api function needs them too: params are
 * checked at submit.
 */
export function createDeployedTaskRegistry(
  config: WeftConfig,
  clients: AwsClients,
  taskModules: readonly TaskModule[] = [],
): TaskRegistry {
  return createFullTaskRegistry({
    customTasks: collectTaskTypes(taskModules),
    lambda: new AwsLambdaInvoker(clients.lambda),
    events: new EventBridgeSender(clients.eventBridge),
    lifecycleBusName: config.eventBusName,
    // The api (registrations) and the worker (connections) apply the same WEFT_HTTP_ALLOW.
    http: {
      egress: httpEgressPolicy(config.httpAllow, "deployed"),
      secrets: new AwsSecretStore(clients.secretsManager, clients.ssm),
    },
  });
}
