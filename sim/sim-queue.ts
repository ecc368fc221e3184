/**
 * A simulated SQS standard queue on virtual time: per-message delay (capped at 900 s), visibility
 * timeout and redelivery, receive counts, and a move to a dead-letter queue once a receive would
 * exceed maxReceiveCount. Seeded faults add what SQS allows: a message sent twice, a receive that
 * leaves the message visible (two consumers get it at once), and extra delivery delay. Which visible
 * message is received next is the scheduler's pick, so delivery order is arbitrary too.
 */
import { MAX_DELAY_SECONDS } from "../shared/domain/timers.js";
import type { TaskMessage, TaskQueue } from "../shared/ports.js";
import type { Rng } from "./prng.js";

export interface SimMessage {
  id: string;
  body: TaskMessage;
  sentAt: number;
  visibleAt: number;
  receiveCount: number;
  receipt?: string;
}

export interface SimQueueOptions {
  name: string;
  visibilityMs: number;
  maxReceiveCount?: number;
  deadLetter?: SimQueue;
  /** Chance that a sent message is stored twice. */
  duplicateSend: number;
  /** Chance that a receive leaves the message visible to another consumer. */
  duplicateReceive: number;
  /** Chance that a message is delivered up to `extraDelayMaxMs` later than asked. */
  extraDelay: number;
  extraDelayMaxMs: number;
}

export interface QueueStats {
  sent: number;
  duplicateSends: number;
  duplicateReceives: number;
  delayed: number;
  received: number;
  deleted: number;
  deadLettered: number;
}

export interface QueueSend {
  message: TaskMessage;
  sentAt: number;
  dueAt: number;
}

export class SimQueue implements TaskQueue {
  readonly stats: QueueStats = {
    sent: 0,
    duplicateSends: 0,
    duplicateReceives: 0,
    delayed: 0,
    received: 0,
    deleted: 0,
    deadLettered: 0,
  };
  private readonly messages = new Map<string, SimMessage>();
  private sequence = 0;

  constructor(
    private readonly now: () => number,
    private readonly rng: Rng,
    private readonly options: SimQueueOptions,
  ) {}

  /** Every message put, with when and for when (its delay, before any injected extra delay). */
  readonly sends: QueueSend[] = [];

  async send(messages: readonly TaskMessage[], options: { delaySeconds?: number } = {}): Promise<void> {
    const delayMs = Math.min(Math.max(options.delaySeconds ?? 0, 0), MAX_DELAY_SECONDS) * 1000;
    for (const message of messages) {
      this.put(message, delayMs);
      if (this.rng.chance(this.options.duplicateSend)) {
        this.stats.duplicateSends++;
        this.put(message, delayMs);
      }
    }
  }

  /** Enqueues a copy of `body` (a send, or a move from the source queue into this dead-letter queue). */
  put(body: TaskMessage, delayMs: number, receiveCount = 0): string {
    let extra = 0;
    if (this.rng.chance(this.options.extraDelay)) {
      extra = this.rng.int(1, this.options.extraDelayMaxMs);
      this.stats.delayed++;
    }
    const id = `${this.options.name}${++this.sequence}`;
    const now = this.now();
    this.sends.push({ message: { ...body }, sentAt: now, dueAt: now + delayMs });
    this.messages.set(id, {
      id,
      body: { ...body },
      sentAt: now,
      visibleAt: now + delayMs + extra,
      receiveCount,
    });
    this.stats.sent++;
    return id;
  }

  /** Messages a consumer could receive now, oldest first. */
  visible(): SimMessage[] {
    const now = this.now();
    return [...this.messages.values()].filter((m) => m.visibleAt <= now);
  }

  /** When the next invisible message becomes visible. */
  nextVisibleAt(): number | undefined {
    const now = this.now();
    let next: number | undefined;
    for (const m of this.messages.values())
      if (m.visibleAt > now && (next === undefined || m.visibleAt < next)) next = m.visibleAt;
    return next;
  }

  get size(): number {
    return this.messages.size;
  }

  /**
   * Receives one visible message: hidden for the visibility timeout (or, by a fault, left visible),
   * or moved to the dead-letter queue when this receive would pass maxReceiveCount.
   */
  receive(id: string): { message: SimMessage; receipt: string } | "deadLettered" | undefined {
    const message = this.messages.get(id);
    if (!message || message.visibleAt > this.now()) return undefined;
    const limit = this.options.maxReceiveCount;
    if (limit !== undefined && message.receiveCount >= limit && this.options.deadLetter) {
      this.messages.delete(id);
      this.options.deadLetter.put(message.body, 0, message.receiveCount);
      this.stats.deadLettered++;
      return "deadLettered";
    }
    message.receiveCount++;
    message.receipt = `${id}#${message.receiveCount}`;
    this.stats.received++;
    if (this.rng.chance(this.options.duplicateReceive)) this.stats.duplicateReceives++;
    else message.visibleAt = this.now() + this.options.visibilityMs;
    return { message: { ...message, body: { ...message.body } }, receipt: message.receipt };
  }

  /** Deletes by receipt handle; a handle of an earlier receive no longer deletes (the conservative reading of SQS). */
  delete(receipt: string): boolean {
    const id = receipt.slice(0, receipt.indexOf("#"));
    const message = this.messages.get(id);
    if (!message || message.receipt !== receipt) return false;
    this.messages.delete(id);
    this.stats.deleted++;
    return true;
  }
}
