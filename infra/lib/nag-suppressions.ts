import { Stack, Validations } from "aws-cdk-lib";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import type * as s3 from "aws-cdk-lib/aws-s3";
import { EXECUTION_BLOB_PREFIX, UPLOAD_PREFIX } from "../../shared/domain/payload.js";
import type { WeftFunction, WeftFunctionKind } from "./functions.js";

/** The functions that read and write execution values (`ex/`) and uploads (`up/`); see the orchestrator. */
const EXECUTION_BLOB_USERS: readonly WeftFunctionKind[] = ["api", "worker", "sweeper"];
const UPLOAD_USERS: readonly WeftFunctionKind[] = ["api"];

/**
 * cdk-nag (AwsSolutions) findings weft acknowledges, each with the reason it is acceptable.
 * These use CDK's own `Validations` API, so they travel with the construct into any app that runs
 * cdk-nag, without the construct depending on cdk-nag. Each acknowledgement is scoped to the one
 * construct it concerns, never to the stack; the infra tests check that nothing else is suppressed.
 */
export function acknowledgeWeftNagFindings(
  table: dynamodb.Table,
  payloadBucket: s3.Bucket,
  functions: Readonly<Record<WeftFunctionKind, WeftFunction>>,
): void {
  const stack = Stack.of(table);
  const bucketLogicalId = stack.resolve(stack.getLogicalId(payloadBucket.node.defaultChild as s3.CfnBucket));
  for (const [kind, fn] of Object.entries(functions) as Array<[WeftFunctionKind, WeftFunction]>) {
    Validations.of(fn).acknowledge(
      {
        id: "AwsSolutions-IAM5[Resource::*]",
        reason:
          "Only the X-Ray statement added by Tracing.ACTIVE (xray:PutTraceSegments, xray:PutTelemetryRecords) uses " +
          "Resource '*': those X-Ray actions support no resource-level permissions. The infra tests assert no other " +
          "statement in these roles has a wildcard resource.",
      },
      {
        id: "AwsSolutions-L1",
        reason:
          "weft targets and is tested on Node.js 22 (nodejs22.x, supported by Lambda until 2027). The runtime is " +
          "pinned on purpose so a CDK upgrade never changes it silently; moving to nodejs24.x is a deliberate change.",
      },
    );
    if (EXECUTION_BLOB_USERS.includes(kind)) {
      Validations.of(fn).acknowledge({
        id: `AwsSolutions-IAM5[Resource::<${bucketLogicalId}.Arn>/${EXECUTION_BLOB_PREFIX}*]`,
        reason:
          `s3:GetObject and s3:PutObject (nothing else) on '${EXECUTION_BLOB_PREFIX}*' of weft's own payload bucket: ` +
          `execution values are stored under keys made at run time ('${EXECUTION_BLOB_PREFIX}<executionId>/<sha256>.json'), ` +
          "so only the prefix can be named. Uploads and any other key of the bucket are outside it.",
      });
    }
    if (UPLOAD_USERS.includes(kind)) {
      Validations.of(fn).acknowledge({
        id: `AwsSolutions-IAM5[Resource::<${bucketLogicalId}.Arn>/${UPLOAD_PREFIX}*]`,
        reason:
          `s3:GetObject and s3:PutObject (nothing else) on '${UPLOAD_PREFIX}*' of weft's own payload bucket: POST ` +
          `/payloads presigns a PUT of a new random key '${UPLOAD_PREFIX}<token>' with this role, and creating the ` +
          "execution reads it back, so only the prefix can be named. Execution values are outside it.",
      });
    }
  }
  Validations.of(payloadBucket).acknowledge({
    id: "AwsSolutions-S1",
    reason:
      "No server access logs on the payload bucket: they would need a second bucket (itself unlogged), and every " +
      "request to this one is made by a weft function role or with a URL the api function presigned for 15 minutes " +
      "after an authorized API call, which the API's access log and the function logs already record. Public access " +
      "is blocked and TLS enforced. For object-level audit, enable CloudTrail S3 data events on this bucket (they " +
      "also record requests made with presigned URLs).",
  });
}
