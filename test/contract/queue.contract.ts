/**
 * The queue contract: a TaskQueue and the QueueConsumer reading the same queue behave like an SQS
 * standard queue (at-least-once delivery, per-send delay, visibility timeout with redelivery and
 * rising receive counts, batches over 10). queue.test.ts runs it on each adapter pair.
 * Runs on the real clock: the delay and visibility tests take a couple of seconds.
 */
import { describe, expect, it } from "vitest";
import type { QueueConsumer, ReceivedMessage, TaskMessage, TaskQueue } from "../../shared/ports.js";

export type QueueFactory = () => Promise<{
  queue: TaskQueue;
  consumer: QueueConsumer;
  cleanup?: () => Promise<void>;
}>;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const task = (i: number, executionId = "exec-1"): TaskMessage => ({
  executionId,
  nodeId: `node-${i}`,
  attempt: 1,
});

const parse = (message: ReceivedMessage): TaskMessage => JSON.parse(message.body) as TaskMessage;

/**
 * Receives until `expected` messages arrived or none arrived for `timeoutMs` (short polls, like a
 * poller; each arrival restarts the clock, so a slow emulator still delivering is waited for).
 */
async function receiveUntil(
  consumer: QueueConsumer,
  expected: number,
  options: { timeoutMs?: number; visibilityTimeoutSeconds?: number } = {},
): Promise<ReceivedMessage[]> {
  const idleMs = options.timeoutMs ?? 5000;
  let deadline = Date.now() + idleMs;
  const received: ReceivedMessage[] = [];
  while (received.length < expected && Date.now() < deadline) {
    const batch = await consumer.receive({
      maxMessages: 10,
      waitSeconds: 0,
      visibilityTimeoutSeconds: options.visibilityTimeoutSeconds ?? 30,
    });
    expect(batch.length).toBeLessThanOrEqual(10);
    received.push(...batch);
    if (batch.length > 0) deadline = Date.now() + idleMs;
    else await sleep(50);
  }
  return received;
}

export function describeQueueContract(label: string, makeQueue: QueueFactory): void {
  // Every test gets its own queue, so the tests (mostly waiting on timers) run concurrently.
  describe.concurrent(`Queue contract: ${label}`, () => {
    const withQueue =
      (body: (queue: TaskQueue, consumer: QueueConsumer) => Promise<void>) => async (): Promise<void> => {
        const { queue, consumer, cleanup } = await makeQueue();
        try {
          await body(queue, consumer);
        } finally {
          await cleanup?.();
        }
      };

    it(
      "delivers sent tasks with their body, a first receive count and the send time",
      withQueue(async (queue, consumer) => {
        const before = Date.now();
        await queue.send([task(1), task(2), task(3)]);
        const received = await receiveUntil(consumer, 3);
        expect(received.map(parse).sort((a, b) => a.nodeId.localeCompare(b.nodeId))).toEqual([
          task(1),
          task(2),
          task(3),
        ]);
        for (const message of received) {
          expect(message.receiveCount).toBe(1);
          expect(message.messageId).not.toBe("");
          expect(message.receiptHandle).not.toBe("");
          // Emulators and SQS stamp with their own clock: allow a little skew.
          expect(message.sentAt).toBeGreaterThanOrEqual(before - 2000);
          expect(message.sentAt).toBeLessThanOrEqual(Date.now() + 2000);
        }
        expect(new Set(received.map((m) => m.messageId)).size).toBe(3);
      }),
    );

    it(
      "carries every field of a task message: its dependencies, trace and the lease a timer watches",
      withQueue(async (queue, consumer) => {
        const full = {
          ...task(9),
          deps: [0, 2],
          trace: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
          lease: "lease-token-9",
        };
        await queue.send([full]);
        const [received] = await receiveUntil(consumer, 1);
        expect(received && parse(received)).toEqual(full);
      }),
    );

    it(
      "sends nothing for an empty list",
      withQueue(async (queue, consumer) => {
        await queue.send([]);
        expect(
          await consumer.receive({ maxMessages: 10, waitSeconds: 0, visibilityTimeoutSeconds: 30 }),
        ).toEqual([]);
      }),
    );

    it(
      "hides a received message for the visibility timeout, then delivers it again with a higher count",
      withQueue(async (queue, consumer) => {
        await queue.send([task(1)]);
        const [first] = await receiveUntil(consumer, 1, { visibilityTimeoutSeconds: 1 });
        expect(first?.receiveCount).toBe(1);
        expect(
          await consumer.receive({ maxMessages: 10, waitSeconds: 0, visibilityTimeoutSeconds: 1 }),
        ).toEqual([]);

        const [second] = await receiveUntil(consumer, 1, { visibilityTimeoutSeconds: 30, timeoutMs: 5000 });
        expect(second?.messageId).toBe(first?.messageId);
        expect(second?.receiveCount).toBe(2);
        expect(second && parse(second)).toEqual(task(1));

        // Visibility 0 makes it visible again at once.
        await consumer.changeVisibility(second!.receiptHandle, 0);
        const [third] = await receiveUntil(consumer, 1, { visibilityTimeoutSeconds: 1 });
        expect(third?.messageId).toBe(first?.messageId);
        expect(third?.receiveCount).toBe(3);
      }),
    );

    it(
      "extends the visibility of a message being worked on",
      withQueue(async (queue, consumer) => {
        await queue.send([task(1)]);
        const [first] = await receiveUntil(consumer, 1, { visibilityTimeoutSeconds: 1 });
        await consumer.changeVisibility(first!.receiptHandle, 30);
        await sleep(1500);
        expect(
          await consumer.receive({ maxMessages: 10, waitSeconds: 0, visibilityTimeoutSeconds: 30 }),
        ).toEqual([]);
      }),
    );

    it(
      "never delivers a deleted message again",
      withQueue(async (queue, consumer) => {
        await queue.send([task(1), task(2)]);
        const received = await receiveUntil(consumer, 2, { visibilityTimeoutSeconds: 1 });
        expect(received).toHaveLength(2);
        await consumer.delete(received.map((m) => m.receiptHandle));
        await sleep(1500);
        expect(await receiveUntil(consumer, 1, { timeoutMs: 500 })).toEqual([]);
      }),
    );

    it(
      "holds a delayed message back for the delay",
      withQueue(async (queue, consumer) => {
        const sent = Date.now();
        await queue.send([task(1)], { delaySeconds: 1 });
        await queue.send([task(2)]);
        const [immediate] = await receiveUntil(consumer, 1);
        expect(immediate && parse(immediate)).toEqual(task(2));
        const [delayed] = await receiveUntil(consumer, 1, { timeoutMs: 5000 });
        expect(delayed && parse(delayed)).toEqual(task(1));
        expect(Date.now() - sent).toBeGreaterThanOrEqual(900);
      }),
    );

    it(
      "accepts a delay beyond the maximum (capped, not refused)",
      withQueue(async (queue, consumer) => {
        await expect(queue.send([task(1)], { delaySeconds: 5000 })).resolves.toBeUndefined();
        expect(
          await consumer.receive({ maxMessages: 10, waitSeconds: 0, visibilityTimeoutSeconds: 30 }),
        ).toEqual([]);
      }),
    );

    it(
      "sends and deletes batches larger than 10",
      withQueue(async (queue, consumer) => {
        const tasks = Array.from({ length: 25 }, (_, i) => task(i, "exec-batch"));
        await queue.send(tasks);
        const received = await receiveUntil(consumer, 25, { timeoutMs: 10_000, visibilityTimeoutSeconds: 1 });
        expect(received).toHaveLength(25);
        expect(
          received
            .map(parse)
            .map((t) => t.nodeId)
            .sort(),
        ).toEqual(tasks.map((t) => t.nodeId).sort());
        await consumer.delete(received.map((m) => m.receiptHandle));
        await sleep(1500);
        expect(await receiveUntil(consumer, 1, { timeoutMs: 500 })).toEqual([]);
      }),
    );

    it(
      "waits for a message with a long poll",
      withQueue(async (queue, consumer) => {
        const started = Date.now();
        setTimeout(() => void queue.send([task(9)]), 300);
        const received = await consumer.receive({
          maxMessages: 10,
          waitSeconds: 10,
          visibilityTimeoutSeconds: 30,
        });
        const waited = Date.now() - started;
        expect(received.map(parse)).toEqual([task(9)]);
        // Answered when the message came, not at the end of the poll (wide margin: the machine may be busy).
        expect(waited).toBeLessThan(8000);
      }),
    );
  });
}
