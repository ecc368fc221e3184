/**
 * The emulators the tests (and anything else) run against, chosen by kind, with one endpoint per service:
 * - "moto": one moto serving DynamoDB, SQS, EventBridge and S3.
 * - "dynamodb-local": AWS's DynamoDB Local for DynamoDB, fauxqs for SQS, and a moto beside them for
 *   EventBridge and S3 (neither of the other two serves them).
 * - "localstack": LocalStack serving all four, in a container started through testcontainers (needs a
 *   Docker engine and LOCALSTACK_AUTH_TOKEN; stops at once without an engine, see localstack.ts).
 */
import { startDynamoDbLocal } from "./dynamodb-local.js";
import { startFauxqs } from "./fauxqs.js";
import { startLocalStack } from "./localstack.js";
import { startMoto } from "./moto.js";
import type { RunningEmulator } from "./process.js";

export const EMULATOR_KINDS = ["moto", "dynamodb-local", "localstack"] as const;
export type EmulatorKind = (typeof EMULATOR_KINDS)[number];

export interface ServiceEndpoints {
  dynamodb: string;
  sqs: string;
  eventbridge: string;
  s3: string;
}

export interface EmulatorSet {
  kind: EmulatorKind;
  endpoints: ServiceEndpoints;
  stop(): Promise<void>;
}

export function isEmulatorKind(value: string): value is EmulatorKind {
  return (EMULATOR_KINDS as readonly string[]).includes(value);
}

export async function startEmulatorSet(kind: EmulatorKind): Promise<EmulatorSet> {
  if (kind === "moto" || kind === "localstack") {
    const emulator = kind === "moto" ? await startMoto() : await startLocalStack();
    const endpoint = emulator.endpoint;
    return {
      kind,
      endpoints: { dynamodb: endpoint, sqs: endpoint, eventbridge: endpoint, s3: endpoint },
      stop: emulator.stop,
    };
  }
  const started = await Promise.allSettled([startDynamoDbLocal(), startFauxqs(), startMoto()]);
  const running = started.flatMap((result) => (result.status === "fulfilled" ? [result.value] : []));
  const stopAll = async () => {
    await Promise.all(running.map((emulator: RunningEmulator) => emulator.stop()));
  };
  const [dynamodb, sqs, moto] = started;
  if (dynamodb?.status !== "fulfilled" || sqs?.status !== "fulfilled" || moto?.status !== "fulfilled") {
    await stopAll();
    const failed = started.flatMap((result) => (result.status === "rejected" ? [result.reason] : []));
    throw new AggregateError(failed, `the ${kind} emulators did not start: ${failed.map(String).join("; ")}`);
  }
  return {
    kind,
    endpoints: {
      dynamodb: dynamodb.value.endpoint,
      sqs: sqs.value.endpoint,
      eventbridge: moto.value.endpoint,
      s3: moto.value.endpoint,
    },
    stop: stopAll,
  };
}
