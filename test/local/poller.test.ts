/**
 * Unit tests of the local poller (the stand-in for Lambda's SQS event source), with a MemoryQueue and a fake
 * worker handler: SQS-shaped batches, partial batch failures (deleted vs left records), concurrency, stop().
 */
import type { SQSBatchResponse, SQSEvent } from "aws-lambda";
import { afterEach, describe, expect, it } from "vitest";
import { type Poller, recordsToDelete, startPoller, toSqsRecord } from "../../local/poller.js";
import { MemoryQueue } from "../../shared/adapters/memory/queue.js";
import { systemClock } from "../../shared/adapters/system.js";
import type { Clock, TaskMessage } from "../../shared/ports.js";

/** Real time plus an offset the test can advance (to let visibility timeouts pass at once). */
function shiftableClock(): Clock & { advance(ms: number): void } {
  let offset = 0;
  return {
    now: () => Date.now() + offset,
    sleep: (ms, signal) => systemClock.sleep(ms, signal),
    advance(ms) {
      offset += ms;
    },
  };
}

const message = (nodeId: string): TaskMessage => ({ executionId: "ex-1", nodeId, attempt: 1 });

async function until(condition: () => boolean, timeoutMs = 3000): Promise<void> {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > timeoutMs) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

let poller: Poller | undefined;
afterEach(async () => {
  await poller?.stop();
  poller = undefined;
});

const fast = { waitSeconds: 0, idleDelayMs: 5 } as const;

describe("local poller (unit: MemoryQueue + fake worker handler)", () => {
  it("hands SQS-shaped batches to the handler", async () => {
    const clock = shiftableClock();
    const queue = new MemoryQueue({ clock });
    await queue.send([message("a"), message("b")]);
    const events: SQSEvent[] = [];
    poller = startPoller({
      consumer: queue,
      handler: async (event) => {
        events.push(event);
        return { batchItemFailures: [] };
      },
      queueArn: "arn:aws:sqs:eu-west-1:123456789012:tasks",
      now: clock.now,
      ...fast,
    });
    await until(() => events.flatMap((event) => event.Records).length === 2);
    const records = events.flatMap((event) => event.Records);
    expect(records.map((record) => JSON.parse(record.body))).toEqual([message("a"), message("b")]);
    for (const record of records) {
      expect(record).toMatchObject({
        messageId: expect.any(String),
        receiptHandle: expect.any(String),
        eventSource: "aws:sqs",
        eventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:tasks",
        awsRegion: "eu-west-1",
        messageAttributes: {},
        md5OfBody: expect.stringMatching(/^[0-9a-f]{32}$/),
        attributes: { ApproximateReceiveCount: "1", SentTimestamp: expect.stringMatching(/^\d+$/) },
      });
    }
  });

  it("deletes the records that succeeded and leaves the failed ones, which come back after the visibility timeout", async () => {
    const clock = shiftableClock();
    const queue = new MemoryQueue({ clock });
    await queue.send([message("ok-1"), message("bad"), message("ok-2")]);
    const seen: string[] = [];
    poller = startPoller({
      consumer: queue,
      handler: async (event): Promise<SQSBatchResponse> => {
        const failures = event.Records.filter((record) => JSON.parse(record.body).nodeId === "bad");
        seen.push(...event.Records.map((record) => JSON.parse(record.body).nodeId));
        return { batchItemFailures: failures.map((record) => ({ itemIdentifier: record.messageId })) };
      },
      visibilityTimeoutSeconds: 30,
      now: clock.now,
      ...fast,
    });
    await until(() => seen.length === 3);
    await poller.stop();

    // Nothing is visible before the timeout: the failed record is hidden, the others are gone.
    expect(await queue.receive({ maxMessages: 10, waitSeconds: 0, visibilityTimeoutSeconds: 30 })).toEqual(
      [],
    );
    clock.advance(31_000);
    const back = await queue.receive({ maxMessages: 10, waitSeconds: 0, visibilityTimeoutSeconds: 30 });
    expect(back.map((m) => JSON.parse(m.body).nodeId)).toEqual(["bad"]);
    expect(back[0]?.receiveCount).toBe(2);
  });

  it("leaves the whole batch when the handler throws or names a record that is not in the batch", async () => {
    for (const handler of [
      async (): Promise<SQSBatchResponse> => {
        throw new Error("worker crashed");
      },
      async (): Promise<SQSBatchResponse> => ({ batchItemFailures: [{ itemIdentifier: "not-in-batch" }] }),
    ]) {
      const clock = shiftableClock();
      const queue = new MemoryQueue({ clock });
      await queue.send([message("a"), message("b")]);
      let calls = 0;
      const errors: unknown[] = [];
      const running = startPoller({
        consumer: queue,
        handler: async (event) => {
          calls += event.Records.length;
          return handler();
        },
        now: clock.now,
        onError: (error) => errors.push(error),
        ...fast,
      });
      await until(() => calls === 2);
      await running.stop();
      clock.advance(31_000);
      const back = await queue.receive({ maxMessages: 10, waitSeconds: 0, visibilityTimeoutSeconds: 30 });
      expect(back.map((m) => JSON.parse(m.body).nodeId).sort()).toEqual(["a", "b"]);
    }
  });

  it("runs up to `concurrency` invocations at once, and no more", async () => {
    const queue = new MemoryQueue({ clock: systemClock });
    await queue.send(Array.from({ length: 8 }, (_, i) => message(`n${i}`)));
    let active = 0;
    let peak = 0;
    let done = 0;
    poller = startPoller({
      consumer: queue,
      handler: async () => {
        active += 1;
        peak = Math.max(peak, active);
        await new Promise((resolve) => setTimeout(resolve, 40));
        active -= 1;
        done += 1;
        return { batchItemFailures: [] };
      },
      batchSize: 1,
      concurrency: 3,
      ...fast,
    });
    await until(() => done === 8);
    expect(peak).toBe(3);
  });

  it("stop() resolves only once in-flight invocations have finished and their records are deleted", async () => {
    const clock = shiftableClock();
    const queue = new MemoryQueue({ clock });
    await queue.send([message("slow")]);
    let started = false;
    let finished = false;
    const running = startPoller({
      consumer: queue,
      handler: async () => {
        started = true;
        await new Promise((resolve) => setTimeout(resolve, 100));
        finished = true;
        return { batchItemFailures: [] };
      },
      now: clock.now,
      ...fast,
    });
    await until(() => started);
    await running.stop();
    expect(finished).toBe(true);
    expect(running.inFlight).toBe(0);
    clock.advance(31_000);
    expect(await queue.receive({ maxMessages: 10, waitSeconds: 0, visibilityTimeoutSeconds: 30 })).toEqual(
      [],
    );
    await running.stop(); // idempotent
  });
});

describe("recordsToDelete and toSqsRecord", () => {
  const received = { messageId: "m1", receiptHandle: "r1", body: '{"x":1}', receiveCount: 3, sentAt: 1000 };
  it("deletes everything on an empty or missing response", () => {
    const records = [toSqsRecord(received, "arn:aws:sqs:local:0:q", 2000)];
    expect(recordsToDelete(records, undefined)).toEqual(records);
    expect(recordsToDelete(records, { batchItemFailures: [] })).toEqual(records);
    expect(recordsToDelete(records, { batchItemFailures: [{ itemIdentifier: "m1" }] })).toEqual([]);
    expect(recordsToDelete(records, { batchItemFailures: [{ itemIdentifier: "" }] })).toEqual([]);
    expect(records[0]?.attributes).toMatchObject({
      ApproximateReceiveCount: "3",
      SentTimestamp: "1000",
      ApproximateFirstReceiveTimestamp: "2000",
    });
  });
});
