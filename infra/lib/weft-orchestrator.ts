import path from "node:path";
import { Duration, RemovalPolicy, Token } from "aws-cdk-lib";
import type * as apigwv2 from "aws-cdk-lib/aws-apigatewayv2";
import type * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as events from "aws-cdk-lib/aws-events";
import * as targets from "aws-cdk-lib/aws-events-targets";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import * as logs from "aws-cdk-lib/aws-logs";
import * as s3 from "aws-cdk-lib/aws-s3";
import type * as sns from "aws-cdk-lib/aws-sns";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import { ATTR, INDEX } from "../../shared/adapters/dynamo/keys.js";
import { UPLOAD_EXPIRY_DAYS } from "../../shared/adapters/s3/bucket.js";
import { TASK_MAX_RECEIVE_COUNT, VISIBILITY_TO_TIMEOUT_RATIO } from "../../shared/config/delivery.js";
import {
  deployedEnvironment,
  type PropSettingKey,
  parseSetting,
  type Settings,
} from "../../shared/config/settings.js";
import { EXECUTION_BLOB_PREFIX, UPLOAD_PREFIX } from "../../shared/domain/payload.js";
import { WeftAlarms, type WeftAlarmThresholds } from "./alarms.js";
import { type WeftApiAuthorization, WeftHttpApi } from "./api.js";
import {
  assertEsbuildInstalled,
  findProjectRoot,
  taskModuleFilesOf,
  writeFunctionEntry,
} from "./function-entry.js";
import { DEFAULT_FUNCTION_SETTINGS, WeftFunction, type WeftFunctionKind } from "./functions.js";
import { consumeQueue, grantWeftAccess } from "./grants.js";
import { acknowledgeWeftNagFindings } from "./nag-suppressions.js";

export type { WeftAlarmThresholds } from "./alarms.js";
export type { WeftApiAuthorization } from "./api.js";

/** Props of {@link WeftOrchestrator}. Every one is optional; the defaults suit production. */
export interface WeftOrchestratorProps {
  /** How long a worker holds a node's lease before another may take it over (renewed by heartbeat). @default 60 seconds */
  readonly leaseDuration?: Duration;
  /** Attempts a node gets when its definition names none. @default 3 */
  readonly defaultMaxAttempts?: number;
  /** Days a finished execution is kept before the TTL attribute `expiresAt` lets DynamoDB delete it. @default 30 */
  readonly retentionDays?: number;
  /** Most concurrent worker invocations the task queue's event source may run (2–1000). @default 50 */
  readonly workerMaxConcurrency?: number;
  /** Messages per worker invocation (1–10). @default 10 */
  readonly workerBatchSize?: number;
  /**
   * Worker function timeout; the task queue's visibility timeout is six times this, and the engine
   * knows it (WEFT_WORKER_TIMEOUT_SECONDS). Whole seconds, at most 15 minutes. @default 5 minutes
   */
  readonly workerTimeout?: Duration;
  /**
   * Sweeper timing, each in whole seconds from 1 s to a day. `firstCheck`: when it first looks at a
   * running execution; `idle`: when it looks again at one with nothing due sooner; `grace`: how long
   * work may stay queued before it is presumed lost and re-driven. The sweeper runs once a minute, so
   * values under a minute take effect at its next run.
   * @default - the engine's: 2 minutes, 5 minutes, 2 minutes
   */
  readonly sweep?: { readonly firstCheck?: Duration; readonly idle?: Duration; readonly grace?: Duration };
  /** Worker memory in MiB. @default 1024 */
  readonly workerMemorySize?: number;
  /** Topic the alarms notify (on ALARM and on OK). @default - alarms without actions */
  readonly alarmTopic?: sns.ITopic;
  /** Alarm when the oldest task message is older than this. @default 15 minutes */
  readonly oldestTaskAgeAlarmThreshold?: Duration;
  /**
   * Thresholds of the alarms on the task queue's depth and on weft's own metrics (namespace `Weft`,
   * docs/observability.md), each with its default: queue depth over 100 (warning) and over 500
   * (critical); node failure rate over 10% in 5 minutes; node wait time p90 over 60 s; a task
   * waiting in an external worker pool over 5 minutes.
   * @default - the defaults of each field of WeftAlarmThresholds
   */
  readonly alarmThresholds?: WeftAlarmThresholds;
  /** How the HTTP API authenticates callers. Never open. @default { kind: "iam" } */
  readonly authorization?: WeftApiAuthorization;
  /** Steady-state request rate and burst limits on the API's default stage. @default 1000 rps, 2000 burst */
  readonly apiThrottle?: { readonly rateLimit: number; readonly burstLimit: number };
  /** DynamoDB deletion protection on the table. @default true */
  readonly tableDeletionProtection?: boolean;
  /**
   * What happens to the table, the payload bucket and the log groups when removed from the stack.
   * With DESTROY and no table deletion protection, a custom resource empties the bucket so it can
   * go too; with the table protected it is never emptied (CloudFormation then cannot delete it
   * while it holds objects, as it cannot delete the table).
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
  /** Retention of the functions' and the API's log groups. @default one month */
  readonly logRetention?: logs.RetentionDays;
  /** Powertools log level of every function. @default "INFO" */
  readonly logLevel?: "DEBUG" | "INFO" | "WARN" | "ERROR";
  /**
   * X-Ray tracing of every function (Lambda's active tracing and Powertools Tracer, annotated with
   * executions' W3C trace ids). Off by default, as in Step Functions: it costs X-Ray's traces and
   * about 120 KB more for each new instance to load. @default false
   */
  readonly tracing?: boolean;
  /** ARNs of the user's Lambda functions the `lambda` task type may invoke (granted to the worker). @default none */
  readonly invokableFunctionArns?: readonly string[];
  /** ARNs of other event buses the `emit` task type may put events on (granted to the worker). @default none */
  readonly extraEventBusArns?: readonly string[];
  /**
   * ARNs of the Secrets Manager secrets and SSM parameters the `http` task's secret references
   * (`{"secret": …}` header values) may read: the worker gets secretsmanager:GetSecretValue and
   * ssm:GetParameter on exactly these. @default none
   */
  readonly secretArns?: readonly string[];
  /**
   * Addresses the `http` task may call beyond public ones (WEFT_HTTP_ALLOW): `"loopback"`,
   * `"private"`, CIDRs such as `"10.1.0.0/16"`. Loopback, link-local (the metadata service),
   * unspecified and private addresses are otherwise refused. @default none
   */
  readonly httpAllow?: readonly string[];
  /**
   * Your custom task types: a folder of modules, each exporting what `defineTask` returns (the
   * files `weft dev` and `weft validate` load from `tasks/`). Every module of the folder is bundled
   * into the functions by local esbuild at synth (test files and declarations aside). A relative
   * path is resolved against the working directory, as `cdk synth` runs in the project's folder.
   * @default - no custom task types: the built-ins, `http`, `lambda` and `emit`
   */
  readonly tasks?: string;
  /**
   * The folder the functions are bundled in (esbuild runs there and reads its lock file).
   * @default - the nearest folder at or above the working directory with a lock file
   */
  readonly projectRoot?: string;
  /**
   * Pre-built code per function instead of bundling the functions (and `tasks`) with esbuild.
   * Each must export `handler` from `index.mjs`. @default - bundle the entries with local esbuild
   */
  readonly code?: Partial<Record<WeftFunctionKind, lambda.Code>>;
}

export { TASK_MAX_RECEIVE_COUNT, VISIBILITY_TO_TIMEOUT_RATIO } from "../../shared/config/delivery.js";

function checkInteger(name: string, value: number, min: number, max: number): number {
  if (Token.isUnresolved(value)) return value;
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`weft: ${name} must be an integer from ${min} to ${max}, got ${value}`);
  }
  return value;
}

/**
 * A prop's value for the functions' setting `key`, checked as the functions will parse it (so the
 * construct never deploys a value they refuse); an absent prop gives the setting's own default.
 */
function settingFromProp<K extends PropSettingKey>(
  prop: string,
  key: K,
  value: number,
): NonNullable<Settings[K]>;
function settingFromProp<K extends PropSettingKey>(
  prop: string,
  key: K,
  value: number | undefined,
): Settings[K];
function settingFromProp<K extends PropSettingKey>(
  prop: string,
  key: K,
  value: number | undefined,
): Settings[K] {
  if (value !== undefined && Token.isUnresolved(value)) return value as Settings[K];
  return parseSetting(key, value === undefined ? undefined : String(value), `weft: ${prop}`);
}

/**
 * Everything weft needs in one construct: the DynamoDB table, the payload bucket, the task queue
 * with its DLQ, the lifecycle event bus, the four functions (api, worker, sweeper, dlq) with
 * least-privilege grants, the HTTP API, the sweeper's one-minute schedule, alarms and a dashboard.
 */
export class WeftOrchestrator extends Construct {
  readonly table: dynamodb.Table;
  /**
   * Payloads too large for their items (over 4 KiB): execution values under `ex/`, kept retentionDays
   * days from when each is written, and uploads under `up/` (POST /payloads), kept a day.
   */
  readonly payloadBucket: s3.Bucket;
  readonly taskQueue: sqs.Queue;
  readonly deadLetterQueue: sqs.Queue;
  readonly eventBus: events.EventBus;
  readonly api: apigwv2.HttpApi;
  /** Base URL of the API (its `$default` stage), ending in `/`. */
  readonly apiUrl: string;
  readonly apiAccessLogs: logs.LogGroup;
  readonly apiFunction: lambda.Function;
  readonly workerFunction: lambda.Function;
  readonly sweeperFunction: lambda.Function;
  readonly dlqFunction: lambda.Function;
  readonly functions: Readonly<Record<WeftFunctionKind, WeftFunction>>;
  readonly sweeperSchedule: events.Rule;
  readonly alarms: WeftAlarms;
  readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: WeftOrchestratorProps = {}) {
    super(scope, id);

    const leaseSeconds = checkInteger(
      "leaseDuration (seconds)",
      settingFromProp("leaseDuration", "leaseSeconds", props.leaseDuration?.toSeconds()),
      5,
      43_200,
    );
    const defaultMaxAttempts = settingFromProp(
      "defaultMaxAttempts",
      "defaultMaxAttempts",
      props.defaultMaxAttempts,
    );
    // Deployed, a finished execution expires after 30 days unless told otherwise (unset, it stays forever).
    const retentionDays = settingFromProp("retentionDays", "retentionDays", props.retentionDays ?? 30);
    const workerMaxConcurrency = checkInteger(
      "workerMaxConcurrency",
      props.workerMaxConcurrency ?? 50,
      2,
      1000,
    );
    const workerBatchSize = checkInteger("workerBatchSize", props.workerBatchSize ?? 10, 1, 10);
    const workerTimeout = props.workerTimeout ?? DEFAULT_FUNCTION_SETTINGS.worker.timeout;
    const workerTimeoutSeconds = settingFromProp(
      "workerTimeout",
      "workerTimeoutSeconds",
      workerTimeout.toSeconds(),
    );
    const sweepSeconds = {
      firstCheck: settingFromProp(
        "sweep.firstCheck",
        "sweepFirstCheckSeconds",
        props.sweep?.firstCheck?.toSeconds(),
      ),
      idle: settingFromProp("sweep.idle", "sweepIdleSeconds", props.sweep?.idle?.toSeconds()),
      grace: settingFromProp("sweep.grace", "sweepGraceSeconds", props.sweep?.grace?.toSeconds()),
    };
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    const tableDeletionProtection = props.tableDeletionProtection ?? true;
    const logRetention = props.logRetention ?? logs.RetentionDays.ONE_MONTH;
    const logLevel = props.logLevel ?? "INFO";
    const tracing = props.tracing ?? false;
    // The http task's allow-list, checked now as the functions will read it.
    const httpAllow = props.httpAllow && props.httpAllow.length > 0 ? props.httpAllow.join(",") : undefined;
    if (httpAllow !== undefined && !Token.isUnresolved(httpAllow))
      parseSetting("httpAllow", httpAllow, "weft: httpAllow");

    // ---- storage -------------------------------------------------------------------------------
    this.table = new dynamodb.Table(this, "Table", {
      partitionKey: { name: "pk", type: dynamodb.AttributeType.STRING },
      sortKey: { name: "sk", type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: tableDeletionProtection,
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      timeToLiveAttribute: ATTR.ttl,
      removalPolicy,
    });
    // The indexes come from the adapter's own key design, so the deployed table and the code agree.
    const stringKey = (name: string) => ({ name, type: dynamodb.AttributeType.STRING });
    // Keys only: listing reads the records, and no execution update (status included) costs an index write.
    const listing = { projectionType: dynamodb.ProjectionType.KEYS_ONLY };
    // A workflow's executions, newest first, over shards (keys.ts); all executions merge every workflow's.
    this.table.addGlobalSecondaryIndex({
      indexName: INDEX.byWorkflow,
      partitionKey: stringKey(ATTR.gsi1pk),
      sortKey: stringKey(ATTR.gsi1sk),
      ...listing,
    });
    // The sweeper's sparse due index: RUNNING executions by the time they should next be looked at.
    this.table.addGlobalSecondaryIndex({
      indexName: INDEX.due,
      partitionKey: stringKey(ATTR.gsi2pk),
      sortKey: stringKey(ATTR.gsi2sk),
      projectionType: dynamodb.ProjectionType.KEYS_ONLY,
    });

    // Payloads over 4 KiB (shared/domain/payload.ts). Keys are content-addressed, so no versioning:
    // a value is never overwritten with other bytes. The lifecycle rules use the prefixes and the
    // upload expiry the code uses.
    this.payloadBucket = new s3.Bucket(this, "PayloadBucket", {
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      lifecycleRules: [
        {
          // The same number of days as the table's TTL. S3 counts them from each object's creation,
          // the TTL from the execution's end: an execution running longer outlives its large values.
          id: "executions",
          prefix: EXECUTION_BLOB_PREFIX,
          expiration: Duration.days(retentionDays),
        },
        {
          // Uploads are copied into their execution when it is created or triggered.
          id: "uploads",
          prefix: UPLOAD_PREFIX,
          expiration: Duration.days(UPLOAD_EXPIRY_DAYS),
        },
        { id: "incomplete-multipart-uploads", abortIncompleteMultipartUploadAfter: Duration.days(1) },
      ],
      removalPolicy,
      // Emptied on removal only when the table that refers to its objects is deleted too (DESTROY
      // without deletion protection): else a stack deletion could empty it and leave the table.
      autoDeleteObjects: removalPolicy === RemovalPolicy.DESTROY && !tableDeletionProtection,
    });

    // ---- queues --------------------------------------------------------------------------------
    this.deadLetterQueue = new sqs.Queue(this, "DeadLetterQueue", {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
      // The DLQ consumer is its Lambda event source: same 6x rule as the task queue.
      visibilityTimeout: Duration.seconds(
        DEFAULT_FUNCTION_SETTINGS.dlq.timeout.toSeconds() * VISIBILITY_TO_TIMEOUT_RATIO,
      ),
    });
    this.taskQueue = new sqs.Queue(this, "TaskQueue", {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
      visibilityTimeout: Duration.seconds(workerTimeoutSeconds * VISIBILITY_TO_TIMEOUT_RATIO),
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: TASK_MAX_RECEIVE_COUNT },
    });

    // ---- lifecycle events ----------------------------------------------------------------------
    this.eventBus = new events.EventBus(this, "EventBus", {
      description: "weft lifecycle events (executions and nodes)",
    });

    // ---- functions -----------------------------------------------------------------------------
    // Every variable by its declaration in shared/config/settings.ts, where the runtime reads it too.
    // The DLQ's URL is not among them: only its event source reads the DLQ.
    const environment = deployedEnvironment({
      tableName: this.table.tableName,
      queueUrl: this.taskQueue.queueUrl,
      eventBusName: this.eventBus.eventBusName,
      payloadBucket: this.payloadBucket.bucketName,
      leaseSeconds,
      defaultMaxAttempts,
      retentionDays,
      workerTimeoutSeconds,
      sweepFirstCheckSeconds: sweepSeconds.firstCheck,
      sweepIdleSeconds: sweepSeconds.idle,
      sweepGraceSeconds: sweepSeconds.grace,
      httpAllow,
    });
    // Every function gets the task modules: the api checks params at submit, the worker runs them,
    // and the sweeper and the DLQ consumer build the same engine.
    const taskFiles = props.tasks === undefined ? [] : taskModuleFilesOf(props.tasks);
    let found: ReturnType<typeof findProjectRoot> | undefined;
    const project = () => {
      if (found === undefined) {
        found = findProjectRoot(
          props.projectRoot === undefined ? process.cwd() : path.resolve(props.projectRoot),
        );
        assertEsbuildInstalled(found.projectRoot);
      }
      return found;
    };
    const bundleOf = (kind: WeftFunctionKind) => {
      if (props.code?.[kind]) return {};
      const { projectRoot, lockFile } = project();
      const entry = writeFunctionEntry({ kind, projectRoot, scopePath: this.node.path, taskFiles });
      return { bundle: { entry, projectRoot, lockFile } };
    };
    const makeFunction = (
      kind: WeftFunctionKind,
      overrides: { memorySize?: number; timeout?: Duration } = {},
    ) => {
      const defaults = DEFAULT_FUNCTION_SETTINGS[kind];
      return new WeftFunction(this, `${kind[0]!.toUpperCase()}${kind.slice(1)}Function`, {
        kind,
        description: defaults.description,
        memorySize: overrides.memorySize ?? defaults.memorySize,
        timeout: overrides.timeout ?? defaults.timeout,
        environment,
        logLevel,
        tracing,
        logRetention,
        logRemovalPolicy: removalPolicy,
        ...(props.code?.[kind] ? { code: props.code[kind] } : {}),
        ...bundleOf(kind),
      });
    };
    const api = makeFunction("api");
    const worker = makeFunction("worker", {
      timeout: Duration.seconds(workerTimeoutSeconds),
      ...(props.workerMemorySize !== undefined ? { memorySize: props.workerMemorySize } : {}),
    });
    const sweeper = makeFunction("sweeper");
    const dlq = makeFunction("dlq");
    this.functions = { api, worker, sweeper, dlq };
    this.apiFunction = api.function;
    this.workerFunction = worker.function;
    this.sweeperFunction = sweeper.function;
    this.dlqFunction = dlq.function;

    // ---- least-privilege grants ----------------------------------------------------------------
    // Explicit actions per function, exactly what its code calls (infra/lib/grants.ts); data plane
    // only: nobody may delete or reconfigure the table. Only the dlq function's event source touches
    // the DLQ: terminal errors are recorded in the table directly by the worker.
    grantWeftAccess({
      table: this.table,
      taskQueue: this.taskQueue,
      eventBus: this.eventBus,
      payloadBucket: this.payloadBucket,
      functions: this.functions,
    });

    const invokable = props.invokableFunctionArns ?? [];
    if (invokable.length > 0) {
      worker.role.addToPrincipalPolicy(
        new iam.PolicyStatement({ actions: ["lambda:InvokeFunction"], resources: [...invokable] }),
      );
    }
    const extraBuses = props.extraEventBusArns ?? [];
    if (extraBuses.length > 0) {
      worker.role.addToPrincipalPolicy(
        new iam.PolicyStatement({ actions: ["events:PutEvents"], resources: [...extraBuses] }),
      );
    }

    // ---- secret references of the http task (secretArns / weft:secretArns) ----------------------
    // The worker resolves `{"secret": …}` header values: Secrets Manager secrets with GetSecretValue,
    // `ssm:` names with GetParameter (WithDecryption; a customer-managed KMS key needs its own
    // kms:Decrypt grant). Exactly the ARNs given; each action only on its own service's ARNs (an
    // unresolved token could be either, so it gets both).
    const secretArns = props.secretArns ?? [];
    const serviceOf = (arn: string) =>
      Token.isUnresolved(arn) ? "either" : (/^arn:[^:]+:(secretsmanager|ssm):/.exec(arn)?.[1] ?? "neither");
    for (const arn of secretArns) {
      if (serviceOf(arn) === "neither")
        throw new Error(`weft: secretArns must be Secrets Manager secret or SSM parameter ARNs, got ${arn}`);
    }
    const secretsManagerArns = secretArns.filter((arn) => serviceOf(arn) !== "ssm");
    const parameterArns = secretArns.filter((arn) => serviceOf(arn) !== "secretsmanager");
    if (secretsManagerArns.length > 0) {
      worker.role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          actions: ["secretsmanager:GetSecretValue"],
          resources: secretsManagerArns,
        }),
      );
    }
    if (parameterArns.length > 0) {
      worker.role.addToPrincipalPolicy(
        new iam.PolicyStatement({ actions: ["ssm:GetParameter"], resources: parameterArns }),
      );
    }

    // ---- event sources -------------------------------------------------------------------------
    // The worker consumes the task queue; the mapping's own calls are granted on that queue only.
    consumeQueue(worker, this.taskQueue, {
      batchSize: workerBatchSize,
      maxConcurrency: workerMaxConcurrency,
    });
    // The DLQ consumer records dead-lettered work; few at once is plenty.
    consumeQueue(dlq, this.deadLetterQueue, { batchSize: 10, maxConcurrency: 2 });

    // ---- sweeper schedule ----------------------------------------------------------------------
    this.sweeperSchedule = new events.Rule(this, "SweeperSchedule", {
      description: "Runs the weft sweeper every minute (backstop for leases, retries and waits)",
      schedule: events.Schedule.rate(Duration.minutes(1)),
      targets: [
        new targets.LambdaFunction(sweeper.function, {
          // A missed run is covered by the next one a minute later.
          retryAttempts: 2,
          maxEventAge: Duration.minutes(1),
        }),
      ],
    });

    // ---- HTTP API ------------------------------------------------------------------------------
    const httpApi = new WeftHttpApi(this, "Api", {
      handler: api.function,
      authorization: props.authorization ?? { kind: "iam" },
      throttle: props.apiThrottle ?? { rateLimit: 1000, burstLimit: 2000 },
      logRetention,
      logRemovalPolicy: removalPolicy,
    });
    this.api = httpApi.httpApi;
    this.apiUrl = httpApi.url;
    this.apiAccessLogs = httpApi.accessLogs;

    // ---- observability -------------------------------------------------------------------------
    this.alarms = new WeftAlarms(this, "Alarms", {
      taskQueue: this.taskQueue,
      deadLetterQueue: this.deadLetterQueue,
      api: this.api,
      apiFunction: api.function,
      workerFunction: worker.function,
      sweeperFunction: sweeper.function,
      dlqFunction: dlq.function,
      oldestTaskAgeThreshold: props.oldestTaskAgeAlarmThreshold ?? Duration.minutes(15),
      ...(props.alarmThresholds ? { thresholds: props.alarmThresholds } : {}),
      ...(props.alarmTopic ? { alarmTopic: props.alarmTopic } : {}),
    });
    this.dashboard = this.alarms.dashboard;

    acknowledgeWeftNagFindings(this.table, this.payloadBucket, { api, worker, sweeper, dlq });
  }
}
