/**
 * Stands the template's stateful resources up on the target, derived from the template alone: the
 * DynamoDB tables (key schema, GSIs, billing, TTL, point-in-time recovery, deletion protection), the
 * SQS queues (every attribute, RedrivePolicy resolved to the DLQ's ARN), the S3 buckets (encryption,
 * lifecycle, public access block, ownership) and the EventBridge buses. Every other resource gets
 * the physical id and attributes CloudFormation would give it (a function's ARN, a role's ARN …),
 * so the template's Ref / Fn::GetAtt / Fn::Join resolve everywhere to what was created.
 */
import { randomUUID } from "node:crypto";
import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DeleteTableCommand,
  DescribeTableCommand,
  UpdateContinuousBackupsCommand,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
} from "@aws-sdk/client-dynamodb";
import { CreateEventBusCommand, DeleteEventBusCommand } from "@aws-sdk/client-eventbridge";
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectsCommand,
  type LifecycleRule,
  ListObjectsV2Command,
  PutBucketEncryptionCommand,
  PutBucketLifecycleConfigurationCommand,
  PutBucketOwnershipControlsCommand,
  PutPublicAccessBlockCommand,
} from "@aws-sdk/client-s3";
import { CreateQueueCommand, DeleteQueueCommand, GetQueueAttributesCommand } from "@aws-sdk/client-sqs";
import {
  type PhysicalResource,
  type ResolveScope,
  referencedIds,
  resolveIntrinsics,
} from "../cfn/intrinsics.js";
import { physicalName, shortId } from "../cfn/names.js";
import { asList, type CfnResource, type CfnTemplate } from "../cfn/template.js";
import type { AdminClients } from "./target.js";

/** The resource types the rehearsal creates on the emulator. */
export const STOOD_UP_TYPES = [
  "AWS::DynamoDB::Table",
  "AWS::SQS::Queue",
  "AWS::S3::Bucket",
  "AWS::Events::EventBus",
] as const;

export interface Provisioned {
  scope: ResolveScope;
  account: string;
  created: Array<{ logicalId: string; type: string; physicalId: string }>;
  /** Properties of stood-up resources the emulator was not given (by logical id). */
  skippedProperties: Array<{ logicalId: string; property: string }>;
  teardown(): Promise<string[]>;
}

type Props = Record<string, unknown>;

function accountOf(arn: string): string | undefined {
  const account = arn.split(":")[4];
  return account && /^\d{12}$/.test(account) ? account : undefined;
}

/** Real resources in an order where every resource comes after those it refers to. */
function creationOrder(template: CfnTemplate): string[] {
  const real = Object.entries(template.Resources)
    .filter(([, r]) => (STOOD_UP_TYPES as readonly string[]).includes(r.Type))
    .map(([id]) => id);
  const realSet = new Set(real);
  const order: string[] = [];
  const visiting = new Set<string>();
  const visit = (id: string) => {
    if (order.includes(id)) return;
    if (visiting.has(id)) throw new Error(`a reference cycle through ${id}`);
    visiting.add(id);
    const resource = template.Resources[id] as CfnResource;
    const deps = new Set([...referencedIds(resource.Properties), ...asList(resource.DependsOn)]);
    for (const dep of deps) if (realSet.has(dep)) visit(dep);
    visiting.delete(id);
    order.push(id);
  };
  for (const id of real) visit(id);
  return order;
}

interface Creator {
  handled: readonly string[];
  create(
    logicalId: string,
    props: Props,
  ): Promise<{ resource: PhysicalResource; teardown: () => Promise<void> }>;
}

function tableCreator(admin: AdminClients, stackName: string): Creator {
  return {
    handled: [
      "TableName",
      "AttributeDefinitions",
      "KeySchema",
      "GlobalSecondaryIndexes",
      "LocalSecondaryIndexes",
      "BillingMode",
      "ProvisionedThroughput",
      "StreamSpecification",
      "SSESpecification",
      "DeletionProtectionEnabled",
      "TableClass",
      "TimeToLiveSpecification",
      "PointInTimeRecoverySpecification",
    ],
    async create(logicalId, props) {
      const name = (props.TableName as string | undefined) ?? physicalName(stackName, logicalId, 255);
      const sse = props.SSESpecification as
        | { SSEEnabled?: boolean; SSEType?: string; KMSMasterKeyId?: string }
        | undefined;
      const stream = props.StreamSpecification as { StreamViewType?: string } | undefined;
      const input = {
        TableName: name,
        AttributeDefinitions: props.AttributeDefinitions,
        KeySchema: props.KeySchema,
        GlobalSecondaryIndexes: props.GlobalSecondaryIndexes,
        LocalSecondaryIndexes: props.LocalSecondaryIndexes,
        BillingMode: props.BillingMode ?? "PROVISIONED",
        ProvisionedThroughput: props.ProvisionedThroughput,
        StreamSpecification: stream
          ? { StreamEnabled: true, StreamViewType: stream.StreamViewType }
          : undefined,
        SSESpecification: sse
          ? { Enabled: sse.SSEEnabled, SSEType: sse.SSEType, KMSMasterKeyId: sse.KMSMasterKeyId }
          : undefined,
        DeletionProtectionEnabled: props.DeletionProtectionEnabled,
        TableClass: props.TableClass,
      } as CreateTableCommandInput;
      await admin.dynamo.send(new CreateTableCommand(input));
      await waitUntilTableExists({ client: admin.dynamo, maxWaitTime: 60 }, { TableName: name });
      const ttl = props.TimeToLiveSpecification as { AttributeName?: string; Enabled?: boolean } | undefined;
      if (ttl?.Enabled && ttl.AttributeName) {
        await admin.dynamo.send(
          new UpdateTimeToLiveCommand({
            TableName: name,
            TimeToLiveSpecification: { AttributeName: ttl.AttributeName, Enabled: true },
          }),
        );
      }
      const pitr = props.PointInTimeRecoverySpecification as
        | { PointInTimeRecoveryEnabled?: boolean }
        | undefined;
      if (pitr?.PointInTimeRecoveryEnabled) {
        await admin.dynamo.send(
          new UpdateContinuousBackupsCommand({
            TableName: name,
            PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
          }),
        );
      }
      const described = await admin.dynamo.send(new DescribeTableCommand({ TableName: name }));
      const arn = described.Table?.TableArn;
      if (!arn) throw new Error(`the emulator gave table ${name} no ARN`);
      const attributes: Record<string, string> = { Arn: arn };
      if (described.Table?.LatestStreamArn) attributes.StreamArn = described.Table.LatestStreamArn;
      return {
        resource: { ref: name, attributes },
        teardown: async () => {
          if (props.DeletionProtectionEnabled) {
            await admin.dynamo.send(
              new UpdateTableCommand({ TableName: name, DeletionProtectionEnabled: false }),
            );
          }
          await admin.dynamo.send(new DeleteTableCommand({ TableName: name }));
        },
      };
    },
  };
}

function queueCreator(admin: AdminClients, stackName: string): Creator {
  return {
    handled: [
      "QueueName",
      "FifoQueue",
      "ContentBasedDeduplication",
      "DeduplicationScope",
      "FifoThroughputLimit",
      "DelaySeconds",
      "KmsMasterKeyId",
      "KmsDataKeyReusePeriodSeconds",
      "MaximumMessageSize",
      "MessageRetentionPeriod",
      "ReceiveMessageWaitTimeSeconds",
      "RedriveAllowPolicy",
      "RedrivePolicy",
      "SqsManagedSseEnabled",
      "VisibilityTimeout",
    ],
    async create(logicalId, props) {
      const fifo = props.FifoQueue === true || props.FifoQueue === "true";
      const name =
        (props.QueueName as string | undefined) ??
        (fifo ? `${physicalName(stackName, logicalId, 75)}.fifo` : physicalName(stackName, logicalId, 80));
      const attributes: Record<string, string> = {};
      for (const [key, value] of Object.entries(props)) {
        if (key === "QueueName" || key === "Tags" || value === undefined) continue;
        attributes[key] = typeof value === "object" ? JSON.stringify(value) : String(value);
      }
      const created = await admin.sqs.send(
        new CreateQueueCommand({ QueueName: name, Attributes: attributes }),
      );
      const url = created.QueueUrl;
      if (!url) throw new Error(`the emulator gave queue ${name} no URL`);
      const described = await admin.sqs.send(
        new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["QueueArn"] }),
      );
      const arn = described.Attributes?.QueueArn;
      if (!arn) throw new Error(`the emulator gave queue ${name} no ARN`);
      return {
        resource: { ref: url, attributes: { Arn: arn, QueueName: name, QueueUrl: url } },
        teardown: async () => {
          await admin.sqs.send(new DeleteQueueCommand({ QueueUrl: url }));
        },
      };
    },
  };
}

interface CfnLifecycleRule {
  Id?: string;
  Status: "Enabled" | "Disabled";
  Prefix?: string;
  ExpirationInDays?: number;
  AbortIncompleteMultipartUpload?: { DaysAfterInitiation: number };
}

function lifecycleRule(rule: CfnLifecycleRule): LifecycleRule {
  return {
    ...(rule.Id ? { ID: rule.Id } : {}),
    Status: rule.Status,
    Filter: { Prefix: rule.Prefix ?? "" },
    ...(rule.ExpirationInDays !== undefined ? { Expiration: { Days: rule.ExpirationInDays } } : {}),
    ...(rule.AbortIncompleteMultipartUpload
      ? {
          AbortIncompleteMultipartUpload: {
            DaysAfterInitiation: rule.AbortIncompleteMultipartUpload.DaysAfterInitiation,
          },
        }
      : {}),
  };
}

function bucketCreator(admin: AdminClients, stackName: string, region: string): Creator {
  return {
    handled: [
      "BucketName",
      "BucketEncryption",
      "LifecycleConfiguration",
      "PublicAccessBlockConfiguration",
      "OwnershipControls",
    ],
    async create(logicalId, props) {
      const name = (props.BucketName as string | undefined) ?? physicalName(stackName, logicalId, 63, true);
      await admin.s3.send(
        new CreateBucketCommand({
          Bucket: name,
          ...(region === "us-east-1"
            ? {}
            : { CreateBucketConfiguration: { LocationConstraint: region as never } }),
        }),
      );
      const encryption = props.BucketEncryption as
        | {
            ServerSideEncryptionConfiguration: Array<{
              ServerSideEncryptionByDefault?: { SSEAlgorithm: string; KMSMasterKeyID?: string };
              BucketKeyEnabled?: boolean;
            }>;
          }
        | undefined;
      if (encryption) {
        await admin.s3.send(
          new PutBucketEncryptionCommand({
            Bucket: name,
            ServerSideEncryptionConfiguration: {
              Rules: encryption.ServerSideEncryptionConfiguration.map((rule) => ({
                ...(rule.ServerSideEncryptionByDefault
                  ? { ApplyServerSideEncryptionByDefault: rule.ServerSideEncryptionByDefault as never }
                  : {}),
                ...(rule.BucketKeyEnabled === undefined ? {} : { BucketKeyEnabled: rule.BucketKeyEnabled }),
              })),
            },
          }),
        );
      }
      const lifecycle = props.LifecycleConfiguration as { Rules: CfnLifecycleRule[] } | undefined;
      if (lifecycle) {
        await admin.s3.send(
          new PutBucketLifecycleConfigurationCommand({
            Bucket: name,
            LifecycleConfiguration: { Rules: lifecycle.Rules.map(lifecycleRule) },
          }),
        );
      }
      const block = props.PublicAccessBlockConfiguration as Record<string, boolean> | undefined;
      if (block) {
        await admin.s3.send(
          new PutPublicAccessBlockCommand({ Bucket: name, PublicAccessBlockConfiguration: block }),
        );
      }
      const ownership = props.OwnershipControls as { Rules: Array<{ ObjectOwnership: string }> } | undefined;
      if (ownership) {
        await admin.s3.send(
          new PutBucketOwnershipControlsCommand({ Bucket: name, OwnershipControls: ownership as never }),
        );
      }
      return {
        resource: {
          ref: name,
          attributes: {
            Arn: `arn:aws:s3:::${name}`,
            DomainName: `${name}.s3.amazonaws.com`,
            RegionalDomainName: `${name}.s3.${region}.amazonaws.com`,
          },
        },
        teardown: async () => {
          for (;;) {
            const listed = await admin.s3.send(new ListObjectsV2Command({ Bucket: name }));
            const keys = (listed.Contents ?? []).flatMap((object) =>
              object.Key ? [{ Key: object.Key }] : [],
            );
            if (keys.length === 0) break;
            await admin.s3.send(new DeleteObjectsCommand({ Bucket: name, Delete: { Objects: keys } }));
          }
          await admin.s3.send(new DeleteBucketCommand({ Bucket: name }));
        },
      };
    },
  };
}

function busCreator(admin: AdminClients): Creator {
  return {
    handled: ["Name", "Description"],
    async create(logicalId, props) {
      const name = props.Name as string | undefined;
      if (!name) throw new Error(`the event bus ${logicalId} has no Name`);
      const created = await admin.events.send(
        new CreateEventBusCommand({
          Name: name,
          ...(props.Description ? { Description: String(props.Description) } : {}),
        }),
      );
      if (!created.EventBusArn) throw new Error(`the emulator gave bus ${name} no ARN`);
      return {
        resource: { ref: name, attributes: { Arn: created.EventBusArn, Name: name } },
        teardown: async () => {
          await admin.events.send(new DeleteEventBusCommand({ Name: name }));
        },
      };
    },
  };
}

/** What CloudFormation would name a resource the rehearsal does not create, and its attributes. */
function virtualResource(
  logicalId: string,
  resource: CfnResource,
  stackName: string,
  region: string,
  account: string,
): PhysicalResource {
  const props = resource.Properties ?? {};
  const named = (property: string, maxLength: number) =>
    typeof props[property] === "string"
      ? (props[property] as string)
      : physicalName(stackName, logicalId, maxLength);
  switch (resource.Type) {
    case "AWS::IAM::Role": {
      const name = named("RoleName", 64);
      const path = typeof props.Path === "string" ? props.Path : "/";
      return {
        ref: name,
        attributes: {
          Arn: `arn:aws:iam::${account}:role${path}${name}`,
          RoleId: `AROA${shortId(17).toUpperCase()}`,
        },
      };
    }
    case "AWS::Lambda::Function": {
      const name = named("FunctionName", 64);
      return { ref: name, attributes: { Arn: `arn:aws:lambda:${region}:${account}:function:${name}` } };
    }
    case "AWS::Logs::LogGroup": {
      const name = named("LogGroupName", 512);
      return { ref: name, attributes: { Arn: `arn:aws:logs:${region}:${account}:log-group:${name}:*` } };
    }
    case "AWS::ApiGatewayV2::Api": {
      const id = shortId();
      return {
        ref: id,
        attributes: { ApiId: id, ApiEndpoint: `https://${id}.execute-api.${region}.amazonaws.com` },
      };
    }
    case "AWS::Events::Rule": {
      const name = named("Name", 64);
      return { ref: name, attributes: { Arn: `arn:aws:events:${region}:${account}:rule/${name}` } };
    }
    case "AWS::Lambda::EventSourceMapping": {
      const id = randomUUID();
      return { ref: id, attributes: { Id: id } };
    }
    case "AWS::SNS::Topic": {
      const name = named("TopicName", 256);
      const arn = `arn:aws:sns:${region}:${account}:${name}`;
      return { ref: arn, attributes: { TopicArn: arn, TopicName: name } };
    }
    case "AWS::KMS::Key": {
      const id = randomUUID();
      return { ref: id, attributes: { Arn: `arn:aws:kms:${region}:${account}:key/${id}`, KeyId: id } };
    }
    default:
      return { ref: physicalName(stackName, logicalId, 128), attributes: {} };
  }
}

export async function provision(
  template: CfnTemplate,
  stackName: string,
  admin: AdminClients,
  region: string,
): Promise<Provisioned> {
  const resources = new Map<string, PhysicalResource>();
  const pseudo: Record<string, string> = {
    "AWS::Region": region,
    "AWS::Partition": "aws",
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::StackName": stackName,
  };
  const scope: ResolveScope = { resources, pseudo };
  const creators: Record<string, Creator> = {
    "AWS::DynamoDB::Table": tableCreator(admin, stackName),
    "AWS::SQS::Queue": queueCreator(admin, stackName),
    "AWS::S3::Bucket": bucketCreator(admin, stackName, region),
    "AWS::Events::EventBus": busCreator(admin),
  };
  const created: Provisioned["created"] = [];
  const skippedProperties: Provisioned["skippedProperties"] = [];
  const teardowns: Array<{ name: string; run: () => Promise<void> }> = [];
  let account: string | undefined;

  const teardown = async () => {
    const problems: string[] = [];
    for (const step of teardowns.reverse()) {
      try {
        await step.run();
      } catch (error) {
        problems.push(`${step.name}: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    return problems;
  };

  try {
    for (const logicalId of creationOrder(template)) {
      const resource = template.Resources[logicalId] as CfnResource;
      const creator = creators[resource.Type];
      if (!creator) continue;
      const props = resolveIntrinsics(resource.Properties ?? {}, scope) as Props;
      for (const property of Object.keys(props)) {
        if (property !== "Tags" && !creator.handled.includes(property))
          skippedProperties.push({ logicalId, property });
      }
      const { resource: physical, teardown: remove } = await creator.create(logicalId, props);
      resources.set(logicalId, physical);
      teardowns.push({ name: logicalId, run: remove });
      created.push({ logicalId, type: resource.Type, physicalId: physical.ref });
      account ??= accountOf(physical.attributes.Arn ?? "");
    }
  } catch (error) {
    await teardown();
    throw error;
  }
  if (!account) throw new Error("no created resource told the emulator's account id");
  pseudo["AWS::AccountId"] = account;
  pseudo["AWS::StackId"] = `arn:aws:cloudformation:${region}:${account}:stack/${stackName}/${randomUUID()}`;
  for (const [logicalId, resource] of Object.entries(template.Resources)) {
    if (!resources.has(logicalId))
      resources.set(logicalId, virtualResource(logicalId, resource, stackName, region, account));
  }
  return { scope, account, created, skippedProperties, teardown };
}
