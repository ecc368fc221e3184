/**
 * The local runtime: plays API Gateway, EventBridge's schedule and the Lambda service on one machine. It
 * builds the ports (embedded in-memory, or DynamoDB/SQS/EventBridge at an endpoint or in real AWS), the
 * engine, the same handlers the Lambdas run (api, worker, sweeper, dlq), an HTTP server feeding the api
 * handler API Gateway v2 events, a poller feeding the worker handler SQS batches from the task queue, a
 * second poller feeding the dlq handler batches from the dead-letter queue, and a timer invoking the
 * sweeper handler with scheduled events. It never exits the process: callers (main.ts, tests) stop it.
 */

import { randomUUID } from "node:crypto";
import { Logger } from "@aws-lambda-powertools/logger";
import type { ScheduledEvent } from "aws-lambda";
import { CONSOLE_DIST } from "../console/build.js";
import { createApiHandler } from "../functions/api/app.js";
import { createDlqHandler } from "../functions/dlq/app.js";
import { createSweeperHandler } from "../functions/sweeper/app.js";
import { createWorkerHandler } from "../functions/worker/app.js";
import { ensureTable } from "../shared/adapters/dynamo/table.js";
import { ensureEventBus } from "../shared/adapters/eventbridge/publisher.js";
import { sharedIsolatedExpressions } from "../shared/adapters/expressions/isolated.js";
import { MemoryBlobStore } from "../shared/adapters/memory/blobs.js";
import { MemoryEventPublisher } from "../shared/adapters/memory/events.js";
import { MemoryQueue } from "../shared/adapters/memory/queue.js";
import { MemoryStore } from "../shared/adapters/memory/store.js";
import { ensureBucket } from "../shared/adapters/s3/bucket.js";
import { SqsQueueConsumer } from "../shared/adapters/sqs/queue.js";
import { ensureQueues } from "../shared/adapters/sqs/queues.js";
import { randomIds, systemClock } from "../shared/adapters/system.js";
import { TASK_MAX_RECEIVE_COUNT } from "../shared/config/delivery.js";
import { localEgressPolicy } from "../shared/config/egress.js";
import {
  AWS_SERVICES,
  type AwsEndpoints,
  endpointsFromEnv,
  loadConfig,
  loadEngineSettings,
  loadMetricLimits,
} from "../shared/config/env.js";
import {
  type AwsClientOptions,
  type AwsClients,
  type ClientEndpoints,
  createAwsClients,
  createAwsPorts,
  engineOptionsFromConfig,
  powertoolsEngineLogger,
} from "../shared/config/wiring.js";
import { Engine, type EngineOptions } from "../shared/engine/engine.js";
import type { SweepReport } from "../shared/engine/sweeper.js";
import { checkWorkerTimeout, DEFAULT_WORKER_TIMEOUT_SECONDS } from "../shared/engine/worker-time.js";
import type { EnginePorts, QueueConsumer } from "../shared/ports.js";
import { type EventSender, MemoryEventSender } from "../shared/tasks/emit.js";
import { EventBridgeSender } from "../shared/tasks/emit-eventbridge.js";
import { LocalModuleInvoker } from "../shared/tasks/lambda-local.js";
import { buildTaskRegistry, type TaskRegistryOptions } from "../shared/tasks/loader.js";
import { chainSecretStores, type SecretStore } from "../shared/tasks/secrets.js";
import { AwsSecretStore } from "../shared/tasks/secrets-aws.js";
import type { TaskRegistry } from "../shared/tasks/task-type.js";
import { startHttpServer } from "./http-server.js";
import { createLambdaContext } from "./lambda-context.js";
import { createLocalMetrics } from "./metrics.js";
import { DEFAULT_QUEUE_ARN, startPoller } from "./poller.js";
import { watchTaskFolder } from "./task-reload.js";
import { type LocalTimer, startTimers } from "./timers.js";

export type LocalBackend = "memory" | "aws";

export interface LocalResourceNames {
  table: string;
  queue: string;
  deadLetter: string;
  eventBus: string;
  payloadBucket: string;
}

export interface LocalRuntimeOptions {
  backend: LocalBackend;
  /** HTTP port; 0 picks any free port. Default 3000. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Worker invocations running at once. Default 4. */
  concurrency?: number;
  /** Records per worker invocation (1–10). Default 10. */
  batchSize?: number;
  /** Visibility timeout the poller sets on receive (how long a failed record stays hidden). Default 30. */
  visibilityTimeoutSeconds?: number;
  /** Long-poll wait of each receive. Default 1. */
  waitSeconds?: number;
  /** Receives before a message moves to the DLQ. Default TASK_MAX_RECEIVE_COUNT (5), as deployed. */
  maxReceiveCount?: number;
  /** Lease length given to the engine. Default WEFT_LEASE_SECONDS or 60. */
  leaseSeconds?: number;
  /**
   * The worker function's timeout, as deployed: each worker invocation's Lambda context reports it,
   * and the engine is told it (EngineOptions.workerTimeoutSeconds), so attempts are cut and
   * registrations refused exactly as on AWS. Default `engineOptions.workerTimeoutSeconds`, else
   * WEFT_WORKER_TIMEOUT_SECONDS, else 300 (the deployed default); this option wins over both.
   */
  workerTimeoutSeconds?: number;
  /**
   * Engine options, merged over what the environment sets (shared/config/settings.ts: lease, default
   * attempts, worker timeout, WEFT_SWEEP_*_SECONDS; `sweep` is merged field by field). The default
   * logger is a Powertools "weft-engine" one.
   */
  engineOptions?: Partial<EngineOptions>;
  /**
   * Decorates the ports before the engine is built (fault injection in tests, call counting in the
   * benchmark). The engine, the timers and `LocalRuntime.ports` see the result; the pollers still read
   * the queues through the undecorated consumers.
   */
  wrapPorts?: (ports: EnginePorts) => EnginePorts;
  /** Run the sweeper handler on a timer, as the EventBridge schedule does. Default true. */
  sweep?: boolean;
  /** How often the sweeper runs. Default 60 000 ms (the schedule's one minute). */
  sweepIntervalMs?: number;
  /** Task types; default the built-ins, `http`, `lambda`, `emit`, and what `taskOptions` adds. */
  tasks?: TaskRegistry;
  /**
   * Custom task folder, local Lambda modules and the `http` task's options (from weft.config.json:
   * projectTaskOptions); ignored when `tasks` is given. Without `lambda`, no function is mapped: a
   * `lambda` node fails saying to map its function in weft.config.json. Without `http.egress`, the
   * local policy of `env` (WEFT_HTTP_ALLOW, else loopback allowed); secret references are read from
   * `http.secrets` first, then, with the aws backend, from Secrets Manager / SSM at the endpoint.
   */
  taskOptions?: Omit<TaskRegistryOptions, "events" | "lifecycleBusName">;
  /** Further periodic jobs, beside the sweeper. */
  timers?: readonly LocalTimer[];
  /**
   * The web console's built files, served at `/` and every other path that is not an API route.
   * Default console/dist (`npm run build:console`; served once it exists); false serves none.
   */
  consoleDir?: string | false;
  /**
   * aws backend: endpoint for every client, or one per service (`{ dynamodb, sqs, eventbridge }`). A
   * service without one here uses AWS_ENDPOINT_URL_<SERVICE> (_DYNAMODB, _SQS, _EVENTBRIDGE), else
   * AWS_ENDPOINT_URL, as the SDK does; none of them set = real AWS.
   */
  endpoint?: string | ClientEndpoints;
  /** aws backend: region; default AWS_REGION / AWS_DEFAULT_REGION, or us-east-1 with an endpoint. */
  region?: string;
  /** aws backend: credentials; with an endpoint for every service and none in the environment, dummy ones are used. */
  credentials?: AwsClientOptions["credentials"];
  /** aws backend: resource names (created when missing); default WEFT_TABLE_NAME/… or weft-local*. */
  names?: Partial<LocalResourceNames>;
  /** Where defaults are read from. Default process.env. */
  env?: Record<string, string | undefined>;
  /** Loggers of the handlers (default: Powertools loggers of their own). */
  apiLogger?: Logger;
  workerLogger?: Logger;
  sweeperLogger?: Logger;
  dlqLogger?: Logger;
  /** Errors of the runtime's own machinery (HTTP, poller, timers). Default console.error. */
  onError?: (error: unknown, where: string) => void;
  /**
   * Import `taskOptions.customTasksDir` afresh whenever a file in it changes (`weft dev`), and say
   * so: the task types now registered, or why the folder did not load (the old ones stay).
   */
  reloadTasks?: {
    onReloaded: (types: readonly string[]) => void;
    onFailed: (error: unknown) => void;
  };
}

export interface LocalRuntime {
  /** Base URL of the API, e.g. http://127.0.0.1:3000 */
  url: string;
  port: number;
  backend: LocalBackend;
  engine: Engine;
  ports: EnginePorts;
  /**
   * The task queue and its dead-letter queue as consumers. The runtime's own pollers read both (the
   * DLQ one feeds the dlq handler), so a test reading them competes with those pollers.
   */
  taskConsumer: QueueConsumer;
  deadLetterConsumer: QueueConsumer;
  /** Runs one sweep now through the sweeper handler (as a scheduled invocation would) and returns its report. */
  sweep(): Promise<SweepReport>;
  /** aws backend: the resources in use. */
  resources?: {
    tableName: string;
    queueUrl: string;
    deadLetterUrl: string;
    deadLetterArn: string;
    eventBusName: string;
    payloadBucket: string;
    /** The endpoint when every service uses the same one. */
    endpoint?: string;
    /** The endpoint of each service that has one (absent = real AWS). */
    endpoints?: AwsEndpoints;
    region?: string;
  };
  /** Stops the HTTP server, the pollers (waiting for in-flight invocations) and the timers. Idempotent. */
  stop(): Promise<void>;
}

const secretsOption = (secrets: SecretStore | undefined) => (secrets === undefined ? {} : { secrets });

/** EventBridge's schedule of the sweeper: every minute. */
export const DEFAULT_SWEEP_INTERVAL_MS = 60_000;

/** The event an EventBridge schedule rule hands the sweeper function. */
function scheduledEvent(region = "local"): ScheduledEvent {
  return {
    version: "0",
    id: randomUUID(),
    "detail-type": "Scheduled Event",
    source: "aws.events",
    account: "000000000000",
    time: new Date().toISOString(),
    region,
    resources: [`arn:aws:events:${region}:000000000000:rule/weft-local-sweeper`],
    detail: {},
  };
}

export const DEFAULT_LOCAL_NAMES: LocalResourceNames = {
  table: "weft-local",
  queue: "weft-local-tasks",
  deadLetter: "weft-local-dlq",
  eventBus: "weft-local-events",
  payloadBucket: "weft-local-payloads",
};

interface Backend {
  ports: EnginePorts;
  taskConsumer: QueueConsumer;
  deadLetterConsumer: QueueConsumer;
  queueArn: string;
  deadLetterArn: string;
  resources?: LocalRuntime["resources"];
  /** Where the `emit` task type puts events (the lifecycle bus unless a node names another). */
  eventSender: EventSender;
  eventBusName: string;
  /** aws backend: Secrets Manager and SSM, for the `http` task's secret references. */
  secrets?: SecretStore;
  /** The in-memory blob store, whose presigned requests the HTTP server answers. */
  memoryBlobs?: MemoryBlobStore;
  close(): void;
}

function memoryBackend(maxReceiveCount: number): Backend {
  const deadLetter = new MemoryQueue({ clock: systemClock });
  const queue = new MemoryQueue({ clock: systemClock, maxReceiveCount, deadLetter });
  const blobs = new MemoryBlobStore();
  return {
    memoryBlobs: blobs,
    ports: {
      store: new MemoryStore(),
      blobs,
      queue,
      events: new MemoryEventPublisher(),
      clock: systemClock,
      ids: randomIds,
    },
    taskConsumer: queue,
    deadLetterConsumer: deadLetter,
    queueArn: DEFAULT_QUEUE_ARN,
    deadLetterArn: DEFAULT_QUEUE_ARN.replace(/:[^:]+$/, `:${DEFAULT_LOCAL_NAMES.deadLetter}`),
    eventSender: new MemoryEventSender(),
    eventBusName: DEFAULT_LOCAL_NAMES.eventBus,
    close() {},
  };
}

/**
 * The endpoint of each service: the option (one URL, or that service's), else AWS_ENDPOINT_URL_<SERVICE>,
 * else AWS_ENDPOINT_URL (the SDK's own order, read from `env` so tests can pass their own); services
 * left out have none (real AWS).
 */
function resolveEndpoints(
  option: string | AwsEndpoints | undefined,
  env: Record<string, string | undefined>,
): AwsEndpoints {
  const fromEnv = endpointsFromEnv(env);
  const resolved: AwsEndpoints = {};
  for (const service of AWS_SERVICES) {
    const endpoint =
      (typeof option === "string" ? option : option?.[service]) ??
      (typeof fromEnv === "string" ? fromEnv : fromEnv?.[service]);
    if (endpoint !== undefined && endpoint !== "") resolved[service] = endpoint;
  }
  return resolved;
}

async function awsBackend(
  options: LocalRuntimeOptions,
  env: Record<string, string | undefined>,
  maxReceiveCount: number,
  visibilityTimeoutSeconds: number,
  leaseSeconds: number,
): Promise<Backend> {
  const nonEmpty = (value: string | undefined) => (value === undefined || value === "" ? undefined : value);
  const endpoints = resolveEndpoints(options.endpoint, env);
  const anyEndpoint = Object.keys(endpoints).length > 0;
  const everyEndpoint = Object.keys(endpoints).length === AWS_SERVICES.length;
  const region =
    options.region ??
    nonEmpty(env.AWS_REGION) ??
    nonEmpty(env.AWS_DEFAULT_REGION) ??
    (anyEndpoint ? "us-east-1" : undefined);
  const hasEnvCredentials =
    nonEmpty(env.AWS_ACCESS_KEY_ID) !== undefined || nonEmpty(env.AWS_PROFILE) !== undefined;
  const credentials =
    options.credentials ??
    (everyEndpoint && !hasEnvCredentials ? { accessKeyId: "test", secretAccessKey: "test" } : undefined);
  const single =
    everyEndpoint && new Set(Object.values(endpoints)).size === 1 ? endpoints.dynamodb : undefined;
  const names: LocalResourceNames = {
    table: options.names?.table ?? nonEmpty(env.WEFT_TABLE_NAME) ?? DEFAULT_LOCAL_NAMES.table,
    queue: options.names?.queue ?? nonEmpty(env.WEFT_QUEUE_NAME) ?? DEFAULT_LOCAL_NAMES.queue,
    deadLetter: options.names?.deadLetter ?? nonEmpty(env.WEFT_DLQ_NAME) ?? DEFAULT_LOCAL_NAMES.deadLetter,
    eventBus: options.names?.eventBus ?? nonEmpty(env.WEFT_EVENT_BUS_NAME) ?? DEFAULT_LOCAL_NAMES.eventBus,
    payloadBucket:
      options.names?.payloadBucket ?? nonEmpty(env.WEFT_PAYLOAD_BUCKET) ?? DEFAULT_LOCAL_NAMES.payloadBucket,
  };

  // Secrets Manager and SSM (the http task's secret references): the option's endpoint for them, else
  // the one every other service shares (moto, LocalStack); else the SDK resolves theirs.
  const secretEndpoint = (service: "secretsmanager" | "ssm") =>
    typeof options.endpoint === "string" ? options.endpoint : (options.endpoint?.[service] ?? single);
  const secretEndpoints = Object.fromEntries(
    (["secretsmanager", "ssm"] as const).flatMap((service) => {
      const endpoint = secretEndpoint(service);
      return endpoint === undefined ? [] : [[service, endpoint]];
    }),
  );
  const clients: AwsClients = createAwsClients({
    ...(anyEndpoint ? { endpoint: { ...endpoints, ...secretEndpoints } } : {}),
    ...(region === undefined ? {} : { region }),
    ...(credentials === undefined ? {} : { credentials }),
  });
  try {
    const [, queues] = await Promise.all([
      ensureTable(clients.dynamo, names.table),
      ensureQueues(
        clients.sqs,
        { queue: names.queue, deadLetter: names.deadLetter },
        { maxReceiveCount, visibilityTimeoutSeconds },
      ),
      ensureEventBus(clients.eventBridge, names.eventBus),
      ensureBucket(clients.s3, names.payloadBucket),
    ]);
    const config = loadConfig({
      WEFT_TABLE_NAME: names.table,
      WEFT_QUEUE_URL: queues.queueUrl,
      WEFT_EVENT_BUS_NAME: names.eventBus,
      WEFT_PAYLOAD_BUCKET: names.payloadBucket,
      WEFT_LEASE_SECONDS: String(leaseSeconds),
      AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamodb,
      AWS_ENDPOINT_URL_SQS: endpoints.sqs,
      AWS_ENDPOINT_URL_EVENTBRIDGE: endpoints.eventbridge,
      AWS_ENDPOINT_URL_S3: endpoints.s3,
    });
    return {
      ports: createAwsPorts(config, clients),
      taskConsumer: new SqsQueueConsumer(clients.sqs, queues.queueUrl),
      deadLetterConsumer: new SqsQueueConsumer(clients.sqs, queues.deadLetterUrl),
      // The task queue's ARN differs from the DLQ's only in its name.
      queueArn: queues.deadLetterArn.replace(/:[^:]+$/, `:${names.queue}`),
      deadLetterArn: queues.deadLetterArn,
      resources: {
        tableName: names.table,
        queueUrl: queues.queueUrl,
        deadLetterUrl: queues.deadLetterUrl,
        deadLetterArn: queues.deadLetterArn,
        eventBusName: names.eventBus,
        payloadBucket: names.payloadBucket,
        ...(single === undefined ? {} : { endpoint: single }),
        ...(anyEndpoint ? { endpoints } : {}),
        ...(region === undefined ? {} : { region }),
      },
      eventSender: new EventBridgeSender(clients.eventBridge),
      secrets: new AwsSecretStore(clients.secretsManager, clients.ssm),
      eventBusName: names.eventBus,
      close: () => clients.destroy(),
    };
  } catch (error) {
    clients.destroy();
    throw error;
  }
}

export async function startLocalRuntime(options: LocalRuntimeOptions): Promise<LocalRuntime> {
  const env = options.env ?? process.env;
  const onError =
    options.onError ??
    ((error: unknown, where: string) => console.error(`[weft local] ${where} failed:`, error));
  const sweepIntervalMs = options.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS;
  if (!Number.isFinite(sweepIntervalMs) || sweepIntervalMs <= 0) {
    throw new RangeError(`sweepIntervalMs must be a positive number of milliseconds, got ${sweepIntervalMs}`);
  }
  const maxReceiveCount = options.maxReceiveCount ?? TASK_MAX_RECEIVE_COUNT;
  const visibilityTimeoutSeconds = options.visibilityTimeoutSeconds ?? 30;
  // WEFT_LEASE_SECONDS, WEFT_DEFAULT_MAX_ATTEMPTS, WEFT_WORKER_TIMEOUT_SECONDS and WEFT_SWEEP_*_SECONDS,
  // validated as the functions read them.
  const settings = loadEngineSettings(env);
  const leaseSeconds = options.leaseSeconds ?? settings.leaseSeconds;

  const backend =
    options.backend === "aws"
      ? await awsBackend(options, env, maxReceiveCount, visibilityTimeoutSeconds, leaseSeconds)
      : memoryBackend(maxReceiveCount);

  let ports = backend.ports;
  try {
    if (options.wrapPorts) ports = options.wrapPorts(backend.ports);
  } catch (error) {
    backend.close();
    throw error;
  }
  // One worker timeout for the engine and for the invocations' contexts (worker-time.ts).
  const workerTimeoutSeconds = checkWorkerTimeout(
    options.workerTimeoutSeconds ??
      options.engineOptions?.workerTimeoutSeconds ??
      settings.workerTimeoutSeconds ??
      DEFAULT_WORKER_TIMEOUT_SECONDS,
  );
  const engineOptions: EngineOptions = {
    ...engineOptionsFromConfig({ ...settings, leaseSeconds }),
    ...options.engineOptions,
    workerTimeoutSeconds,
    sweep: { ...settings.sweep, ...options.engineOptions?.sweep },
    logger:
      options.engineOptions?.logger ?? powertoolsEngineLogger(new Logger({ serviceName: "weft-engine" })),
  };
  const registryOptions: TaskRegistryOptions = {
    ...options.taskOptions,
    // Always there, as `weft validate` expects (shared/tasks/project-tasks.ts).
    lambda: options.taskOptions?.lambda ?? new LocalModuleInvoker({}, process.cwd()),
    http: {
      ...options.taskOptions?.http,
      egress: options.taskOptions?.http?.egress ?? localEgressPolicy(env),
      ...secretsOption(chainSecretStores(options.taskOptions?.http?.secrets, backend.secrets)),
    },
    events: backend.eventSender,
    lifecycleBusName: backend.eventBusName,
  };
  let tasks: TaskRegistry;
  try {
    tasks = options.tasks ?? (await buildTaskRegistry(registryOptions));
  } catch (error) {
    backend.close();
    throw error;
  }
  // weft dev: the custom task folder imported afresh on every change (local/task-reload.ts).
  const taskFolder = options.tasks === undefined ? options.taskOptions?.customTasksDir : undefined;
  let generation = 0;
  const taskWatch =
    options.reloadTasks === undefined || taskFolder === undefined
      ? undefined
      : watchTaskFolder({
          dir: taskFolder,
          reload: async () => {
            generation += 1;
            tasks.replaceWith(await buildTaskRegistry({ ...registryOptions, reloadGeneration: generation }));
            return tasks.names();
          },
          ...options.reloadTasks,
        });
  // The engine's metrics, served at GET /metrics (local/metrics.ts), unless the ports bring their own.
  const metrics = createLocalMetrics(backend, loadMetricLimits(env));
  // Expressions in threads that can be stopped: a hostile one fails its node, never this process.
  const engine = new Engine(
    {
      ...ports,
      metrics: ports.metrics ?? metrics,
      expressions: ports.expressions ?? sharedIsolatedExpressions(),
    },
    tasks,
    engineOptions,
  );
  const withLogger = (logger: Logger | undefined) => (logger === undefined ? {} : { logger });
  // Locally a view inlines every value: no Lambda response limit stands in the way.
  const apiHandler = createApiHandler(engine, {
    ...withLogger(options.apiLogger),
    views: { resolveByDefault: true, maxInlineBytes: Number.POSITIVE_INFINITY },
  });
  const workerHandler = createWorkerHandler(engine, withLogger(options.workerLogger));
  const dlqHandler = createDlqHandler(engine, withLogger(options.dlqLogger));
  const sweeperHandler = createSweeperHandler(engine, withLogger(options.sweeperLogger));
  const sweepOnce = () =>
    sweeperHandler(scheduledEvent(backend.resources?.region), createLambdaContext("weft-sweeper", 55_000));

  let server: Awaited<ReturnType<typeof startHttpServer>>;
  try {
    server = await startHttpServer({
      handler: apiHandler,
      port: options.port ?? 3000,
      host: options.host ?? "127.0.0.1",
      onError: (error) => onError(error, "api handler"),
      metrics: () => metrics.render(),
      ...(backend.memoryBlobs === undefined ? {} : { blobs: backend.memoryBlobs }),
      ...(options.consoleDir === false ? {} : { staticDir: options.consoleDir ?? CONSOLE_DIST }),
    });
    if (backend.memoryBlobs) backend.memoryBlobs.baseUrl = server.url;
  } catch (error) {
    backend.close();
    throw error;
  }

  const waitSeconds = options.waitSeconds ?? (options.backend === "memory" ? 0.25 : 1);
  const poller = startPoller({
    consumer: backend.taskConsumer,
    handler: workerHandler,
    queueArn: backend.queueArn,
    visibilityTimeoutSeconds,
    functionTimeoutMs: workerTimeoutSeconds * 1000,
    ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
    ...(options.batchSize === undefined ? {} : { batchSize: options.batchSize }),
    // The in-memory queue wakes a waiting receive at once on send, so a short wait only bounds stop().
    waitSeconds,
    onError: (error, where) => onError(error, `poller ${where}`),
  });
  // The DLQ function's event source: one invocation at a time (dead letters are rare, and each fails a node).
  const deadLetterPoller = startPoller({
    consumer: backend.deadLetterConsumer,
    handler: dlqHandler,
    queueArn: backend.deadLetterArn,
    functionName: "weft-dlq",
    // The deployed DLQ function's timeout (infra/lib/functions.ts).
    functionTimeoutMs: 60_000,
    concurrency: 1,
    visibilityTimeoutSeconds,
    ...(options.batchSize === undefined ? {} : { batchSize: options.batchSize }),
    waitSeconds,
    onError: (error, where) => onError(error, `dlq poller ${where}`),
  });
  const sweeperTimer: LocalTimer = {
    name: "sweeper",
    intervalMs: sweepIntervalMs,
    tick: async () => {
      await sweepOnce();
    },
  };
  const timers = startTimers(
    [...(options.sweep === false ? [] : [sweeperTimer]), ...(options.timers ?? [])],
    { engine, ports },
    (error, timer) => onError(error, `timer ${timer.name}`),
  );

  let stopping: Promise<void> | undefined;
  return {
    url: server.url,
    port: server.port,
    backend: options.backend,
    engine,
    ports,
    taskConsumer: backend.taskConsumer,
    deadLetterConsumer: backend.deadLetterConsumer,
    sweep: sweepOnce,
    ...(backend.resources === undefined ? {} : { resources: backend.resources }),
    stop() {
      stopping ??= (async () => {
        taskWatch?.close();
        try {
          await Promise.all([server.close(), poller.stop(), deadLetterPoller.stop(), timers.stop()]);
        } finally {
          backend.close();
        }
      })();
      return stopping;
    },
  };
}
