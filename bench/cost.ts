/** Per-node figures from the counts, and the cost model per million nodes at AWS list prices. */
import { PRICES } from "../shared/domain/prices.js";
import type { WorkloadRun } from "./run.js";

// One place for prices: shared/domain/prices.ts (the execution cost model applies them too).
export { PRICES };

export const FORMULAS = {
  dynamoWrite: "(table + index write units) per node × $0.625",
  dynamoRead: "read units per node × $0.125",
  sqs: "billed SQS requests per node × $0.40 (send/delete batch calls and receives that returned messages, 1 per started 64 KB; empty long polls excluded: they cost per hour of polling, not per node)",
  lambdaRequests: "worker invocations (batches) per node × $0.20",
  lambdaDuration:
    "worker invocations per node × mean billed duration (s, 1 ms granularity) × 1 GB × $0.0000133334 × 10^6",
  eventBridge: "EventBridge events per node × $1.00",
  s3: "S3 PUT-class requests per node × $5.00 + GET-class requests (GET, HEAD) per node × $0.40, as measured (the bench runs one engine: its blob cache, like one warm Lambda container's, serves every blob it wrote)",
  s3ColdCache:
    "alternative S3 GET cost with no blob cached anywhere: every node run loads every blob of its input and its dependencies' outputs, GET each × $0.40 (an upper bound; AWS lies between)",
  storage:
    "not in total: stored bytes per node (DynamoDB: the execution's items as last written + 100 bytes each, measured on moto only; S3: the distinct blobs written) × 10^6 / 2^30 GB × ($0.25 DynamoDB | $0.023 S3) per GB-month × 30 days' retention (720 h / 730 h a month); totalWithStorage adds it",
  lambdaDurationAtAwsLatency:
    "alternative to the measured duration (emulator latency inflates it): worker invocations per node × (engine AWS calls per invocation × 6 ms, summed as if none overlapped; no CPU time) × 1 GB × $0.0000133334 × 10^6",
  stepFunctions: "1 state transition per node × $25 (a lower bound for Step Functions Standard)",
} as const;

const READ_OPS = ["GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems"];
const WRITE_OPS = ["PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"];

export interface PerNode {
  ddbReadCalls: number;
  ddbWriteCalls: number;
  ddbTransactItems: number;
  ddbTableWriteUnits: number;
  ddbIndexWriteUnits: number;
  ddbWriteUnits: number;
  ddbReadUnits: number;
  sqsSendCalls: number;
  sqsSendEntries: number;
  sqsReceives: number;
  sqsEmptyReceives: number;
  sqsDeleteCalls: number;
  sqsBilledRequests: number;
  eventBridgePutCalls: number;
  eventBridgeEvents: number;
  workerInvocations: number;
  /** S3 requests per node by price class, measured, and GETs with no cache (Storage.coldBlobGets). */
  s3PutRequests: number;
  s3GetRequests: number;
  s3ColdGetRequests: number;
  /** Bytes kept per node until the retention expires them: S3 blobs, and DynamoDB items (moto only). */
  s3StoredBytes: number;
  ddbStoredBytes?: number;
  /** Engine-side AWS calls (DynamoDB, SQS sends, EventBridge puts, S3) per worker invocation. */
  callsPerInvocation: number;
}

export interface Cost {
  dynamoWrite: number;
  dynamoRead: number;
  sqs: number;
  lambdaRequests: number;
  lambdaDuration: number;
  eventBridge: number;
  s3Put: number;
  s3Get: number;
  /** s3Put + s3Get: in `total`. */
  s3: number;
  /** The S3 GET cost with no blob cached anywhere (FORMULAS.s3ColdCache), instead of s3Get. */
  s3GetColdCache: number;
  total: number;
  /** `total` with s3GetColdCache instead of s3Get. */
  totalColdCache: number;
  /** Storage over the retention (not in `total`); DynamoDB's NaN where items were not sized. */
  ddbStorage: number;
  s3Storage: number;
  totalWithStorage: number;
  stepFunctionsStandard: number;
  cheaperThanStepFunctionsBy: number;
  meanWorkerDurationMs: number;
  /** The same, with the Lambda duration modeled at AWS latency instead of measured (see FORMULAS). */
  lambdaDurationAtAwsLatency: number;
  totalAtAwsLatency: number;
}

/** Typical in-region latency of one DynamoDB/SQS/EventBridge/S3 call, for lambdaDurationAtAwsLatency. */
export const AWS_CALL_MS = 6;

export function perNode(run: WorkloadRun): PerNode {
  const n = Math.max(1, run.completedNodes);
  const { ops, ddb, sqs, events, s3, worker } = run.calls;
  const calls = (name: string) => ops[name]?.calls ?? 0;
  const items = (name: string) => ops[name]?.items ?? 0;
  const sum = (names: string[], f: (name: string) => number) =>
    names.reduce((s, name) => s + f(`DynamoDB.${name}`), 0);
  return {
    ddbReadCalls: sum(READ_OPS, calls) / n,
    ddbWriteCalls: sum(WRITE_OPS, calls) / n,
    ddbTransactItems: items("DynamoDB.TransactWriteItems") / n,
    ddbTableWriteUnits: ddb.writeUnits / n,
    ddbIndexWriteUnits: ddb.indexWriteUnits / n,
    ddbWriteUnits: (ddb.writeUnits + ddb.indexWriteUnits) / n,
    ddbReadUnits: ddb.readUnits / n,
    sqsSendCalls: (calls("SQS.SendMessageBatch") + calls("SQS.SendMessage")) / n,
    sqsSendEntries: (items("SQS.SendMessageBatch") + calls("SQS.SendMessage")) / n,
    sqsReceives: calls("SQS.ReceiveMessage") / n,
    sqsEmptyReceives: sqs.emptyReceives / n,
    sqsDeleteCalls: (calls("SQS.DeleteMessageBatch") + calls("SQS.DeleteMessage")) / n,
    sqsBilledRequests: sqs.billedRequests / n,
    eventBridgePutCalls: calls("EventBridge.PutEvents") / n,
    eventBridgeEvents: events.billedEvents / n,
    workerInvocations: worker.invocations / n,
    s3PutRequests: s3.putRequests / n,
    s3GetRequests: s3.getRequests / n,
    s3ColdGetRequests: run.storage.coldBlobGets / n,
    s3StoredBytes: run.storage.s3Bytes / n,
    ...(run.storage.ddbBytes === undefined ? {} : { ddbStoredBytes: run.storage.ddbBytes / n }),
    callsPerInvocation:
      worker.invocations === 0
        ? 0
        : (sum([...READ_OPS, ...WRITE_OPS], calls) +
            calls("SQS.SendMessageBatch") +
            calls("SQS.SendMessage") +
            calls("EventBridge.PutEvents") +
            s3.putRequests +
            s3.getRequests) /
          worker.invocations,
  };
}

/** Dollars per million nodes of keeping `bytesPerNode` for the retention at `perGbMonth`. */
export function storageCost(bytesPerNode: number, perGbMonth: number): number {
  const months = (PRICES.retentionDays * 24) / PRICES.hoursPerMonth;
  return ((bytesPerNode * 1e6) / 2 ** 30) * perGbMonth * months;
}

/** Dollars per million nodes. */
export function cost(per: PerNode, workerDurationsMs: readonly number[]): Cost {
  const billed = workerDurationsMs.map((ms) => Math.max(1, Math.ceil(ms)));
  const meanMs = billed.length === 0 ? 0 : billed.reduce((a, b) => a + b, 0) / billed.length;
  const dynamoWrite = per.ddbWriteUnits * PRICES.dynamoWritePerMillionUnits;
  const dynamoRead = per.ddbReadUnits * PRICES.dynamoReadPerMillionUnits;
  const sqs = per.sqsBilledRequests * PRICES.sqsPerMillionRequests;
  const lambdaRequests = per.workerInvocations * PRICES.lambdaPerMillionRequests;
  const lambdaDuration =
    per.workerInvocations * (meanMs / 1000) * PRICES.lambdaMemoryGb * PRICES.lambdaPerGbSecondArm64 * 1e6;
  const eventBridge = per.eventBridgeEvents * PRICES.eventBridgePerMillionEvents;
  const s3Put = per.s3PutRequests * PRICES.s3PutPerMillionRequests;
  const s3Get = per.s3GetRequests * PRICES.s3GetPerMillionRequests;
  const s3 = s3Put + s3Get;
  const s3GetColdCache = per.s3ColdGetRequests * PRICES.s3GetPerMillionRequests;
  const total = dynamoWrite + dynamoRead + sqs + lambdaRequests + lambdaDuration + eventBridge + s3;
  const ddbStorage =
    per.ddbStoredBytes === undefined
      ? Number.NaN
      : storageCost(per.ddbStoredBytes, PRICES.dynamoStoragePerGbMonth);
  const s3Storage = storageCost(per.s3StoredBytes, PRICES.s3StoragePerGbMonth);
  const lambdaDurationAtAwsLatency =
    per.workerInvocations *
    ((per.callsPerInvocation * AWS_CALL_MS) / 1000) *
    PRICES.lambdaMemoryGb *
    PRICES.lambdaPerGbSecondArm64 *
    1e6;
  const stepFunctionsStandard = PRICES.stepFunctionsStandardPerMillionTransitions;
  return {
    dynamoWrite,
    dynamoRead,
    sqs,
    lambdaRequests,
    lambdaDuration,
    eventBridge,
    s3Put,
    s3Get,
    s3,
    s3GetColdCache,
    total,
    totalColdCache: total - s3Get + s3GetColdCache,
    ddbStorage,
    s3Storage,
    totalWithStorage: total + ddbStorage + s3Storage,
    stepFunctionsStandard,
    cheaperThanStepFunctionsBy: total > 0 ? stepFunctionsStandard / total : 0,
    meanWorkerDurationMs: meanMs,
    lambdaDurationAtAwsLatency,
    totalAtAwsLatency: total - lambdaDuration + lambdaDurationAtAwsLatency,
  };
}
