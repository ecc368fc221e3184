/**
 * Plays the Lambda SQS event source on one machine: polls a QueueConsumer, hands SQS-shaped batches to the
 * worker handler (up to `concurrency` invocations at once), deletes the records the handler processed and
 * leaves the failed ones, which come back after the visibility timeout (ReportBatchItemFailures semantics).
 */
import { createHash } from "node:crypto";
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import { DEFAULT_WORKER_TIMEOUT_SECONDS } from "../shared/engine/worker-time.js";
import type { QueueConsumer, ReceivedMessage } from "../shared/ports.js";
import { createLambdaContext } from "./lambda-context.js";

export type SqsHandler = (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse | undefined>;

export interface PollerOptions {
  consumer: QueueConsumer;
  handler: SqsHandler;
  /** The queue's ARN, put in each record's eventSourceARN. */
  queueArn?: string;
  /** Invocations running at once. Default 4. */
  concurrency?: number;
  /** Records per invocation (SQS allows 1–10). Default 10. */
  batchSize?: number;
  /** Visibility timeout set on receive: how long a failed record stays hidden. Default 30 s. */
  visibilityTimeoutSeconds?: number;
  /** Long-poll wait per receive; it also bounds how long stop() waits for a receive. Default 1 s. */
  waitSeconds?: number;
  /** Pause after an empty receive or a receive error. Default 100 ms (empty) / 1 s (error). */
  idleDelayMs?: number;
  errorDelayMs?: number;
  /**
   * Timeout of each invocation as the handler's Context reports it. Default the deployed worker's,
   * 300 s (DEFAULT_WORKER_TIMEOUT_SECONDS), so that local runs cut attempts as deployed ones do.
   */
  functionTimeoutMs?: number;
  functionName?: string;
  now?: () => number;
  onError?: (error: unknown, where: "receive" | "invoke" | "delete") => void;
}

export interface Poller {
  /**
   * Stops polling; resolves once the in-flight invocations have finished (and their deletes are done).
   * Until the invocations that were running when it was called have finished, it still receives and
   * hands over what comes: one of them may end only through a message (see `draining` below).
   */
  stop(): Promise<void>;
  /** Invocations running now. */
  readonly inFlight: number;
}

export const DEFAULT_QUEUE_ARN = "arn:aws:sqs:local:000000000000:weft-local-tasks";

export function toSqsRecord(message: ReceivedMessage, queueArn: string, receivedAt: number): SQSRecord {
  const region = queueArn.split(":")[3] || "local";
  return {
    messageId: message.messageId,
    receiptHandle: message.receiptHandle,
    body: message.body,
    attributes: {
      ApproximateReceiveCount: String(message.receiveCount),
      SentTimestamp: String(message.sentAt),
      SenderId: "000000000000",
      ApproximateFirstReceiveTimestamp: String(receivedAt),
    },
    messageAttributes: {},
    md5OfBody: createHash("md5").update(message.body, "utf8").digest("hex"),
    eventSource: "aws:sqs",
    eventSourceARN: queueArn,
    awsRegion: region,
  };
}

/**
 * Which records to delete after an invocation, as the Lambda event source decides: all of them on an
 * empty response, none when the handler threw or the response names a record that was not in the batch.
 */
export function recordsToDelete(
  records: readonly SQSRecord[],
  response: SQSBatchResponse | undefined,
): SQSRecord[] {
  const failures = response?.batchItemFailures ?? [];
  const ids = new Set(records.map((record) => record.messageId));
  const failed = new Set<string>();
  for (const failure of failures) {
    if (!failure.itemIdentifier || !ids.has(failure.itemIdentifier)) return [];
    failed.add(failure.itemIdentifier);
  }
  return records.filter((record) => !failed.has(record.messageId));
}

/** Resolves after the event loop's pending I/O and timers had their turn (setImmediate runs after them). */
export const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export function startPoller(options: PollerOptions): Poller {
  const concurrency = Math.max(1, options.concurrency ?? 4);
  const batchSize = Math.min(10, Math.max(1, options.batchSize ?? 10));
  const visibilityTimeoutSeconds = options.visibilityTimeoutSeconds ?? 30;
  const waitSeconds = options.waitSeconds ?? 1;
  const idleDelayMs = options.idleDelayMs ?? 100;
  const errorDelayMs = options.errorDelayMs ?? 1000;
  const functionTimeoutMs = options.functionTimeoutMs ?? DEFAULT_WORKER_TIMEOUT_SECONDS * 1000;
  const functionName = options.functionName ?? "weft-worker";
  const queueArn = options.queueArn ?? DEFAULT_QUEUE_ARN;
  const now = options.now ?? Date.now;
  const onError =
    options.onError ??
    ((error: unknown, where: string) => console.error(`[weft local] poller ${where} failed:`, error));

  const inFlight = new Set<Promise<void>>();
  let running = true;
  // The invocations that were in flight when stop() was called. Until they have finished the loop
  // goes on receiving, as the Lambda event source would: one of them may be waiting on a message
  // sent meanwhile. The cancellation of an execution whose node is running sends the `$cleanUp`
  // task that tells the node to stop (shared/engine/cancellation.ts); a poller that stopped
  // receiving at once left it in the queue, so the node ran to its end (a 2-minute sleep) and
  // stop() waited for it. Only those: invocations started while draining are waited for, but do
  // not keep the loop receiving, so a workload that never runs dry cannot hold stop() forever.
  const draining = new Set<Promise<void>>();
  const polling = () => running || draining.size > 0;
  // The loop waits on at most one thing at a time (a pause, or a free slot); `nudge` ends that wait early.
  let nudge: (() => void) | undefined;
  const wait = (ms?: number) =>
    new Promise<void>((resolve) => {
      if (!polling()) return resolve();
      const timer = ms === undefined ? undefined : setTimeout(() => done(), ms);
      const done = () => {
        if (timer !== undefined) clearTimeout(timer);
        nudge = undefined;
        resolve();
      };
      nudge = done;
    });

  const invoke = async (messages: ReceivedMessage[]): Promise<void> => {
    const receivedAt = now();
    const records = messages.map((message) => toSqsRecord(message, queueArn, receivedAt));
    let response: SQSBatchResponse | undefined;
    try {
      response = await options.handler(
        { Records: records },
        createLambdaContext(functionName, functionTimeoutMs, now),
      );
    } catch (error) {
      // The whole batch failed: every record comes back after its visibility timeout.
      onError(error, "invoke");
      return;
    }
    const done = recordsToDelete(records, response);
    if (done.length === 0) return;
    try {
      await options.consumer.delete(done.map((record) => record.receiptHandle));
    } catch (error) {
      onError(error, "delete");
    }
  };

  const loop = async () => {
    while (polling()) {
      if (inFlight.size >= concurrency) {
        await wait();
        continue;
      }
      let messages: ReceivedMessage[];
      try {
        messages = await options.consumer.receive({
          maxMessages: batchSize,
          waitSeconds,
          visibilityTimeoutSeconds,
        });
      } catch (error) {
        onError(error, "receive");
        await wait(errorDelayMs);
        continue;
      }
      if (messages.length === 0) {
        await wait(idleDelayMs);
        continue;
      }
      // Received while stopping: hand them over anyway rather than leave them invisible until their timeout.
      const invocation = invoke(messages).finally(() => {
        inFlight.delete(invocation);
        draining.delete(invocation);
        nudge?.();
      });
      inFlight.add(invocation);
      // Let the rest of the process have a turn (the HTTP server, the timers) before the next
      // receive: on the embedded backend a receive and a whole invocation may complete without
      // ever waiting on I/O, and a backlog that never empties would otherwise starve the API.
      await yieldToEventLoop();
    }
  };

  const looping = loop();
  let stopping: Promise<void> | undefined;

  return {
    get inFlight() {
      return inFlight.size;
    },
    stop() {
      stopping ??= (async () => {
        running = false;
        for (const invocation of inFlight) draining.add(invocation);
        nudge?.();
        await looping;
        await Promise.all([...inFlight]);
      })();
      return stopping;
    },
  };
}
