/**
 * The S3 client and the blob store on it. The deployed functions load this module by `import()` on
 * their first payload over the inline threshold (function-engine.ts); the local runtime, the bench
 * and the tests make every client at once (createCoreAwsClients).
 */
import { S3Client } from "@aws-sdk/client-s3";
import { S3BlobStore } from "../adapters/s3/blobs.js";
import type { EnginePorts } from "../ports.js";
import {
  type AwsClientOptions,
  awsPortsWith,
  type CoreAwsClients,
  clientMaker,
  createInitAwsClients,
} from "./aws-clients.js";
import type { WeftConfig } from "./env.js";

export function createS3Client(options: AwsClientOptions = {}): S3Client {
  // Emulators on an IP address serve buckets by path (there is no bucket.127.0.0.1 host).
  return clientMaker(options)(
    "s3",
    (config) => new S3Client({ ...config, forcePathStyle: config.endpoint !== undefined }),
  );
}

/** The payload bucket's blob store on a client of its own. */
export function createS3BlobStore(config: WeftConfig, options: AwsClientOptions = {}): S3BlobStore {
  return new S3BlobStore(createS3Client(options), config.payloadBucket);
}

export function createCoreAwsClients(options: AwsClientOptions = {}): CoreAwsClients {
  const init = createInitAwsClients(options);
  const s3 = createS3Client(options);
  return {
    ...init,
    s3,
    destroy() {
      init.destroy();
      s3.destroy();
    },
  };
}

/** The engine's ports on DynamoDB, SQS, EventBridge and S3. */
export function createAwsPorts(
  config: WeftConfig,
  clients: CoreAwsClients = createCoreAwsClients(
    config.endpoint === undefined ? {} : { endpoint: config.endpoint },
  ),
): EnginePorts {
  return awsPortsWith(config, clients, new S3BlobStore(clients.s3, config.payloadBucket));
}
