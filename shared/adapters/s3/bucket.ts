/** Creates the payload bucket when missing (the local runtime and tests; the CDK construct deploys its own). */
import {
  BucketAlreadyOwnedByYou,
  CreateBucketCommand,
  HeadBucketCommand,
  PutBucketLifecycleConfigurationCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { EXECUTION_BLOB_PREFIX, UPLOAD_PREFIX } from "../../domain/payload.js";

/** Uploads (`POST /payloads`) are copied into their execution when it is created: a day is plenty. */
export const UPLOAD_EXPIRY_DAYS = 1;

export async function ensureBucket(
  client: S3Client,
  bucket: string,
  options: { retentionDays?: number } = {},
): Promise<void> {
  try {
    await client.send(new HeadBucketCommand({ Bucket: bucket }));
  } catch {
    try {
      await client.send(new CreateBucketCommand({ Bucket: bucket }));
    } catch (error) {
      if (!(error instanceof BucketAlreadyOwnedByYou)) throw error;
    }
  }
  await client.send(
    new PutBucketLifecycleConfigurationCommand({
      Bucket: bucket,
      LifecycleConfiguration: {
        Rules: [
          {
            ID: "uploads",
            Status: "Enabled",
            Filter: { Prefix: UPLOAD_PREFIX },
            Expiration: { Days: UPLOAD_EXPIRY_DAYS },
          },
          ...(options.retentionDays === undefined
            ? []
            : [
                {
                  ID: "executions",
                  Status: "Enabled" as const,
                  Filter: { Prefix: EXECUTION_BLOB_PREFIX },
                  Expiration: { Days: options.retentionDays },
                },
              ]),
        ],
      },
    }),
  );
}
