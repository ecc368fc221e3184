/**
 * Where the rehearsal's AWS resources live: a moto started on a free loopback port for this run
 * (tools/emulators, which serializes its DynamoDB requests), or an emulator already running at a
 * given endpoint (e.g. LocalStack). The admin clients here play the operator: they create the
 * resources and drive the compressions; the functions never use them.
 */
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { EventBridgeClient } from "@aws-sdk/client-eventbridge";
import { S3Client } from "@aws-sdk/client-s3";
import { SQSClient } from "@aws-sdk/client-sqs";
import { startMoto } from "../../tools/emulators/moto.js";

export const REHEARSAL_REGION = "us-east-1";

/** Credentials for the emulator: fake, and never read from the environment or a profile. */
export const FAKE_CREDENTIALS = {
  accessKeyId: "ASIAREHEARSALFAKEKEY",
  secretAccessKey: "rehearsal-fake-secret-access-key",
  sessionToken: "rehearsal-fake-session-token",
} as const;

export interface AdminClients {
  dynamo: DynamoDBClient;
  sqs: SQSClient;
  s3: S3Client;
  events: EventBridgeClient;
  destroy(): void;
}

export interface Target {
  kind: "moto" | "endpoint";
  endpoint: string;
  region: string;
  admin: AdminClients;
  stop(): Promise<void>;
}

export function adminClients(endpoint: string, region: string): AdminClients {
  const config = { endpoint, region, credentials: FAKE_CREDENTIALS, maxAttempts: 3 };
  const dynamo = new DynamoDBClient(config);
  const sqs = new SQSClient(config);
  const s3 = new S3Client({ ...config, forcePathStyle: true });
  const events = new EventBridgeClient(config);
  return {
    dynamo,
    sqs,
    s3,
    events,
    destroy() {
      for (const client of [dynamo, sqs, s3, events]) client.destroy();
    },
  };
}

export async function startTarget(endpoint: string | undefined): Promise<Target> {
  const region = REHEARSAL_REGION;
  if (endpoint !== undefined) {
    const admin = adminClients(endpoint, region);
    return { kind: "endpoint", endpoint, region, admin, stop: async () => admin.destroy() };
  }
  const moto = await startMoto();
  const admin = adminClients(moto.endpoint, region);
  return {
    kind: "moto",
    endpoint: moto.endpoint,
    region,
    admin,
    stop: async () => {
      admin.destroy();
      await moto.stop();
    },
  };
}
