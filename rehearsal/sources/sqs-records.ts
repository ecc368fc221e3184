/** SQS messages as the Lambda event source hands them to a function: SQSEvent records. */
import { createHash } from "node:crypto";
import type { Message } from "@aws-sdk/client-sqs";
import type { SQSBatchResponse, SQSMessageAttributes, SQSRecord, SQSRecordAttributes } from "aws-lambda";

export function toSqsRecord(message: Message, queueArn: string): SQSRecord {
  const region = queueArn.split(":")[3] ?? "";
  const body = message.Body ?? "";
  const attributes = { ...(message.Attributes ?? {}) } as Record<string, string>;
  const messageAttributes: SQSMessageAttributes = {};
  for (const [name, value] of Object.entries(message.MessageAttributes ?? {})) {
    messageAttributes[name] = {
      ...(value.StringValue === undefined ? {} : { stringValue: value.StringValue }),
      ...(value.BinaryValue === undefined
        ? {}
        : { binaryValue: Buffer.from(value.BinaryValue).toString("base64") }),
      stringListValues: value.StringListValues ?? [],
      binaryListValues: (value.BinaryListValues ?? []).map((item) => Buffer.from(item).toString("base64")),
      dataType: value.DataType ?? "String",
    };
  }
  return {
    messageId: message.MessageId ?? "",
    receiptHandle: message.ReceiptHandle ?? "",
    body,
    attributes: attributes as unknown as SQSRecordAttributes,
    messageAttributes,
    md5OfBody: message.MD5OfBody ?? createHash("md5").update(body, "utf8").digest("hex"),
    ...(message.MD5OfMessageAttributes ? { md5OfMessageAttributes: message.MD5OfMessageAttributes } : {}),
    eventSource: "aws:sqs",
    eventSourceARN: queueArn,
    awsRegion: region,
  };
}

/**
 * The records the event source deletes after an invocation that returned: all of them without
 * ReportBatchItemFailures; with it, all but the failed ones — and none when the response names an
 * empty or unknown message id (Lambda then treats the whole batch as failed).
 */
export function recordsToDelete(
  records: readonly SQSRecord[],
  response: unknown,
  reportBatchItemFailures: boolean,
): { delete: SQSRecord[]; failed: SQSRecord[] } {
  if (!reportBatchItemFailures) return { delete: [...records], failed: [] };
  const failures = (response as SQSBatchResponse | null)?.batchItemFailures ?? [];
  const ids = new Set(records.map((record) => record.messageId));
  const failedIds = new Set<string>();
  for (const failure of failures) {
    if (!failure?.itemIdentifier || !ids.has(failure.itemIdentifier))
      return { delete: [], failed: [...records] };
    failedIds.add(failure.itemIdentifier);
  }
  return {
    delete: records.filter((record) => !failedIds.has(record.messageId)),
    failed: records.filter((record) => failedIds.has(record.messageId)),
  };
}
