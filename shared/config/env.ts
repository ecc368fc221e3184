/**
 * The configuration the deployed functions (and `createEngineFromEnv`) read from their environment,
 * parsed with the declarations of settings.ts. Wiring only: no engine logic lives here.
 */
import type { SweepSettings } from "../engine/context.js";
import type { MetricLimits } from "../engine/metric-dimensions.js";
import type { EgressAllow } from "../tasks/egress.js";
import { readSettings, SETTING_KEYS, SETTINGS, type SettingKey, type Settings } from "./settings.js";

/** Per-service endpoint overrides; a service left out uses the SDK's own resolution (or real AWS). */
export interface AwsEndpoints {
  dynamodb?: string;
  sqs?: string;
  eventbridge?: string;
  s3?: string;
  lambda?: string;
}

/** The AWS services whose resources weft owns (the local runtime creates them), by the SDK's endpoint name. */
export const AWS_SERVICES = ["dynamodb", "sqs", "eventbridge", "s3"] as const satisfies ReadonlyArray<
  keyof AwsEndpoints
>;

/** Every service weft has a client for: its own, and Lambda for the `lambda` task type. */
export const CLIENT_SERVICES = [...AWS_SERVICES, "lambda"] as const;

/** The setting of each service's own endpoint (AWS_ENDPOINT_URL_<SERVICE>). */
const ENDPOINT_SETTING = {
  dynamodb: "endpointDynamodb",
  sqs: "endpointSqs",
  eventbridge: "endpointEventbridge",
  s3: "endpointS3",
  lambda: "endpointLambda",
} as const satisfies Record<keyof AwsEndpoints, SettingKey>;

/**
 * Each service's endpoint, else the general one (the SDK's own precedence): one URL when every client
 * gets the same, per service when they differ, undefined when none has one.
 */
function combineEndpoints(
  value: (key: "endpoint" | (typeof ENDPOINT_SETTING)[keyof AwsEndpoints]) => string | undefined,
): string | AwsEndpoints | undefined {
  const general = value("endpoint");
  const endpoints: AwsEndpoints = {};
  for (const service of CLIENT_SERVICES) {
    const endpoint = value(ENDPOINT_SETTING[service]) ?? general;
    if (endpoint !== undefined) endpoints[service] = endpoint;
  }
  const distinct = new Set(CLIENT_SERVICES.map((service) => endpoints[service]));
  if (distinct.size === 1) return [...distinct][0];
  return endpoints;
}

/**
 * The endpoints of AWS_ENDPOINT_URL_<SERVICE> and AWS_ENDPOINT_URL as they stand, unvalidated (the
 * local runtime picks its backend with it before anything is parsed).
 */
export function endpointsFromEnv(env: Record<string, string | undefined>): string | AwsEndpoints | undefined {
  return combineEndpoints((key) => {
    const v = env[SETTINGS[key].env];
    return v === undefined || v === "" ? undefined : v;
  });
}

export interface WeftConfig {
  tableName: string;
  queueUrl: string;
  eventBusName: string;
  payloadBucket: string;
  leaseSeconds: number;
  /** EngineOptions.claimAfterSeconds. */
  claimAfterSeconds: number;
  /** Attempts of a node whose definition names none (EngineOptions.defaultMaxAttempts). */
  defaultMaxAttempts: number;
  /** The worker function's timeout (EngineOptions.workerTimeoutSeconds); undefined when not known. */
  workerTimeoutSeconds?: number;
  /** Sweeper timing in milliseconds: only the settings the environment sets (the engine defaults the rest). */
  sweep: Partial<SweepSettings>;
  /** Days a finished execution is kept (DynamoDB TTL); undefined keeps it forever. */
  retentionDays?: number;
  /** The `http` task's egress allow-list (WEFT_HTTP_ALLOW); undefined: the runtime's default. */
  httpAllow?: EgressAllow;
  /** The cap on distinct `workflow` and `pool` metric dimensions (WEFT_METRICS_MAX_*). */
  metricLimits: MetricLimits;
  /** How long a name's latest workflow version is trusted by starts (WEFT_WORKFLOW_HEAD_CACHE_MS). */
  workflowHeadCacheMs: number;
  /**
   * Endpoint override (moto, DynamoDB Local, LocalStack): one URL for every client, or one per service
   * (from AWS_ENDPOINT_URL_<SERVICE>); undefined for real AWS.
   */
  endpoint?: string | AwsEndpoints;
}

/** The engine's tunables alone, for callers without the AWS resource names (the local runtime). */
export type EngineSettings = Pick<
  WeftConfig,
  | "leaseSeconds"
  | "claimAfterSeconds"
  | "defaultMaxAttempts"
  | "workerTimeoutSeconds"
  | "sweep"
  | "workflowHeadCacheMs"
>;

const ENGINE_KEYS = [
  "leaseSeconds",
  "claimAfterSeconds",
  "defaultMaxAttempts",
  "workerTimeoutSeconds",
  "sweepFirstCheckSeconds",
  "sweepIdleSeconds",
  "sweepGraceSeconds",
  "workflowHeadCacheMs",
] as const satisfies readonly SettingKey[];

function toEngineSettings(value: Pick<Settings, (typeof ENGINE_KEYS)[number]>): EngineSettings {
  const sweep: Partial<SweepSettings> = {};
  if (value.sweepFirstCheckSeconds !== undefined) sweep.firstCheckMs = value.sweepFirstCheckSeconds * 1000;
  if (value.sweepIdleSeconds !== undefined) sweep.idleMs = value.sweepIdleSeconds * 1000;
  if (value.sweepGraceSeconds !== undefined) sweep.graceMs = value.sweepGraceSeconds * 1000;
  return {
    leaseSeconds: value.leaseSeconds,
    claimAfterSeconds: value.claimAfterSeconds,
    defaultMaxAttempts: value.defaultMaxAttempts,
    ...(value.workerTimeoutSeconds === undefined ? {} : { workerTimeoutSeconds: value.workerTimeoutSeconds }),
    sweep,
    workflowHeadCacheMs: value.workflowHeadCacheMs,
  };
}

/** Reads and validates the engine's variables alone; throws one error naming every problem. */
export function loadEngineSettings(env: Record<string, string | undefined> = process.env): EngineSettings {
  return toEngineSettings(readSettings(env, ENGINE_KEYS));
}

/** Reads and validates the metric cardinality caps alone (the local runtime's metrics). */
export function loadMetricLimits(env: Record<string, string | undefined> = process.env): MetricLimits {
  return toMetricLimits(readSettings(env, ["metricsMaxWorkflows", "metricsMaxPools"]));
}

function toMetricLimits(value: Pick<Settings, "metricsMaxWorkflows" | "metricsMaxPools">): MetricLimits {
  return { workflows: value.metricsMaxWorkflows, pools: value.metricsMaxPools };
}

/** Reads and validates every variable of settings.ts; throws one error naming every problem. */
export function loadConfig(env: Record<string, string | undefined> = process.env): WeftConfig {
  const value = readSettings(env, SETTING_KEYS);
  const endpoint = combineEndpoints((key) => value[key]);
  return {
    ...toEngineSettings(value),
    tableName: value.tableName,
    queueUrl: value.queueUrl,
    eventBusName: value.eventBusName,
    payloadBucket: value.payloadBucket,
    metricLimits: toMetricLimits(value),
    ...(value.retentionDays === undefined ? {} : { retentionDays: value.retentionDays }),
    ...(value.httpAllow === undefined ? {} : { httpAllow: value.httpAllow }),
    ...(endpoint === undefined ? {} : { endpoint }),
  };
}
