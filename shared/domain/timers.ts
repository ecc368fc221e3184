/**
 * Durable timers: what the engine must do at a time beyond SQS's delay reach (15 minutes), kept in
 * a due index sharded by execution and bucketed by day (docs/architecture.md, "Timers").
 *
 * A timer is the task message to deliver and the time to deliver it. Nearer deadlines ride the
 * message itself (an SQS delay, to the second); a farther one is written here and sent by the sweep
 * that finds it within reach, as a message delayed to its time. So the sweep reads only what comes
 * due (plus a constant per shard), never every running execution, and every timer fires as a
 * message the worker handles like any other: fenced on the attempt it names, a no-op once its node
 * moved on.
 *
 * The sweep keeps a cursor: the time through which it has sent every timer. A timer armed into the
 * range the cursor already passed (a writer that stalled between deciding and writing) is caught by
 * a look-back over the last minutes, by the time it was armed.
 */
import type { TaskMessage } from "./task-message.js";

/** SQS delays a message by at most this much. */
export const MAX_DELAY_SECONDS = 900;

export const TIMER_LIMITS = {
  /** Write shards of the due index (a hash of the execution id); the sweep reads each. */
  shards: 16,
  /** One index partition per shard and bucket: a sweep normally reads one bucket per shard. */
  bucketMs: 24 * 3600 * 1000,
  /**
   * How far ahead of a timer's time the sweep sends it: within SQS's reach, with two minutes to
   * spare for a sweep that runs late (the schedule is one a minute).
   */
  leadMs: (MAX_DELAY_SECONDS - 120) * 1000,
  /** How far back each sweep looks for timers armed late into a range it had passed. */
  lookBackMs: 5 * 60 * 1000,
  /** How long a timer stays stored after its time (the table's TTL deletes it then). */
  retentionMs: 7 * 24 * 3600 * 1000,
} as const;

/** A task message due at a time: the durable form of a delayed send. */
export interface Timer {
  message: TaskMessage;
  /** Epoch ms at which the message is to be delivered. */
  dueAt: number;
  /** Epoch ms at which it was armed: what tells a sweep a timer it has not seen yet. */
  armedAt: number;
}

/** Where the sweep stands: every timer due through `through` was sent by a sweep at `sweptAt`. */
export interface TimerCursor {
  through: number;
  sweptAt: number;
}

/** The shard of an execution's timers (FNV-1a of its id): spreads arming writes over partitions. */
export function timerShard(executionId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < executionId.length; i++) {
    hash ^= executionId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % TIMER_LIMITS.shards;
}

/** The day bucket holding a time. */
export function timerBucket(at: number): number {
  return Math.floor(Math.max(0, at) / TIMER_LIMITS.bucketMs);
}

/**
 * Instants in keys: 15 digits of epoch ms, so they sort as text. Fractional or out-of-range
 * instants are floored and clamped into 0..999,999,999,999,999 (year 33658).
 */
export function keyInstant(at: number): string {
  const clamped = Number.isNaN(at) ? 0 : Math.min(999_999_999_999_999, Math.max(0, Math.floor(at)));
  return String(clamped).padStart(15, "0");
}

/**
 * A timer's identity and its place in its shard: time first. Arming the same message for the same
 * time again is the same timer.
 */
export function timerSortKey(timer: Pick<Timer, "message" | "dueAt">): string {
  const { executionId, nodeId, attempt } = timer.message;
  return `${keyInstant(timer.dueAt)}#${executionId}#${nodeId}#${attempt}`;
}

/** The first sort key after every timer due at or before `at` (`~` sorts after any id's character). */
export function timerKeyAfter(at: number): string {
  return `${keyInstant(at)}#~`;
}

/**
 * What a sweep at `now` reads: timers due in (from, through]. From the cursor less the look-back
 * (a retention's worth, when there is none), through what SQS can delay to from now.
 */
export function sweepWindow(cursor: TimerCursor | undefined, now: number): { from: number; through: number } {
  const through = now + TIMER_LIMITS.leadMs;
  // Timers older than their retention are gone (the table's TTL): a first sweep, or one after a
  // long outage, starts there.
  const oldest = now - TIMER_LIMITS.retentionMs;
  const from =
    cursor === undefined
      ? oldest
      : Math.max(oldest, Math.min(cursor.through, through) - TIMER_LIMITS.lookBackMs);
  return { from, through };
}

/**
 * Whether a sweep must send `timer` now: every timer past the cursor, and in the look-back only
 * those armed after the previous sweep read (less the look-back, for a write in flight then), which
 * that sweep cannot have seen. A timer sent twice is harmless (its message is fenced); one never
 * sent would be lost.
 */
export function unsent(timer: Timer, cursor: TimerCursor | undefined): boolean {
  if (cursor === undefined || timer.dueAt > cursor.through) return true;
  return timer.armedAt >= cursor.sweptAt - TIMER_LIMITS.lookBackMs;
}

/** The delay, in whole seconds within SQS's reach, that delivers a message at `dueAt` sent at `now`. */
export function delaySecondsUntil(dueAt: number, now: number): number {
  return Math.min(MAX_DELAY_SECONDS, Math.max(0, Math.ceil((dueAt - now) / 1000)));
}
