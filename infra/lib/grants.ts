import { Names } from "aws-cdk-lib";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import type * as events from "aws-cdk-lib/aws-events";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as s3 from "aws-cdk-lib/aws-s3";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import { INDEX } from "../../shared/adapters/dynamo/keys.js";
import { EXECUTION_BLOB_PREFIX, UPLOAD_PREFIX } from "../../shared/domain/payload.js";
import type { WeftFunction, WeftFunctionKind } from "./functions.js";

/**
 * What each function's code calls, and nothing else (explicit actions, never a CDK `grant*` that
 * adds actions nobody calls). `npm run rehearse` runs the bundled handlers with exactly these
 * roles enforced and fails on a denied call or on a grant no call used (docs/rehearsal.md).
 *
 * DynamoDB, on the table (shared/adapters/dynamo): GetItem, Query (a workflow's latest version, an
 * execution's nodes and history, the dead letters, the worker registry, a pool's offers),
 * BatchGetItem (nodes, arrival shards, execution pages), UpdateItem (workers among the rest),
 * PutItem (executions, versions, the sweeper's lease, dead letters, the worker function's offers to
 * a pool),
 * ConditionCheckItem (a transaction's check: a cancellation fenced on its execution ending, a
 * reclaimed idempotency key), DeleteItem (the api: a redriven dead letter, a deregistered
 * worker, an offer a poll takes or withdraws; the worker and the sweeper: a map's fan-out
 * reservation given back, dynamo/fan-out.ts). TransactWriteItems is authorized as its items'
 * Put/Update/Delete/ConditionCheck. Queries of an index name that index.
 */
const TABLE_ACTIONS: Readonly<Record<WeftFunctionKind, readonly string[]>> = {
  api: ["GetItem", "Query", "BatchGetItem", "PutItem", "UpdateItem", "ConditionCheckItem", "DeleteItem"],
  worker: ["GetItem", "Query", "BatchGetItem", "PutItem", "UpdateItem", "ConditionCheckItem", "DeleteItem"],
  sweeper: ["GetItem", "Query", "BatchGetItem", "PutItem", "UpdateItem", "ConditionCheckItem", "DeleteItem"],
  dlq: ["GetItem", "Query", "BatchGetItem", "PutItem", "UpdateItem", "ConditionCheckItem"],
};

/** The indexes each function queries: the listings (api), the sweeper's due index. */
const INDEX_QUERIES: Readonly<Record<WeftFunctionKind, readonly string[]>> = {
  api: [INDEX.byWorkflow],
  worker: [],
  sweeper: [INDEX.due],
  dlq: [],
};

/**
 * Who sends task messages (SendMessageBatch is authorized as sqs:SendMessage): the api (entry nodes,
 * redrive), the worker (children, retries), the sweeper (resends), and the dlq function: a dead
 * letter at a map's item ends that item, whose lane goes on (the next item's message, or the map's
 * check when it was the last), and a dead-lettered attempt whose node is queued for its next one
 * sends that attempt's message (engine/dead-letters.ts).
 */
const TASK_SENDERS: readonly WeftFunctionKind[] = ["api", "worker", "sweeper", "dlq"];

/** What a Lambda SQS event source mapping calls with the function's role. */
const EVENT_SOURCE_ACTIONS = ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"];

export interface WeftGrantTargets {
  table: dynamodb.ITable;
  taskQueue: sqs.IQueue;
  eventBus: events.IEventBus;
  payloadBucket: s3.IBucket;
  functions: Readonly<Record<WeftFunctionKind, WeftFunction>>;
}

/** Grants every function exactly the calls its code makes (see the tables above). */
export function grantWeftAccess(targets: WeftGrantTargets): void {
  const { table, taskQueue, eventBus, payloadBucket, functions } = targets;
  for (const [kind, fn] of Object.entries(functions) as Array<[WeftFunctionKind, WeftFunction]>) {
    fn.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: TABLE_ACTIONS[kind].map((action) => `dynamodb:${action}`),
        resources: [table.tableArn],
      }),
    );
    const indexes = INDEX_QUERIES[kind];
    if (indexes.length > 0) {
      fn.role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          actions: ["dynamodb:Query"],
          resources: indexes.map((index) => `${table.tableArn}/index/${index}`),
        }),
      );
    }
    if (TASK_SENDERS.includes(kind)) {
      fn.role.addToPrincipalPolicy(
        new iam.PolicyStatement({ actions: ["sqs:SendMessage"], resources: [taskQueue.queueArn] }),
      );
    }
    // Lifecycle events: whoever starts, ends or redrives an execution publishes them.
    fn.role.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: ["events:PutEvents"], resources: [eventBus.eventBusArn] }),
    );
  }

  // Payloads, by prefix and by the calls each function makes (shared/adapters/s3/blobs.ts; S3's
  // HeadObject is authorized by s3:GetObject). Never a delete: the lifecycle rules expire objects.
  const executionBlobs = payloadBucket.arnForObjects(`${EXECUTION_BLOB_PREFIX}*`);
  const uploads = payloadBucket.arnForObjects(`${UPLOAD_PREFIX}*`);
  // Execution values (ex/): written and read by whoever saves or loads a large value: the worker
  // (task inputs and outputs, the `merge` nodes it runs), the sweeper (the `merge` nodes it runs
  // when it drives a propagation a crash cut short) and the api (inputs, and the presigned GET URLs
  // of GET /executions/{id}).
  for (const fn of [functions.api, functions.worker, functions.sweeper]) {
    fn.role.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: ["s3:GetObject", "s3:PutObject"], resources: [executionBlobs] }),
    );
  }
  // Uploads (up/): POST /payloads presigns a PUT with the api's own role, which S3 authorizes as a
  // PutObject by that role; creating the execution then reads the upload (HeadObject, GetObject).
  functions.api.role.addToPrincipalPolicy(
    new iam.PolicyStatement({ actions: ["s3:GetObject", "s3:PutObject"], resources: [uploads] }),
  );
  // Without s3:ListBucket, S3 answers 403 instead of 404 for a missing key, and an upload that
  // never came or expired would be a server error rather than a 400. S3 checks ListBucket for that
  // with the key as s3:prefix, so limiting it to uploads lists nothing else.
  functions.api.role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      actions: ["s3:ListBucket"],
      resources: [payloadBucket.bucketArn],
      conditions: { StringLike: { "s3:prefix": [UPLOAD_PREFIX, `${UPLOAD_PREFIX}*`] } },
    }),
  );
  // The dlq function needs none: recording a poison message fails its node and the execution and
  // cancels the rest (DeadLetters.recordPoison, Propagation.afterFailure); nothing runs or loads.
}

export interface SqsConsumerProps {
  batchSize: number;
  maxConcurrency: number;
}

/**
 * An SQS event source mapping with ReportBatchItemFailures, and the three calls the mapping makes
 * with the function's role — where the L2 SqsEventSource would also grant ChangeMessageVisibility
 * and GetQueueUrl, which nothing calls. Same construct id as SqsEventSource, so the mapping's
 * logical id does not change.
 */
export function consumeQueue(fn: WeftFunction, queue: sqs.IQueue, props: SqsConsumerProps): void {
  fn.function.addEventSourceMapping(`SqsEventSource:${Names.nodeUniqueId(queue.node)}`, {
    eventSourceArn: queue.queueArn,
    batchSize: props.batchSize,
    reportBatchItemFailures: true,
    maxConcurrency: props.maxConcurrency,
  });
  fn.role.addToPrincipalPolicy(
    new iam.PolicyStatement({ actions: EVENT_SOURCE_ACTIONS, resources: [queue.queueArn] }),
  );
}
