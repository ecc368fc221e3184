/** Per-node figures from the counts, and the cost model per million nodes at AWS list prices. */
import type { WorkloadRun } from "./run.js";

/** us-east-1, on-demand list prices. */
export const PRICES = {
  dynamoWritePerMillionUnits: 0.625,
  dynamoReadPerMillionUnits: 0.125,
  sqsPerMillionRequests: 0.4,
  lambdaPerMillionRequests: 0.2,
  lambdaPerGbSecondArm64: 0.0000133334,
  lambdaMemoryGb: 1,
  eventBridgePerMillionEvents: 1.0,
  stepFunctionsStandardPerMillionTransitions: 25,
} as const;

export const FORMULAS = {
  dynamoWrite: "(table + index write units) per node × $0.625",
  dynamoRead: "read units per node × $0.125",
  sqs: "billed SQS requests per node × $0.40 (send/delete batch calls and receives that returned messages, 1 per started 64 KB; empty long polls excluded: they cost per hour of polling, not per node)",
  lambdaRequests: "worker invocations (batches) per node × $0.20",
  lambdaDuration:
    "worker invocations per node × mean billed duration (s, 1 ms granularity) × 1 GB × $0.0000133334 × 10^6",
  eventBridge: "EventBridge events per node × $1.00",
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
  /** Engine-side AWS calls (DynamoDB, SQS sends, EventBridge puts) per worker invocation. */
  callsPerInvocation: number;
}

export interface Cost {
  dynamoWrite: number;
  dynamoRead: number;
  sqs: number;
  lambdaRequests: number;
  lambdaDuration: number;
  eventBridge: number;
  total: number;
  stepFunctionsStandard: number;
  cheaperThanStepFunctionsBy: number;
  meanWorkerDurationMs: number;
  /** The same, with the Lambda duration modeled at AWS latency instead of measured (see FORMULAS). */
  lambdaDurationAtAwsLatency: number;
  totalAtAwsLatency: number;
}

/** Typical in-region latency of one DynamoDB/SQS/EventBridge call, for lambdaDurationAtAwsLatency. */
export const AWS_CALL_MS = 6;

export function perNode(run: WorkloadRun): PerNode {
  const n = Math.max(1, run.completedNodes);
  const { ops, ddb, sqs, events, worker } = run.calls;
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
    callsPerInvocation:
      worker.invocations === 0
        ? 0
        : (sum([...READ_OPS, ...WRITE_OPS], calls) +
            calls("SQS.SendMessageBatch") +
            calls("SQS.SendMessage") +
            calls("EventBridge.PutEvents")) /
          worker.invocations,
  };
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
  const total = dynamoWrite + dynamoRead + sqs + lambdaRequests + lambdaDuration + eventBridge;
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
    total,
    stepFunctionsStandard,
    cheaperThanStepFunctionsBy: total > 0 ? stepFunctionsStandard / total : 0,
    meanWorkerDurationMs: meanMs,
    lambdaDurationAtAwsLatency,
    totalAtAwsLatency: total - lambdaDuration + lambdaDurationAtAwsLatency,
  };
}
