import { Duration, RemovalPolicy } from "aws-cdk-lib";
import { Match } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { UPLOAD_EXPIRY_DAYS } from "../../../shared/adapters/s3/bucket.js";
import { EXECUTION_BLOB_PREFIX, UPLOAD_PREFIX } from "../../../shared/domain/payload.js";
import { baseSynth, KINDS, resource, resourcesOfType, synthWeft } from "../fixture.js";

export function storageSuite(): void {
  const base = baseSynth();
  const custom = synthWeft(
    {
      weft: {
        workerTimeout: Duration.minutes(2),
        tableDeletionProtection: false,
        removalPolicy: RemovalPolicy.DESTROY,
        retentionDays: 7,
      },
    },
    "WeftCustom",
  );
  // DESTROY with the table still protected: the bucket must not be emptied on removal.
  const destroyProtected = synthWeft(
    { weft: { removalPolicy: RemovalPolicy.DESTROY } },
    "WeftDestroyProtected",
  );

  describe("DynamoDB table", () => {
    const tables = resourcesOfType(base.json, "AWS::DynamoDB::Table");

    it("is a single on-demand table keyed by pk/sk", () => {
      expect(tables).toHaveLength(1);
      base.template.hasResourceProperties("AWS::DynamoDB::Table", {
        BillingMode: "PAY_PER_REQUEST",
        KeySchema: [
          { AttributeName: "pk", KeyType: "HASH" },
          { AttributeName: "sk", KeyType: "RANGE" },
        ],
        AttributeDefinitions: Match.arrayWith([
          { AttributeName: "pk", AttributeType: "S" },
          { AttributeName: "sk", AttributeType: "S" },
        ]),
      });
    });

    it("has point-in-time recovery, encryption at rest and deletion protection by default", () => {
      base.template.hasResourceProperties("AWS::DynamoDB::Table", {
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        SSESpecification: { SSEEnabled: true },
        DeletionProtectionEnabled: true,
      });
      base.template.hasResource("AWS::DynamoDB::Table", {
        DeletionPolicy: "Retain",
        UpdateReplacePolicy: "Retain",
      });
    });

    it("lets deletion protection and the removal policy be configured", () => {
      custom.template.hasResourceProperties("AWS::DynamoDB::Table", { DeletionProtectionEnabled: false });
      custom.template.hasResource("AWS::DynamoDB::Table", { DeletionPolicy: "Delete" });
    });

    it("expires items through the expiresAt TTL attribute", () => {
      base.template.hasResourceProperties("AWS::DynamoDB::Table", {
        TimeToLiveSpecification: { AttributeName: "expiresAt", Enabled: true },
      });
    });

    it("has the adapter's indexes: gsi1 (the sharded listing) and gsi2 (sparse due index), keys only", () => {
      const listingProjection = { ProjectionType: "KEYS_ONLY" };
      base.template.hasResourceProperties("AWS::DynamoDB::Table", {
        GlobalSecondaryIndexes: Match.arrayEquals([
          {
            IndexName: "gsi1",
            KeySchema: [
              { AttributeName: "gsi1pk", KeyType: "HASH" },
              { AttributeName: "gsi1sk", KeyType: "RANGE" },
            ],
            Projection: listingProjection,
          },
          {
            IndexName: "gsi2",
            KeySchema: [
              { AttributeName: "gsi2pk", KeyType: "HASH" },
              { AttributeName: "gsi2sk", KeyType: "RANGE" },
            ],
            Projection: { ProjectionType: "KEYS_ONLY" },
          },
        ]),
        AttributeDefinitions: Match.arrayWith([
          { AttributeName: "gsi1pk", AttributeType: "S" },
          { AttributeName: "gsi1sk", AttributeType: "S" },
          { AttributeName: "gsi2pk", AttributeType: "S" },
          { AttributeName: "gsi2sk", AttributeType: "S" },
        ]),
      });
    });
  });

  describe("payload bucket", () => {
    const buckets = resourcesOfType(base.json, "AWS::S3::Bucket");
    const bucketId = base.logicalId(base.stack.weft.payloadBucket);
    const bucket = resource(base.json, bucketId);
    const rules = (synth: typeof base) => {
      const bucketProps = resource(synth.json, synth.logicalId(synth.stack.weft.payloadBucket)).Properties!;
      return (bucketProps.LifecycleConfiguration as { Rules: unknown[] }).Rules;
    };

    it("is the only bucket, encrypted with S3-managed keys", () => {
      expect(buckets.map(([id]) => id)).toEqual([bucketId]);
      expect(bucket.Properties?.BucketEncryption).toEqual({
        ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: "AES256" } }],
      });
    });

    it("blocks all public access and disables ACLs (bucket owner enforced)", () => {
      expect(bucket.Properties?.PublicAccessBlockConfiguration).toEqual({
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      });
      expect(bucket.Properties?.OwnershipControls).toEqual({
        Rules: [{ ObjectOwnership: "BucketOwnerEnforced" }],
      });
    });

    it("denies every request not made over TLS, and its policy grants nothing", () => {
      const policies = resourcesOfType(base.json, "AWS::S3::BucketPolicy");
      expect(policies).toHaveLength(1);
      const policy = policies[0]![1].Properties!;
      expect(policy.Bucket).toEqual({ Ref: bucketId });
      const bucketArn = { "Fn::GetAtt": [bucketId, "Arn"] };
      expect((policy.PolicyDocument as { Statement: unknown[] }).Statement).toEqual([
        {
          Effect: "Deny",
          Action: "s3:*",
          Principal: { AWS: "*" },
          Condition: { Bool: { "aws:SecureTransport": "false" } },
          Resource: [bucketArn, { "Fn::Join": ["", [bucketArn, "/*"]] }],
        },
      ]);
    });

    it("expires execution values with the execution retention and uploads after a day", () => {
      const expected = (retentionDays: number) => [
        {
          Id: "executions",
          Prefix: EXECUTION_BLOB_PREFIX,
          ExpirationInDays: retentionDays,
          Status: "Enabled",
        },
        { Id: "uploads", Prefix: UPLOAD_PREFIX, ExpirationInDays: UPLOAD_EXPIRY_DAYS, Status: "Enabled" },
        {
          Id: "incomplete-multipart-uploads",
          AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
          Status: "Enabled",
        },
      ];
      expect(rules(base)).toEqual(expected(30));
      expect(rules(custom)).toEqual(expected(7));
      // The same number of days the functions give DynamoDB's TTL.
      for (const synth of [base, custom]) {
        const env = (
          resource(synth.json, synth.functionId("worker")).Properties!.Environment as {
            Variables: Record<string, unknown>;
          }
        ).Variables;
        expect(rules(synth)[0]).toMatchObject({ ExpirationInDays: Number(env.WEFT_RETENTION_DAYS) });
      }
      // As docs/deploy.md describes the bucket.
      expect([EXECUTION_BLOB_PREFIX, UPLOAD_PREFIX, UPLOAD_EXPIRY_DAYS]).toEqual(["ex/", "up/", 1]);
    });

    it("is not versioned (keys are content addresses) and has no notifications or website", () => {
      expect(bucket.Properties?.VersioningConfiguration).toBeUndefined();
      expect(bucket.Properties?.NotificationConfiguration).toBeUndefined();
      expect(bucket.Properties?.WebsiteConfiguration).toBeUndefined();
    });

    it("is retained like the table by default, and emptied on removal only when the table goes too", () => {
      expect(bucket.DeletionPolicy).toBe("Retain");
      expect(bucket.UpdateReplacePolicy).toBe("Retain");
      base.template.resourceCountIs("Custom::S3AutoDeleteObjects", 0);

      custom.template.hasResource("AWS::S3::Bucket", { DeletionPolicy: "Delete" });
      custom.template.resourceCountIs("Custom::S3AutoDeleteObjects", 1);
      custom.template.hasResourceProperties("Custom::S3AutoDeleteObjects", {
        BucketName: { Ref: custom.logicalId(custom.stack.weft.payloadBucket) },
      });

      destroyProtected.template.hasResource("AWS::S3::Bucket", { DeletionPolicy: "Delete" });
      destroyProtected.template.hasResourceProperties("AWS::DynamoDB::Table", {
        DeletionProtectionEnabled: true,
      });
      destroyProtected.template.resourceCountIs("Custom::S3AutoDeleteObjects", 0);
    });

    it("is named to every function in WEFT_PAYLOAD_BUCKET", () => {
      for (const kind of KINDS) {
        const env = (
          resource(base.json, base.functionId(kind)).Properties!.Environment as { Variables: object }
        ).Variables;
        expect(env, kind).toMatchObject({ WEFT_PAYLOAD_BUCKET: { Ref: bucketId } });
      }
    });
  });

  describe("task queue and DLQ", () => {
    const taskId = base.logicalId(base.stack.weft.taskQueue);
    const dlqId = base.logicalId(base.stack.weft.deadLetterQueue);
    const task = resource(base.json, taskId);
    const dlq = resource(base.json, dlqId);

    it("redrives a task to the DLQ after 5 receives", () => {
      expect(task.Properties?.RedrivePolicy).toEqual({
        deadLetterTargetArn: { "Fn::GetAtt": [dlqId, "Arn"] },
        maxReceiveCount: 5,
      });
    });

    it("sets the visibility timeout to at least 6x the worker timeout", () => {
      const workerTimeout = resource(base.json, base.functionId("worker")).Properties?.Timeout as number;
      expect(workerTimeout).toBe(300);
      expect(task.Properties?.VisibilityTimeout).toBeGreaterThanOrEqual(6 * workerTimeout);
      expect(task.Properties?.VisibilityTimeout).toBeLessThanOrEqual(43_200);

      const customQueue = resource(custom.json, custom.logicalId(custom.stack.weft.taskQueue));
      const customTimeout = resource(custom.json, custom.functionId("worker")).Properties?.Timeout;
      expect(customTimeout).toBe(120);
      expect(customQueue.Properties?.VisibilityTimeout).toBe(720);
    });

    it("gives the DLQ a visibility timeout of at least 6x its consumer's timeout", () => {
      const consumerTimeout = resource(base.json, base.functionId("dlq")).Properties?.Timeout as number;
      expect(dlq.Properties?.VisibilityTimeout).toBeGreaterThanOrEqual(6 * consumerTimeout);
    });

    it("encrypts both queues with SQS-managed keys", () => {
      expect(task.Properties?.SqsManagedSseEnabled).toBe(true);
      expect(dlq.Properties?.SqsManagedSseEnabled).toBe(true);
    });

    it("keeps dead-lettered work for 14 days", () => {
      expect(dlq.Properties?.MessageRetentionPeriod).toBe(14 * 24 * 3600);
      expect(task.Properties?.MessageRetentionPeriod).toBe(14 * 24 * 3600);
    });

    it("denies non-TLS access to both queues", () => {
      for (const id of [taskId, dlqId]) {
        base.template.hasResourceProperties("AWS::SQS::QueuePolicy", {
          Queues: [{ Ref: id }],
          PolicyDocument: {
            Statement: Match.arrayWith([
              Match.objectLike({
                Effect: "Deny",
                Action: "sqs:*",
                Principal: { AWS: "*" },
                Condition: { Bool: { "aws:SecureTransport": "false" } },
              }),
            ]),
          },
        });
      }
    });

    it("rejects settings SQS and Lambda cannot honour", () => {
      expect(() => synthWeft({ weft: { workerTimeout: Duration.minutes(16) } }, "TooLong")).toThrow(
        /workerTimeout/,
      );
      expect(() => synthWeft({ weft: { workerMaxConcurrency: 1 } }, "TooFew")).toThrow(
        /workerMaxConcurrency/,
      );
      expect(() => synthWeft({ weft: { defaultMaxAttempts: 0 } }, "NoAttempts")).toThrow(
        /defaultMaxAttempts/,
      );
    });
  });

  describe("lifecycle event bus", () => {
    it("is a custom bus whose name every function receives", () => {
      const buses = resourcesOfType(base.json, "AWS::Events::EventBus");
      expect(buses).toHaveLength(1);
      const busId = buses[0]![0];
      for (const kind of ["api", "worker", "sweeper", "dlq"] as const) {
        const env = (
          resource(base.json, base.functionId(kind)).Properties!.Environment as { Variables: object }
        ).Variables;
        expect(env).toMatchObject({ WEFT_EVENT_BUS_NAME: { Ref: busId } });
      }
    });
  });

  describe("stack outputs", () => {
    it("exports the API URL, table, queues and bus", () => {
      expect(Object.keys(base.json.Outputs ?? {}).sort()).toEqual([
        "ApiUrl",
        "DeadLetterQueueUrl",
        "EventBusName",
        "TableName",
        "TaskQueueUrl",
      ]);
      base.template.hasOutput("TableName", { Value: { Ref: base.logicalId(base.stack.weft.table) } });
      base.template.hasOutput("TaskQueueUrl", { Value: { Ref: base.logicalId(base.stack.weft.taskQueue) } });
      base.template.hasOutput("DeadLetterQueueUrl", {
        Value: { Ref: base.logicalId(base.stack.weft.deadLetterQueue) },
      });
      base.template.hasOutput("EventBusName", { Value: { Ref: base.logicalId(base.stack.weft.eventBus) } });
      base.template.hasOutput("ApiUrl", {
        Value: {
          "Fn::Join": ["", [{ "Fn::GetAtt": [base.logicalId(base.stack.weft.api), "ApiEndpoint"] }, "/"]],
        },
      });
    });
  });
}
