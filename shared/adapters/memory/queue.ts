/**
 * In-memory queue with the SQS behaviours the engine relies on: at-least-once delivery, per-message
 * delay, visibility timeout with redelivery, receive counts, and a redrive to a dead-letter queue
 * once a message has been received more than `maxReceiveCount` times.
 */
import { MAX_DELAY_SECONDS } from "../../domain/timers.js";
import type { Clock, QueueConsumer, ReceivedMessage, TaskMessage, TaskQueue } from "../../ports.js";

interface QueuedMessage {
  messageId: string;
  body: string;
  sentAt: number;
  visibleAt: number;
  receiveCount: number;
  receiptHandle?: string;
}

export interface MemoryQueueOptions {
  clock: Clock;
  maxReceiveCount?: number;
  deadLetter?: MemoryQueue;
}

const POLL_SLICE_MS = 50;

export class MemoryQueue implements TaskQueue, QueueConsumer {
  private readonly messages = new Map<string, QueuedMessage>();
  private sequence = 0;
  private waiters: Array<() => void> = [];

  constructor(private readonly options: MemoryQueueOptions) {}

  async send(messages: readonly TaskMessage[], options: { delaySeconds?: number } = {}): Promise<void> {
    const delayMs = Math.min(Math.max(options.delaySeconds ?? 0, 0), MAX_DELAY_SECONDS) * 1000;
    for (const message of messages) this.sendRaw(JSON.stringify(message), delayMs);
  }

  /** Enqueues a raw body (also how the dead-letter redrive and tests inject messages). */
  sendRaw(body: string, delayMs = 0, receiveCount = 0): string {
    const now = this.options.clock.now();
    const messageId = `m-${++this.sequence}`;
    this.messages.set(messageId, { messageId, body, sentAt: now, visibleAt: now + delayMs, receiveCount });
    this.wake();
    return messageId;
  }

  async receive(options: {
    maxMessages: number;
    waitSeconds: number;
    visibilityTimeoutSeconds: number;
  }): Promise<ReceivedMessage[]> {
    const deadline = this.options.clock.now() + options.waitSeconds * 1000;
    for (;;) {
      const received = this.takeVisible(options.maxMessages, options.visibilityTimeoutSeconds);
      const remaining = deadline - this.options.clock.now();
      if (received.length > 0 || remaining <= 0) return received;
      let waiter: (() => void) | undefined;
      await Promise.race([
        new Promise<void>((resolve) => {
          waiter = resolve;
          this.waiters.push(resolve);
        }),
        this.options.clock.sleep(Math.min(POLL_SLICE_MS, remaining)),
      ]);
      this.waiters = this.waiters.filter((w) => w !== waiter);
    }
  }

  async delete(receiptHandles: readonly string[]): Promise<void> {
    for (const handle of receiptHandles) {
      const message = this.byHandle(handle);
      if (message) this.messages.delete(message.messageId);
    }
  }

  async changeVisibility(receiptHandle: string, seconds: number): Promise<void> {
    const message = this.byHandle(receiptHandle);
    if (!message) return;
    message.visibleAt = this.options.clock.now() + seconds * 1000;
    if (seconds === 0) this.wake();
  }

  /**
   * The message a receipt handle names, while that receipt is its latest (`<messageId>:<receive>`):
   * found by its id, not by a scan, so a backlog of many messages costs a delete nothing.
   */
  private byHandle(handle: string): QueuedMessage | undefined {
    const messageId = handle.slice(0, handle.lastIndexOf(":"));
    const message = this.messages.get(messageId);
    return message?.receiptHandle === handle ? message : undefined;
  }

  /** Messages currently held (visible or not), oldest first: for inspection (GET /dlq) and tests. */
  peek(): Array<{ messageId: string; body: string; sentAt: number; receiveCount: number }> {
    return [...this.messages.values()].map(({ messageId, body, sentAt, receiveCount }) => ({
      messageId,
      body,
      sentAt,
      receiveCount,
    }));
  }

  /** Removes one message by id (redrive out of a dead-letter queue). */
  remove(messageId: string): boolean {
    return this.messages.delete(messageId);
  }

  get size(): number {
    return this.messages.size;
  }

  /**
   * When the next message becomes visible (delayed, or received and not deleted), or undefined when
   * none is held. Read-only: a driver on a virtual clock (testkit/driver.ts) moves time on to it.
   */
  nextVisibleAt(): number | undefined {
    let next: number | undefined;
    for (const message of this.messages.values()) {
      if (next === undefined || message.visibleAt < next) next = message.visibleAt;
    }
    return next;
  }

  private takeVisible(max: number, visibilityTimeoutSeconds: number): ReceivedMessage[] {
    const now = this.options.clock.now();
    const received: ReceivedMessage[] = [];
    for (const message of this.messages.values()) {
      if (received.length >= max) break;
      if (message.visibleAt > now) continue;
      const limit = this.options.maxReceiveCount;
      if (limit !== undefined && message.receiveCount >= limit && this.options.deadLetter) {
        // SQS moves a message to the DLQ when a receive would exceed maxReceiveCount.
        this.messages.delete(message.messageId);
        this.options.deadLetter.sendRaw(message.body, 0, message.receiveCount);
        continue;
      }
      message.receiveCount += 1;
      message.visibleAt = now + visibilityTimeoutSeconds * 1000;
      message.receiptHandle = `${message.messageId}:${message.receiveCount}`;
      received.push({
        messageId: message.messageId,
        receiptHandle: message.receiptHandle,
        body: message.body,
        receiveCount: message.receiveCount,
        sentAt: message.sentAt,
      });
    }
    return received;
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }
}
