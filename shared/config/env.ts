/**
 * The environment the deployed functions (and `createEngineFromEnv`) read, as a zod schema.
 * Wiring only: no engine logic lives here.
 */
import { z } from "zod";
import type { SweepSettings } from "../engine/context.js";

/** An unset variable and an empty one mean the same thing (CDK and shells both produce "" at times). */
const emptyAsUndefined = (value: unknown) => (value === "" ? undefined : value);

const required = (name: string) =>
  z.preprocess(emptyAsUndefined, z.string({ error: `${name} must be set` }).min(1, `${name} must be set`));

/** An optional whole number of seconds within [1, max]. */
const optionalSeconds = (name: string, max: number) =>
  z.preprocess(
    emptyAsUndefined,
    z.coerce
      .number()
      .int(`${name} must be a whole number of seconds`)
      .min(1, `${name} must be at least 1`)
      .max(max, `${name} must be at most ${max}`)
      .optional(),
  );

const DAY_SECONDS = 86_400;

const endpointUrl = (name: string) =>
  z.preprocess(
    emptyAsUndefined,
    z.url({ message: `${name} must be a URL such as http://127.0.0.1:5000` }).optional(),
  );

export const envSchema = z.object({
  WEFT_TABLE_NAME: required("WEFT_TABLE_NAME"),
  WEFT_QUEUE_URL: required("WEFT_QUEUE_URL"),
  WEFT_DLQ_URL: required("WEFT_DLQ_URL"),
  WEFT_EVENT_BUS_NAME: required("WEFT_EVENT_BUS_NAME"),
  /** The S3 bucket of payloads too large to keep on their items (domain/payload.ts). */
  WEFT_PAYLOAD_BUCKET: required("WEFT_PAYLOAD_BUCKET"),
  WEFT_LEASE_SECONDS: z.preprocess(
    emptyAsUndefined,
    z.coerce
      .number()
      .int("WEFT_LEASE_SECONDS must be a whole number of seconds")
      .min(1, "WEFT_LEASE_SECONDS must be at least 1")
      .max(43_200, "WEFT_LEASE_SECONDS must be at most 43200 (SQS's longest visibility timeout)")
      .default(60),
  ),
  /** Sweeper timing (EngineOptions.sweep); unset means the engine's defaults. */
  WEFT_SWEEP_FIRST_CHECK_SECONDS: optionalSeconds("WEFT_SWEEP_FIRST_CHECK_SECONDS", DAY_SECONDS),
  WEFT_SWEEP_IDLE_SECONDS: optionalSeconds("WEFT_SWEEP_IDLE_SECONDS", DAY_SECONDS),
  WEFT_SWEEP_GRACE_SECONDS: optionalSeconds("WEFT_SWEEP_GRACE_SECONDS", DAY_SECONDS),
  /** Days finished executions are kept before DynamoDB's TTL deletes them; unset keeps them forever. */
  WEFT_RETENTION_DAYS: z.preprocess(
    emptyAsUndefined,
    z.coerce
      .number()
      .int("WEFT_RETENTION_DAYS must be a whole number of days")
      .min(1, "WEFT_RETENTION_DAYS must be at least 1")
      .max(3650, "WEFT_RETENTION_DAYS must be at most 3650")
      .optional(),
  ),
  /** The AWS SDK reads this variable itself too; it is parsed here so the local runtime can print it. */
  AWS_ENDPOINT_URL: endpointUrl("AWS_ENDPOINT_URL"),
  /** The SDK's per-service endpoints; each wins over AWS_ENDPOINT_URL for its service, as in the SDK. */
  AWS_ENDPOINT_URL_DYNAMODB: endpointUrl("AWS_ENDPOINT_URL_DYNAMODB"),
  AWS_ENDPOINT_URL_SQS: endpointUrl("AWS_ENDPOINT_URL_SQS"),
  AWS_ENDPOINT_URL_EVENTBRIDGE: endpointUrl("AWS_ENDPOINT_URL_EVENTBRIDGE"),
  AWS_ENDPOINT_URL_S3: endpointUrl("AWS_ENDPOINT_URL_S3"),
});

/** Per-service endpoint overrides; a service left out uses the SDK's own resolution (or real AWS). */
export interface AwsEndpoints {
  dynamodb?: string;
  sqs?: string;
  eventbridge?: string;
  s3?: string;
}

/** The AWS services weft calls, by the SDK's endpoint name (AWS_ENDPOINT_URL_<SERVICE>). */
export const AWS_SERVICES = ["dynamodb", "sqs", "eventbridge", "s3"] as const satisfies ReadonlyArray<
  keyof AwsEndpoints
>;

/**
 * The endpoint of each service from AWS_ENDPOINT_URL_<SERVICE>, else AWS_ENDPOINT_URL (the SDK's own
 * precedence): one URL when all agree, per service when they differ, undefined when none is set.
 */
export function endpointsFromEnv(env: Record<string, string | undefined>): string | AwsEndpoints | undefined {
  const value = (name: string) => {
    const v = env[name];
    return v === undefined || v === "" ? undefined : v;
  };
  const general = value("AWS_ENDPOINT_URL");
  const endpoints: AwsEndpoints = {};
  for (const service of AWS_SERVICES) {
    const endpoint = value(`AWS_ENDPOINT_URL_${service.toUpperCase()}`) ?? general;
    if (endpoint !== undefined) endpoints[service] = endpoint;
  }
  const distinct = new Set(AWS_SERVICES.map((service) => endpoints[service]));
  if (distinct.size === 1) return [...distinct][0];
  return endpoints;
}

export interface WeftConfig {
  tableName: string;
  queueUrl: string;
  deadLetterUrl: string;
  eventBusName: string;
  payloadBucket: string;
  leaseSeconds: number;
  /** Sweeper timing in milliseconds: only the settings the environment sets (the engine defaults the rest). */
  sweep: Partial<SweepSettings>;
  /** Days a finished execution is kept (DynamoDB TTL); undefined keeps it forever. */
  retentionDays?: number;
  /**
   * Endpoint override (moto, DynamoDB Local, LocalStack): one URL for every client, or one per service
   * (from AWS_ENDPOINT_URL_<SERVICE>); undefined for real AWS.
   */
  endpoint?: string | AwsEndpoints;
}

/** The engine's tunables alone (lease and sweeper timing), for callers without the AWS resource names. */
export type EngineSettings = Pick<WeftConfig, "leaseSeconds" | "sweep">;

const engineEnvSchema = envSchema.pick({
  WEFT_LEASE_SECONDS: true,
  WEFT_SWEEP_FIRST_CHECK_SECONDS: true,
  WEFT_SWEEP_IDLE_SECONDS: true,
  WEFT_SWEEP_GRACE_SECONDS: true,
});

function parseEnv<S extends z.ZodType>(schema: S, env: Record<string, string | undefined>): z.output<S> {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);
    throw new Error(`invalid weft configuration: ${problems.join("; ")}`);
  }
  return parsed.data;
}

function toEngineSettings(value: z.output<typeof engineEnvSchema>): EngineSettings {
  const sweep: Partial<SweepSettings> = {};
  if (value.WEFT_SWEEP_FIRST_CHECK_SECONDS !== undefined)
    sweep.firstCheckMs = value.WEFT_SWEEP_FIRST_CHECK_SECONDS * 1000;
  if (value.WEFT_SWEEP_IDLE_SECONDS !== undefined) sweep.idleMs = value.WEFT_SWEEP_IDLE_SECONDS * 1000;
  if (value.WEFT_SWEEP_GRACE_SECONDS !== undefined) sweep.graceMs = value.WEFT_SWEEP_GRACE_SECONDS * 1000;
  return { leaseSeconds: value.WEFT_LEASE_SECONDS, sweep };
}

/** Reads and validates WEFT_LEASE_SECONDS and WEFT_SWEEP_*; throws one error naming every problem. */
export function loadEngineSettings(env: Record<string, string | undefined> = process.env): EngineSettings {
  return toEngineSettings(parseEnv(engineEnvSchema, env));
}

/** Reads and validates the configuration; throws one error naming every problem. */
export function loadConfig(env: Record<string, string | undefined> = process.env): WeftConfig {
  const value = parseEnv(envSchema, env);
  return {
    ...toEngineSettings(value),
    tableName: value.WEFT_TABLE_NAME,
    queueUrl: value.WEFT_QUEUE_URL,
    deadLetterUrl: value.WEFT_DLQ_URL,
    eventBusName: value.WEFT_EVENT_BUS_NAME,
    payloadBucket: value.WEFT_PAYLOAD_BUCKET,
    ...(value.WEFT_RETENTION_DAYS === undefined ? {} : { retentionDays: value.WEFT_RETENTION_DAYS }),
    ...withEndpoint(
      endpointsFromEnv({
        AWS_ENDPOINT_URL: value.AWS_ENDPOINT_URL,
        AWS_ENDPOINT_URL_DYNAMODB: value.AWS_ENDPOINT_URL_DYNAMODB,
        AWS_ENDPOINT_URL_SQS: value.AWS_ENDPOINT_URL_SQS,
        AWS_ENDPOINT_URL_EVENTBRIDGE: value.AWS_ENDPOINT_URL_EVENTBRIDGE,
        AWS_ENDPOINT_URL_S3: value.AWS_ENDPOINT_URL_S3,
      }),
    ),
  };
}

function withEndpoint(endpoint: string | AwsEndpoints | undefined): { endpoint?: string | AwsEndpoints } {
  return endpoint === undefined ? {} : { endpoint };
}
