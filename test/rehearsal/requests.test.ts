/**
 * Request → (action, resource ARN) for each service the functions call. The requests are the real
 * wire requests of AWS SDK v3 (serialized and signed by the SDK, captured before they are sent), so
 * the parsers are checked against what the bundled handlers actually send.
 */
import {
  BatchGetItemCommand,
  DynamoDBClient,
  GetItemCommand,
  QueryCommand,
  TransactWriteItemsCommand,
} from "@aws-sdk/client-dynamodb";
import { EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import {
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import type { HttpRequest } from "@smithy/types";
import { describe, expect, it } from "vitest";
import {
  type AwsHttpRequest,
  accessKeyOf,
  credentialScope,
  parseAwsRequest,
} from "../../rehearsal/iam/requests/index.js";

const ENDPOINT = "http://127.0.0.1:4599";
const config = {
  endpoint: ENDPOINT,
  region: "eu-west-1",
  credentials: { accessKeyId: "ASIATESTKEY", secretAccessKey: "secret", sessionToken: "token" },
  maxAttempts: 1,
};
const SCOPE = { account: "123456789012", defaultRegion: "us-east-1" };
const TABLE = "arn:aws:dynamodb:eu-west-1:123456789012:table/Weft-Table";
const QUEUE_URL = `${ENDPOINT}/123456789012/Weft-Tasks`;
const QUEUE = "arn:aws:sqs:eu-west-1:123456789012:Weft-Tasks";

class Captured extends Error {
  constructor(readonly request: HttpRequest) {
    super("captured");
  }
}

function toWire(request: HttpRequest): AwsHttpRequest {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(request.query ?? {})) {
    for (const item of Array.isArray(value) ? value : [value])
      if (item !== null && item !== undefined) query.append(key, item);
  }
  const search = query.toString();
  const body = request.body;
  return {
    method: request.method,
    url: `${request.path}${search ? `?${search}` : ""}`,
    headers: Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k.toLowerCase(), v])),
    body:
      typeof body === "string"
        ? Buffer.from(body)
        : body instanceof Uint8Array
          ? Buffer.from(body.buffer, body.byteOffset, body.byteLength)
          : Buffer.alloc(0),
  };
}

/** The request `client` would send for `command`: serialized and signed, never sent. */
async function wire(
  client: { send: (c: never) => Promise<unknown>; middlewareStack: { add: (...a: never[]) => void } },
  command: unknown,
) {
  const stack = client.middlewareStack as unknown as {
    add(m: () => (args: { request: HttpRequest }) => never, o: { step: string; priority: string }): void;
  };
  stack.add(
    () => (args) => {
      throw new Captured(args.request);
    },
    { step: "deserialize", priority: "low" },
  );
  try {
    await client.send(command as never);
  } catch (error) {
    if (error instanceof Captured) return toWire(error.request);
    throw error;
  }
  throw new Error("nothing captured");
}

const dynamo = () => new DynamoDBClient(config);
const sqs = () => new SQSClient(config);
const s3 = () => new S3Client({ ...config, forcePathStyle: true });
const events = () => new EventBridgeClient(config);

describe("the credential scope", () => {
  it("gives the service, region and access key of a signed request", async () => {
    const request = await wire(
      dynamo(),
      new GetItemCommand({ TableName: "Weft-Table", Key: { pk: { S: "a" } } }),
    );
    expect(credentialScope(request)).toEqual({ service: "dynamodb", region: "eu-west-1" });
    expect(accessKeyOf(request)).toBe("ASIATESTKEY");
  });
});

describe("DynamoDB", () => {
  it("checks an item call on the table and a Query of an index on that index", async () => {
    const get = parseAwsRequest(
      await wire(dynamo(), new GetItemCommand({ TableName: "Weft-Table", Key: { pk: { S: "a" } } })),
      SCOPE,
    );
    expect(get).toMatchObject({
      service: "dynamodb",
      operation: "GetItem",
      checks: [{ action: "dynamodb:GetItem", resource: TABLE }],
    });
    const query = parseAwsRequest(
      await wire(
        dynamo(),
        new QueryCommand({
          TableName: "Weft-Table",
          IndexName: "gsi2",
          KeyConditionExpression: "gsi2pk = :p",
          ExpressionAttributeValues: { ":p": { S: "x" } },
        }),
      ),
      SCOPE,
    );
    expect(query.checks).toEqual([{ action: "dynamodb:Query", resource: `${TABLE}/index/gsi2` }]);
  });

  it("checks a transaction per item (Put, Update, ConditionCheck) and a batch per table", async () => {
    const transaction = parseAwsRequest(
      await wire(
        dynamo(),
        new TransactWriteItemsCommand({
          TransactItems: [
            { Put: { TableName: "Weft-Table", Item: { pk: { S: "a" } } } },
            {
              Update: {
                TableName: "Weft-Table",
                Key: { pk: { S: "b" } },
                UpdateExpression: "SET x = :x",
                ExpressionAttributeValues: { ":x": { N: "1" } },
              },
            },
            {
              ConditionCheck: {
                TableName: "Other",
                Key: { pk: { S: "c" } },
                ConditionExpression: "attribute_not_exists(pk)",
              },
            },
          ],
        }),
      ),
      SCOPE,
    );
    expect(transaction.operation).toBe("TransactWriteItems");
    expect(transaction.checks).toEqual([
      { action: "dynamodb:PutItem", resource: TABLE },
      { action: "dynamodb:UpdateItem", resource: TABLE },
      {
        action: "dynamodb:ConditionCheckItem",
        resource: "arn:aws:dynamodb:eu-west-1:123456789012:table/Other",
      },
    ]);
    const batch = parseAwsRequest(
      await wire(
        dynamo(),
        new BatchGetItemCommand({ RequestItems: { "Weft-Table": { Keys: [{ pk: { S: "a" } }] } } }),
      ),
      SCOPE,
    );
    expect(batch.checks).toEqual([{ action: "dynamodb:BatchGetItem", resource: TABLE }]);
  });
});

describe("SQS (JSON protocol, as SDK v3 speaks it)", () => {
  it("checks batch operations as their single forms, on the queue's ARN from its URL", async () => {
    const send = parseAwsRequest(
      await wire(
        sqs(),
        new SendMessageBatchCommand({ QueueUrl: QUEUE_URL, Entries: [{ Id: "0", MessageBody: "{}" }] }),
      ),
      SCOPE,
    );
    expect(send).toMatchObject({
      protocol: "json",
      operation: "SendMessageBatch",
      checks: [{ action: "sqs:SendMessage", resource: QUEUE }],
    });
    const remove = parseAwsRequest(
      await wire(
        sqs(),
        new DeleteMessageBatchCommand({ QueueUrl: QUEUE_URL, Entries: [{ Id: "0", ReceiptHandle: "r" }] }),
      ),
      SCOPE,
    );
    expect(remove.checks).toEqual([{ action: "sqs:DeleteMessage", resource: QUEUE }]);
    const receive = parseAwsRequest(
      await wire(sqs(), new ReceiveMessageCommand({ QueueUrl: QUEUE_URL, MaxNumberOfMessages: 10 })),
      SCOPE,
    );
    expect(receive.checks).toEqual([{ action: "sqs:ReceiveMessage", resource: QUEUE }]);
    const attributes = parseAwsRequest(
      await wire(sqs(), new GetQueueAttributesCommand({ QueueUrl: QUEUE_URL })),
      SCOPE,
    );
    expect(attributes.checks).toEqual([{ action: "sqs:GetQueueAttributes", resource: QUEUE }]);
  });

  it("checks GetQueueUrl on the ARN the queue name makes", async () => {
    const url = parseAwsRequest(
      await wire(sqs(), new GetQueueUrlCommand({ QueueName: "Weft-Tasks" })),
      SCOPE,
    );
    expect(url.checks).toEqual([{ action: "sqs:GetQueueUrl", resource: QUEUE }]);
  });

  it("reads the query protocol too: Action in the form body, the queue from QueueUrl or the path", () => {
    const request = (body: string, url = "/") => ({
      method: "POST",
      url,
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        authorization:
          "AWS4-HMAC-SHA256 Credential=AKID/20260101/eu-west-1/sqs/aws4_request, SignedHeaders=host, Signature=00",
      },
      body: Buffer.from(body),
    });
    const byParam = parseAwsRequest(
      request(`Action=SendMessageBatch&QueueUrl=${encodeURIComponent(QUEUE_URL)}&Version=2012-11-05`),
      SCOPE,
    );
    expect(byParam).toMatchObject({
      protocol: "query",
      checks: [{ action: "sqs:SendMessage", resource: QUEUE }],
    });
    const byPath = parseAwsRequest(
      request("Action=ReceiveMessage&MaxNumberOfMessages=1", "/123456789012/Weft-Tasks"),
      SCOPE,
    );
    expect(byPath.checks).toEqual([{ action: "sqs:ReceiveMessage", resource: QUEUE }]);
  });
});

describe("EventBridge", () => {
  it("checks PutEvents per entry on its bus (name, ARN, or the default bus), with source and detail-type", async () => {
    const put = parseAwsRequest(
      await wire(
        events(),
        new PutEventsCommand({
          Entries: [
            { EventBusName: "weft-bus", Source: "weft", DetailType: "Execution Started", Detail: "{}" },
            {
              EventBusName: "arn:aws:events:eu-west-1:999999999999:event-bus/partner",
              Source: "weft",
              DetailType: "x",
              Detail: "{}",
            },
            { Source: "weft", DetailType: "y", Detail: "{}" },
          ],
        }),
      ),
      SCOPE,
    );
    expect(put.checks).toEqual([
      {
        action: "events:PutEvents",
        resource: "arn:aws:events:eu-west-1:123456789012:event-bus/weft-bus",
        context: { "events:source": "weft", "events:detail-type": "Execution Started" },
      },
      {
        action: "events:PutEvents",
        resource: "arn:aws:events:eu-west-1:999999999999:event-bus/partner",
        context: { "events:source": "weft", "events:detail-type": "x" },
      },
      {
        action: "events:PutEvents",
        resource: "arn:aws:events:eu-west-1:123456789012:event-bus/default",
        context: { "events:source": "weft", "events:detail-type": "y" },
      },
    ]);
  });
});

describe("S3", () => {
  const BUCKET = "arn:aws:s3:::weft-payloads";

  it("checks GetObject, HeadObject (as s3:GetObject) and PutObject on the object's ARN, path-style", async () => {
    const get = parseAwsRequest(
      await wire(s3(), new GetObjectCommand({ Bucket: "weft-payloads", Key: "ex/e1/abc.json" })),
      SCOPE,
    );
    expect(get).toMatchObject({
      service: "s3",
      operation: "GetObject",
      checks: [{ action: "s3:GetObject", resource: `${BUCKET}/ex/e1/abc.json` }],
    });
    const head = parseAwsRequest(
      await wire(s3(), new HeadObjectCommand({ Bucket: "weft-payloads", Key: "up/t 1+é" })),
      SCOPE,
    );
    expect(head).toMatchObject({
      operation: "HeadObject",
      checks: [{ action: "s3:GetObject", resource: `${BUCKET}/up/t 1+é` }],
    });
    const put = parseAwsRequest(
      await wire(s3(), new PutObjectCommand({ Bucket: "weft-payloads", Key: "ex/e1/def.json", Body: "{}" })),
      SCOPE,
    );
    expect(put.checks).toEqual([{ action: "s3:PutObject", resource: `${BUCKET}/ex/e1/def.json` }]);
  });

  it("checks a listing as s3:ListBucket on the bucket with s3:prefix", async () => {
    const list = parseAwsRequest(
      await wire(s3(), new ListObjectsV2Command({ Bucket: "weft-payloads", Prefix: "up/" })),
      SCOPE,
    );
    expect(list.checks).toEqual([
      {
        action: "s3:ListBucket",
        resource: BUCKET,
        context: { "s3:prefix": "up/", "s3:delimiter": undefined, "s3:max-keys": undefined },
      },
    ]);
  });

  it("checks a presigned PUT like the PUT, and knows when it expires", async () => {
    const client = s3();
    const url = new URL(
      await getSignedUrl(
        client,
        new PutObjectCommand({ Bucket: "weft-payloads", Key: "up/token-1", ContentLength: 10 }),
        {
          expiresIn: 900,
        },
      ),
    );
    const parsed = parseAwsRequest(
      {
        method: "PUT",
        url: `${url.pathname}${url.search}`,
        headers: { host: url.host },
        body: Buffer.alloc(10),
      },
      SCOPE,
    );
    expect(parsed.checks).toEqual([{ action: "s3:PutObject", resource: `${BUCKET}/up/token-1` }]);
    expect(parsed.region).toBe("eu-west-1");
    expect(parsed.expiresAt).toBeGreaterThan(Date.now() + 800_000);
    expect(parsed.expiresAt).toBeLessThanOrEqual(Date.now() + 901_000);
  });

  it("reads virtual-hosted requests (LocalStack's style) and copies (a read of the source too)", () => {
    const hosted = parseAwsRequest(
      {
        method: "PUT",
        url: "/ex/e1/new.json",
        headers: {
          host: "weft-payloads.s3.localhost.localstack.cloud:4566",
          "x-amz-copy-source": "/weft-payloads/up/t1",
          authorization:
            "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00",
        },
        body: Buffer.alloc(0),
      },
      SCOPE,
    );
    expect(hosted).toMatchObject({ operation: "CopyObject" });
    expect(hosted.checks).toEqual([
      { action: "s3:PutObject", resource: `${BUCKET}/ex/e1/new.json` },
      { action: "s3:GetObject", resource: `${BUCKET}/up/t1` },
    ]);
  });
});

describe("what it does not understand", () => {
  it("refuses a request to a service it does not model", () => {
    const request = {
      method: "POST",
      url: "/2015-03-31/functions/f/invocations",
      headers: {
        authorization:
          "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/lambda/aws4_request, SignedHeaders=host, Signature=00",
      },
      body: Buffer.alloc(0),
    };
    expect(() => parseAwsRequest(request, SCOPE)).toThrow(/lambda/);
  });
});
