/** The SQS event source's records and its ReportBatchItemFailures decisions. */
import type { SQSRecord } from "aws-lambda";
import { describe, expect, it } from "vitest";
import { recordsToDelete, toSqsRecord } from "../../rehearsal/sources/sqs-records.js";

const ARN = "arn:aws:sqs:us-east-1:123456789012:tasks";

describe("toSqsRecord", () => {
  it("builds the record Lambda hands the function, attributes included", () => {
    const record = toSqsRecord(
      {
        MessageId: "m1",
        ReceiptHandle: "r1",
        Body: '{"a":1}',
        MD5OfBody: "abc",
        Attributes: {
          ApproximateReceiveCount: "3",
          SentTimestamp: "1700000000000",
          SenderId: "AIDA",
          ApproximateFirstReceiveTimestamp: "1700000000500",
        },
        MessageAttributes: { kind: { DataType: "String", StringValue: "task" } },
      },
      ARN,
    );
    expect(record).toEqual({
      messageId: "m1",
      receiptHandle: "r1",
      body: '{"a":1}',
      attributes: {
        ApproximateReceiveCount: "3",
        SentTimestamp: "1700000000000",
        SenderId: "AIDA",
        ApproximateFirstReceiveTimestamp: "1700000000500",
      },
      messageAttributes: {
        kind: { stringValue: "task", stringListValues: [], binaryListValues: [], dataType: "String" },
      },
      md5OfBody: "abc",
      eventSource: "aws:sqs",
      eventSourceARN: ARN,
      awsRegion: "us-east-1",
    });
  });

  it("computes md5OfBody when the response has none", () => {
    expect(toSqsRecord({ MessageId: "m", ReceiptHandle: "r", Body: "" }, ARN).md5OfBody).toBe(
      "d41d8cd98f00b204e9800998ecf8427e",
    );
  });
});

describe("recordsToDelete", () => {
  const records = ["a", "b", "c"].map((id) => ({ messageId: id }) as SQSRecord);
  const ids = (list: SQSRecord[]) => list.map((r) => r.messageId);

  it("deletes all but the reported failures", () => {
    const { delete: done, failed } = recordsToDelete(
      records,
      { batchItemFailures: [{ itemIdentifier: "b" }] },
      true,
    );
    expect([ids(done), ids(failed)]).toEqual([["a", "c"], ["b"]]);
    expect(ids(recordsToDelete(records, null, true).delete)).toEqual(["a", "b", "c"]);
  });

  it("fails the whole batch when a failure names no record of it", () => {
    expect(
      ids(recordsToDelete(records, { batchItemFailures: [{ itemIdentifier: "zzz" }] }, true).delete),
    ).toEqual([]);
    expect(
      ids(recordsToDelete(records, { batchItemFailures: [{ itemIdentifier: "" }] }, true).failed),
    ).toEqual(["a", "b", "c"]);
  });

  it("ignores the response without ReportBatchItemFailures", () => {
    expect(
      ids(recordsToDelete(records, { batchItemFailures: [{ itemIdentifier: "a" }] }, false).delete),
    ).toEqual(["a", "b", "c"]);
  });
});
