/**
 * Every environment variable of the deployed functions, declared once: its name, its zod schema
 * (which holds the runtime's default, if any), what it means, and who sets it in a deployed stack.
 * Pure data and zod, with no AWS SDK or CDK import, so both sides read the same list: the runtime
 * parses with it (env.ts) and the construct writes each function's `environment` with it
 * (infra/lib/weft-orchestrator.ts). test/infra/config-agreement.test.ts checks that they agree.
 */
import { LIMITS } from "../domain/definition.js";
import { DEFAULT_RETRY } from "../domain/graph.js";
import * as z from "../domain/zod.js";
import { DEFAULT_CLAIM_AFTER_SECONDS, DEFAULT_SWEEP } from "../engine/context.js";
import { DEFAULT_METRIC_LIMITS } from "../engine/metric-dimensions.js";
import {
  DEFAULT_WORKER_TIMEOUT_SECONDS,
  MAX_WORKER_TIMEOUT_SECONDS,
  WORKER_MARGIN_MS,
} from "../engine/worker-time.js";
import { DEFAULT_WORKFLOW_HEAD_TTL_MS } from "../engine/workflow-cache.js";
import { parseEgressAllow } from "../tasks/egress.js";

/** Who gives a variable its value in a deployed stack. */
export type SetBy =
  /**
   * The construct, from a prop (a Duration of whole seconds, a number, or a list of strings joined
   * with commas), and the sample app from a context key.
   */
  | {
      readonly kind: "prop";
      /** The prop of WeftOrchestratorProps; a dotted path for a nested one (`sweep.idle`). */
      readonly prop: string;
      readonly propType: "duration" | "number" | "list";
      readonly context: `weft:${string}`;
    }
  /** The construct, from a resource it creates. */
  | { readonly kind: "resource"; readonly resource: "table" | "task queue" | "event bus" | "payload bucket" }
  /** Not the construct: the platform or the operator (an emulator's endpoint). */
  | { readonly kind: "environment"; readonly by: string };

export interface Setting {
  readonly env: string;
  /** Parses the variable's text (undefined when unset); the runtime's default, if any, is the schema's. */
  readonly schema: z.core.$ZodType;
  readonly description: string;
  /** What an unset variable means when the schema has no default of its own. */
  readonly whenUnset?: string;
  readonly setBy: SetBy;
}

/** Keeps each entry's literal types (its name and `setBy.kind`), which the mapped types below use. */
const setting = <const S extends Setting>(entry: S): S => entry;

/** An unset variable and an empty one mean the same thing (CDK and shells both produce "" at times). */
const emptyAsUndefined = (value: unknown) => (value === "" ? undefined : value);

/** Classic zod's `z.preprocess(fn, schema)`, which zod/mini has not: the same pipe from a transform. */
const preprocess = <S extends z.core.$ZodType>(fn: (value: unknown) => unknown, schema: S) =>
  z.pipe(z.transform(fn), schema);

const requiredText = () =>
  preprocess(emptyAsUndefined, z.string({ error: "must be set" }).check(z.minLength(1, "must be set")));

const wholeNumber = (unit: string, min: number, max: number, maxWhy?: string) =>
  z.coerce
    .number({ error: `must be a whole number of ${unit}` })
    .check(
      z.int(`must be a whole number of ${unit}`),
      z.gte(min, `must be at least ${min}`),
      z.lte(max, `must be at most ${max}${maxWhy === undefined ? "" : ` (${maxWhy})`}`),
    );

type WholeNumber = ReturnType<typeof wholeNumber>;
const optionalNumber = (schema: WholeNumber) => preprocess(emptyAsUndefined, z.optional(schema));
const numberWithDefault = (schema: WholeNumber, value: number) =>
  preprocess(emptyAsUndefined, z._default(schema, value));

const endpointUrl = () =>
  preprocess(emptyAsUndefined, z.optional(z.url({ message: "must be a URL such as http://127.0.0.1:5000" })));

/** The `http` task's egress allow-list (shared/tasks/egress.ts): `loopback,private,10.1.0.0/16`. */
const egressAllowList = () =>
  preprocess(
    emptyAsUndefined,
    z.optional(
      z.pipe(
        z.string(),
        z.transform((text: string, payload) => {
          const parsed = parseEgressAllow(text);
          if (parsed.ok) return parsed.value;
          // What classic zod's `ctx.addIssue({ code: "custom", message })` pushes (mini's transform has no addIssue).
          for (const problem of parsed.problems)
            payload.issues.push({ code: "custom", message: problem, input: payload.value });
          return z.NEVER;
        }),
      ),
    ),
  );

const DAY_SECONDS = 86_400;
const sweepSeconds = () => optionalNumber(wholeNumber("seconds", 1, DAY_SECONDS));
const ENDPOINT_SET_BY = {
  kind: "environment",
  by: "not set: yours, for an emulator (LocalStack sets `AWS_ENDPOINT_URL` in its Lambda containers)",
} as const;

export const SETTINGS = {
  tableName: setting({
    env: "WEFT_TABLE_NAME",
    schema: requiredText(),
    description: "The DynamoDB table of workflows, executions, nodes and history.",
    setBy: { kind: "resource", resource: "table" },
  }),
  queueUrl: setting({
    env: "WEFT_QUEUE_URL",
    schema: requiredText(),
    description: "The SQS task queue the engine sends ready nodes to.",
    setBy: { kind: "resource", resource: "task queue" },
  }),
  eventBusName: setting({
    env: "WEFT_EVENT_BUS_NAME",
    schema: requiredText(),
    description: "The EventBridge bus of lifecycle events (and the `emit` task type's default bus).",
    setBy: { kind: "resource", resource: "event bus" },
  }),
  payloadBucket: setting({
    env: "WEFT_PAYLOAD_BUCKET",
    schema: requiredText(),
    description: "The S3 bucket of inputs and outputs too large to keep on their items (over 4 KiB).",
    setBy: { kind: "resource", resource: "payload bucket" },
  }),
  leaseSeconds: setting({
    env: "WEFT_LEASE_SECONDS",
    schema: numberWithDefault(wholeNumber("seconds", 1, 43_200, "SQS's longest visibility timeout"), 60),
    description:
      "How long a worker holds a node's lease before another may take it over (renewed by heartbeat).",
    setBy: { kind: "prop", prop: "leaseDuration", propType: "duration", context: "weft:leaseSeconds" },
  }),
  claimAfterSeconds: setting({
    env: "WEFT_CLAIM_AFTER_SECONDS",
    schema: numberWithDefault(wholeNumber("seconds", 0, 3600), DEFAULT_CLAIM_AFTER_SECONDS),
    description:
      "How long a node's first attempt runs before its claim is written; one that ends sooner writes its record once, its claim carried by its ending (docs/guarantees.md, lazy claims). 0 claims every attempt before it runs.",
    setBy: { kind: "environment", by: "not set by the construct: the default, or yours on a function" },
  }),
  defaultMaxAttempts: setting({
    env: "WEFT_DEFAULT_MAX_ATTEMPTS",
    schema: numberWithDefault(wholeNumber("attempts", 1, LIMITS.maxAttempts), DEFAULT_RETRY.maxAttempts),
    description: "Attempts a node gets when neither it nor its definition's `defaults.retry` names any.",
    setBy: {
      kind: "prop",
      prop: "defaultMaxAttempts",
      propType: "number",
      context: "weft:defaultMaxAttempts",
    },
  }),
  retentionDays: setting({
    env: "WEFT_RETENTION_DAYS",
    schema: optionalNumber(wholeNumber("days", 1, 3650)),
    description: "Days a finished execution is kept before DynamoDB's TTL deletes it.",
    whenUnset: "kept forever",
    setBy: { kind: "prop", prop: "retentionDays", propType: "number", context: "weft:retentionDays" },
  }),
  workerTimeoutSeconds: setting({
    env: "WEFT_WORKER_TIMEOUT_SECONDS",
    // The worker keeps WORKER_MARGIN_MS of its invocation for its last writes (engine/worker-time.ts).
    schema: optionalNumber(
      wholeNumber(
        "seconds",
        WORKER_MARGIN_MS / 1000 + 1,
        MAX_WORKER_TIMEOUT_SECONDS,
        "Lambda's longest timeout",
      ),
    ),
    description:
      "The worker function's timeout: no attempt outlasts it, and no node may ask for more than it less 5 s.",
    whenUnset: `\`${DEFAULT_WORKER_TIMEOUT_SECONDS}\` (the engine's)`,
    setBy: {
      kind: "prop",
      prop: "workerTimeout",
      propType: "duration",
      context: "weft:workerTimeoutSeconds",
    },
  }),
  sweepFirstCheckSeconds: setting({
    env: "WEFT_SWEEP_FIRST_CHECK_SECONDS",
    schema: sweepSeconds(),
    description: "When the sweeper first looks at a running execution, after its start.",
    whenUnset: `\`${DEFAULT_SWEEP.firstCheckMs / 1000}\` (the engine's)`,
    setBy: {
      kind: "prop",
      prop: "sweep.firstCheck",
      propType: "duration",
      context: "weft:sweepFirstCheckSeconds",
    },
  }),
  sweepIdleSeconds: setting({
    env: "WEFT_SWEEP_IDLE_SECONDS",
    schema: sweepSeconds(),
    description: "When the sweeper looks again at an execution with nothing due sooner.",
    whenUnset: `\`${DEFAULT_SWEEP.idleMs / 1000}\` (the engine's)`,
    setBy: { kind: "prop", prop: "sweep.idle", propType: "duration", context: "weft:sweepIdleSeconds" },
  }),
  sweepGraceSeconds: setting({
    env: "WEFT_SWEEP_GRACE_SECONDS",
    schema: sweepSeconds(),
    description:
      "How long work may stay queued (or a completion unpropagated) before the sweeper re-drives it.",
    whenUnset: `\`${DEFAULT_SWEEP.graceMs / 1000}\` (the engine's)`,
    setBy: { kind: "prop", prop: "sweep.grace", propType: "duration", context: "weft:sweepGraceSeconds" },
  }),
  httpAllow: setting({
    env: "WEFT_HTTP_ALLOW",
    schema: egressAllowList(),
    description:
      "Addresses the `http` task may call beyond public ones, comma-separated: `loopback`, `private` (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7), CIDRs such as `10.1.0.0/16`, or `none`. Others in loopback, link-local (the metadata service), unspecified and private ranges are refused at registration (a literal host) and on every connection (after DNS). The api and the worker read the same list.",
    whenUnset: "public addresses only (`npm start`: loopback too)",
    setBy: { kind: "prop", prop: "httpAllow", propType: "list", context: "weft:httpAllow" },
  }),
  metricsMaxWorkflows: setting({
    env: "WEFT_METRICS_MAX_WORKFLOWS",
    schema: numberWithDefault(wholeNumber("workflows", 1, 10_000), DEFAULT_METRIC_LIMITS.workflows),
    description:
      "Distinct `workflow` values (the EMF dimension, the Prometheus label) each process records series for: the first seen; later workflows, and one named `other`, are counted under `workflow` = `other`.",
    setBy: { kind: "environment", by: "not set by the construct: the default, or yours on a function" },
  }),
  metricsMaxPools: setting({
    env: "WEFT_METRICS_MAX_POOLS",
    schema: numberWithDefault(wholeNumber("pools", 1, 10_000), DEFAULT_METRIC_LIMITS.pools),
    description:
      "Distinct `pool` values each process records series for: the first seen; later pools, and one named `other`, are counted under `pool` = `other`. A pool's slot (and its series) goes with its last worker.",
    setBy: { kind: "environment", by: "not set by the construct: the default, or yours on a function" },
  }),
  workflowHeadCacheMs: setting({
    env: "WEFT_WORKFLOW_HEAD_CACHE_MS",
    schema: numberWithDefault(wholeNumber("milliseconds", 0, 60_000), DEFAULT_WORKFLOW_HEAD_TTL_MS),
    description:
      "How long a process trusts a workflow name's latest version for starts that name no `version`: a version registered by another process takes effect for them within this time (the registering process: at once). Versions themselves never change and are kept (up to 32 MiB of definitions). `0` reads the latest on every such start.",
    setBy: { kind: "environment", by: "not set by the construct: the default, or yours on a function" },
  }),
  endpoint: setting({
    env: "AWS_ENDPOINT_URL",
    schema: endpointUrl(),
    description: "Endpoint of every AWS client (moto, DynamoDB Local, LocalStack).",
    whenUnset: "real AWS",
    setBy: ENDPOINT_SET_BY,
  }),
  endpointDynamodb: setting({
    env: "AWS_ENDPOINT_URL_DYNAMODB",
    schema: endpointUrl(),
    description: "Endpoint of the DynamoDB client; wins over AWS_ENDPOINT_URL.",
    whenUnset: "`AWS_ENDPOINT_URL`'s",
    setBy: ENDPOINT_SET_BY,
  }),
  endpointSqs: setting({
    env: "AWS_ENDPOINT_URL_SQS",
    schema: endpointUrl(),
    description: "Endpoint of the SQS client; wins over AWS_ENDPOINT_URL.",
    whenUnset: "`AWS_ENDPOINT_URL`'s",
    setBy: ENDPOINT_SET_BY,
  }),
  endpointEventbridge: setting({
    env: "AWS_ENDPOINT_URL_EVENTBRIDGE",
    schema: endpointUrl(),
    description: "Endpoint of the EventBridge client; wins over AWS_ENDPOINT_URL.",
    whenUnset: "`AWS_ENDPOINT_URL`'s",
    setBy: ENDPOINT_SET_BY,
  }),
  endpointS3: setting({
    env: "AWS_ENDPOINT_URL_S3",
    schema: endpointUrl(),
    description: "Endpoint of the S3 client; wins over AWS_ENDPOINT_URL.",
    whenUnset: "`AWS_ENDPOINT_URL`'s",
    setBy: ENDPOINT_SET_BY,
  }),
  endpointLambda: setting({
    env: "AWS_ENDPOINT_URL_LAMBDA",
    schema: endpointUrl(),
    description: "Endpoint of the Lambda client (the `lambda` task type); wins over AWS_ENDPOINT_URL.",
    whenUnset: "`AWS_ENDPOINT_URL`'s",
    setBy: ENDPOINT_SET_BY,
  }),
} as const;

export type SettingKey = keyof typeof SETTINGS;
type Entry<K extends SettingKey> = (typeof SETTINGS)[K];

/** The parsed settings, by key. */
export type Settings = { [K in SettingKey]: z.output<Entry<K>["schema"]> };

export const SETTING_KEYS = Object.keys(SETTINGS) as SettingKey[];

/** Settings the construct sets from a prop, with their context keys. */
export type PropSettingKey = {
  [K in SettingKey]: Entry<K>["setBy"]["kind"] extends "prop" ? K : never;
}[SettingKey];
export const PROP_SETTING_KEYS = SETTING_KEYS.filter(
  (key): key is PropSettingKey => SETTINGS[key].setBy.kind === "prop",
);

/** What the construct puts in the environment: every setting it can set, by key (a prop left unset: undefined). */
export type DeployedValues = {
  [K in SettingKey as Entry<K>["setBy"]["kind"] extends "environment"
    ? never
    : K]: Entry<K>["setBy"]["kind"] extends "resource"
    ? string
    : Entry<K>["setBy"] extends { readonly propType: "list" }
      ? string | undefined
      : number | undefined;
};

/** The functions' environment from the construct's values: unset props are left out (the runtime's default). */
export function deployedEnvironment(values: DeployedValues): Record<string, string> {
  const environment: Record<string, string> = {};
  for (const [key, value] of Object.entries(values) as Array<
    [keyof DeployedValues, string | number | undefined]
  >) {
    if (value !== undefined) environment[SETTINGS[key].env] = String(value);
  }
  return environment;
}

/** One entry per problem, each naming its variable: "WEFT_LEASE_SECONDS: must be at least 1". */
function problemsOf(error: z.core.$ZodError, nameOf: (path: PropertyKey | undefined) => string): string[] {
  return error.issues.map((issue) => `${nameOf(issue.path[0])}: ${issue.message}`);
}

/** Parses one value (a variable's text, a CDK context value) as the functions will; throws naming `label`. */
export function parseSetting<K extends SettingKey>(
  key: K,
  raw: unknown,
  label: string = SETTINGS[key].env,
): Settings[K] {
  const parsed = z.safeParse(SETTINGS[key].schema, raw);
  if (!parsed.success) throw new Error(problemsOf(parsed.error, () => label).join("; "));
  return parsed.data as Settings[K];
}

/**
 * Reads the variables of `keys` from `env` (and no other) and validates them; throws one error
 * naming every problem.
 */
export function readSettings<K extends SettingKey>(
  env: Record<string, string | undefined>,
  keys: readonly K[],
): Pick<Settings, K> {
  const shape: Partial<Record<SettingKey, z.core.$ZodType>> = {};
  const raw: Partial<Record<SettingKey, string | undefined>> = {};
  for (const key of keys) {
    shape[key] = SETTINGS[key].schema;
    raw[key] = env[SETTINGS[key].env];
  }
  const parsed = z.object(shape).safeParse(raw);
  if (!parsed.success) {
    const problems = problemsOf(parsed.error, (path) =>
      typeof path === "string" && path in SETTINGS ? SETTINGS[path as SettingKey].env : String(path),
    );
    throw new Error(`invalid weft configuration: ${problems.join("; ")}`);
  }
  // The object schema was built from exactly these keys' schemas.
  return parsed.data as Pick<Settings, K>;
}

/**
 * Variables the construct sets for the platform rather than for weft's code: read by the Lambda
 * runtime or by a library, named here so that the construct writes them by these names and the
 * agreement test knows who reads them.
 */
export const PLATFORM_VARIABLES = {
  serviceName: {
    env: "POWERTOOLS_SERVICE_NAME",
    readBy: "@aws-lambda-powertools/logger",
    setFrom: "the function: `weft-api`, `weft-worker`, `weft-sweeper`, `weft-dlq`",
    description: "Powertools' service name (the handlers' loggers name theirs too).",
  },
  logLevel: {
    env: "POWERTOOLS_LOG_LEVEL",
    readBy: "@aws-lambda-powertools/logger",
    setFrom: "`logLevel` (`weft:logLevel`)",
    description: "Powertools' log level.",
  },
  tracing: {
    env: "POWERTOOLS_TRACE_ENABLED",
    readBy: "@aws-lambda-powertools/tracer",
    setFrom: "`tracing` (`weft:tracing`): `true` or `false` (the default)",
    description:
      "X-Ray tracing: only when `true` does a function's handler (functions/common/tracing.ts) load Powertools Tracer and the X-Ray SDK (Lambda's active tracing is on then too).",
  },
  nodeOptions: {
    env: "NODE_OPTIONS",
    readBy: "node",
    setFrom: "always `--enable-source-maps`",
    description: "Makes stack traces point into the TypeScript sources.",
  },
} as const;
