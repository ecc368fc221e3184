import { Stack, Validations } from "aws-cdk-lib";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import type { WeftFunction } from "./functions.js";

/**
 * cdk-nag (AwsSolutions) findings weft acknowledges, each with the reason it is acceptable.
 * These use CDK's own `Validations` API, so they travel with the construct into any app that runs
 * cdk-nag, without the construct depending on cdk-nag. Each acknowledgement is scoped to the one
 * construct it concerns, never to the stack; the infra tests check that nothing else is suppressed.
 */
export function acknowledgeWeftNagFindings(table: dynamodb.Table, functions: readonly WeftFunction[]): void {
  const tableLogicalId = Stack.of(table).resolve(
    Stack.of(table).getLogicalId(table.node.defaultChild as dynamodb.CfnTable),
  );
  for (const fn of functions) {
    Validations.of(fn).acknowledge(
      {
        id: "AwsSolutions-IAM5[Resource::*]",
        reason:
          "Only the X-Ray statement added by Tracing.ACTIVE (xray:PutTraceSegments, xray:PutTelemetryRecords) uses " +
          "Resource '*': those X-Ray actions support no resource-level permissions. The infra tests assert no other " +
          "statement in these roles has a wildcard resource.",
      },
      {
        id: `AwsSolutions-IAM5[Resource::<${tableLogicalId}.Arn>/index/*]`,
        reason:
          "grantReadWriteData on weft's own table adds '<table ARN>/index/*' so the functions can Query its GSIs " +
          "(gsi1 and gsi3: execution listings, gsi2: the sweeper's due index). The wildcard covers only the indexes " +
          "of this one table; no other table is reachable.",
      },
      {
        id: "AwsSolutions-L1",
        reason:
          "weft targets and is tested on Node.js 22 (nodejs22.x, supported by Lambda until 2027). The runtime is " +
          "pinned on purpose so a CDK upgrade never changes it silently; moving to nodejs24.x is a deliberate change.",
      },
    );
  }
}
