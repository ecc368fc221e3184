/**
 * The engine as a deployed function builds it: configuration from the environment, the AWS ports,
 * the function's Powertools logger for the engine's own logs (a "weft-engine" one by default) and
 * metrics, and the task registry the function asks for: the worker every task type's runtime
 * (createEngineFromEnv in worker-engine.ts), the others their params alone (shared/tasks/declared.ts), so
 * each function bundles only what it runs.
 */
import { Logger } from "@aws-lambda-powertools/logger";
import type { Metrics } from "@aws-lambda-powertools/metrics";
import { sharedIsolatedExpressions } from "../adapters/expressions/isolated.js";
import { PowertoolsMetricsPort } from "../adapters/metrics-powertools.js";
import { LazyBlobStore } from "../adapters/s3/lazy.js";
import type { EngineLogger } from "../engine/context.js";
import { Engine, type EngineOptions } from "../engine/engine.js";
import { declaredTaskRegistry } from "../tasks/declared.js";
import { EventBridgeSender } from "../tasks/emit-eventbridge.js";
import { collectTaskTypes, type TaskModule } from "../tasks/task-modules.js";
import type { TaskRegistry } from "../tasks/task-type.js";
import {
  type AwsClientOptions,
  awsPortsWith,
  createInitAwsClients,
  type InitAwsClients,
} from "./aws-clients.js";
import { httpEgressPolicy } from "./egress.js";
import { type EngineSettings, loadConfig, type WeftConfig } from "./env.js";

export interface FunctionEngineOptions {
  logger?: Logger;
  /** Instruments the AWS clients (AwsClientOptions.capture: the functions' X-Ray tracer). */
  capture?: AwsClientOptions["capture"];
  /** The function's Powertools Metrics (EMF), which the engine records into; the function flushes it. */
  metrics?: Metrics;
  /** The custom task modules bundled into the function (the entry the construct generates imports them). */
  taskModules?: readonly TaskModule[];
  /** The function's task registry, from the configuration, the core clients and the settings for more. */
  tasks: (from: {
    config: WeftConfig;
    clients: InitAwsClients;
    clientOptions: AwsClientOptions;
    taskModules: readonly TaskModule[];
  }) => TaskRegistry;
}

export function functionEngineFromEnv(
  env: Record<string, string | undefined>,
  options: FunctionEngineOptions,
): Engine {
  const config = loadConfig(env);
  const logger = options.logger ?? new Logger({ serviceName: "weft-engine" });
  const clientOptions: AwsClientOptions = {
    ...(config.endpoint === undefined ? {} : { endpoint: config.endpoint }),
    ...(options.capture === undefined ? {} : { capture: options.capture }),
  };
  const clients = createInitAwsClients(clientOptions);
  // S3 only for payloads over the inline threshold: its client loads on the first of those.
  const blobs = new LazyBlobStore(async () =>
    (await import("./s3-clients.js")).createS3BlobStore(config, clientOptions),
  );
  const ports = { ...awsPortsWith(config, clients, blobs), expressions: sharedIsolatedExpressions() };
  return new Engine(
    options.metrics === undefined
      ? ports
      : { ...ports, metrics: new PowertoolsMetricsPort(options.metrics, config.metricLimits) },
    options.tasks({ config, clients, clientOptions, taskModules: options.taskModules ?? [] }),
    engineOptionsFromConfig(config, logger),
  );
}

/**
 * The task registry of the functions that never run an `http` or `lambda` node (the api, the sweeper,
 * the DLQ consumer): every task type, those two with their params and registration rules alone.
 */
export const declaredTasks: FunctionEngineOptions["tasks"] = ({ config, clients, taskModules }) =>
  declaredTaskRegistry({
    egress: deployedHttpEgress(config),
    events: new EventBridgeSender(clients.eventBridge),
    lifecycleBusName: config.eventBusName,
    customTasks: collectTaskTypes(taskModules),
  });

/** Where a deployed `http` task may connect: the api (registrations) and the worker (connections) apply the same WEFT_HTTP_ALLOW. */
export function deployedHttpEgress(config: WeftConfig) {
  return httpEgressPolicy(config.httpAllow, "deployed");
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
    claimAfterSeconds: config.claimAfterSeconds,
    defaultMaxAttempts: config.defaultMaxAttempts,
    ...(config.workerTimeoutSeconds === undefined
      ? {}
      : { workerTimeoutSeconds: config.workerTimeoutSeconds }),
    sweep: config.sweep,
    workflowHeadCacheMs: config.workflowHeadCacheMs,
    ...(logger === undefined ? {} : { logger: powertoolsEngineLogger(logger) }),
  };
}
