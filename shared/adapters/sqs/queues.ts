/** Creates the task queue and its dead-letter queue when missing. */
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  type QueueAttributeName,
  SetQueueAttributesCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";

export interface QueueNames {
  queue: string;
  deadLetter: string;
}

export interface QueueOptions {
  /** Receives before SQS moves a message to the DLQ (≥ 5 recommended). Default 5. */
  maxReceiveCount?: number;
  /** Default visibility timeout of the task queue; set it ≥ 6× the worker timeout. Default 60. */
  visibilityTimeoutSeconds?: number;
}

export interface EnsuredQueues {
  queueUrl: string;
  deadLetterUrl: string;
  deadLetterArn: string;
}

const FOURTEEN_DAYS_SECONDS = String(14 * 24 * 3600);

/** Creates (or updates the attributes of) the DLQ and the task queue with its RedrivePolicy. Idempotent. */
export async function ensureQueues(
  client: SQSClient,
  names: QueueNames,
  options: QueueOptions = {},
): Promise<EnsuredQueues> {
  const deadLetterUrl = await ensureQueue(client, names.deadLetter, {
    MessageRetentionPeriod: FOURTEEN_DAYS_SECONDS,
  });
  const arn = await client.send(
    new GetQueueAttributesCommand({ QueueUrl: deadLetterUrl, AttributeNames: ["QueueArn"] }),
  );
  const deadLetterArn = arn.Attributes?.QueueArn;
  if (!deadLetterArn) throw new Error(`queue ${names.deadLetter} has no ARN`);
  const queueUrl = await ensureQueue(client, names.queue, {
    VisibilityTimeout: String(options.visibilityTimeoutSeconds ?? 60),
    MessageRetentionPeriod: FOURTEEN_DAYS_SECONDS,
    RedrivePolicy: JSON.stringify({
      deadLetterTargetArn: deadLetterArn,
      maxReceiveCount: options.maxReceiveCount ?? 5,
    }),
  });
  return { queueUrl, deadLetterUrl, deadLetterArn };
}

async function ensureQueue(
  client: SQSClient,
  name: string,
  attributes: Partial<Record<QueueAttributeName, string>>,
): Promise<string> {
  try {
    const created = await client.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
    if (!created.QueueUrl) throw new Error(`CreateQueue ${name} returned no URL`);
    return created.QueueUrl;
  } catch (error) {
    // The queue exists with other attributes: bring them in line.
    if (!(error instanceof Error) || !/QueueNameExists|QueueAlreadyExists/.test(error.name)) throw error;
    const found = await client.send(new GetQueueUrlCommand({ QueueName: name }));
    if (!found.QueueUrl) throw new Error(`queue ${name} has no URL`);
    await client.send(new SetQueueAttributesCommand({ QueueUrl: found.QueueUrl, Attributes: attributes }));
    return found.QueueUrl;
  }
}
