/**
 * The engine's side of durable timers (domain/timers.ts): arming a message due beyond SQS's delay
 * reach, and the sweep that sends the timers coming within reach. A sweep reads, per shard, only
 * the timers due in its window — one query per shard when nothing is due, whatever the number of
 * running executions — and sends each as a task message delayed to its time.
 */

import { mapLimit } from "../domain/concurrency.js";
import {
  delaySecondsUntil,
  sweepWindow,
  TIMER_LIMITS,
  type Timer,
  timerSortKey,
  unsent,
} from "../domain/timers.js";
import type { Store, TaskMessage } from "../ports.js";
import type { EngineContext } from "./context.js";

const PAGE = 100;

/** Arms `timers` (each a message and its time) in the due index. */
export async function armTimers(
  ctx: EngineContext,
  timers: ReadonlyArray<{ message: TaskMessage; dueAt: number }>,
): Promise<void> {
  if (timers.length === 0) return;
  const armedAt = ctx.clock.now();
  const armed = timers.map(({ message, dueAt }) => ({ message, dueAt, armedAt }));
  await ctx.store.putTimers(armed);
  // A process that stalled between choosing the index and writing to it may have armed a timer
  // behind what a sweep since then reads (its cursor, less the look-back): one due that soon is
  // sent now as well, delayed to its time (it is within SQS's reach; a second copy is harmless).
  const now = ctx.clock.now();
  const reach = now + TIMER_LIMITS.leadMs - TIMER_LIMITS.lookBackMs;
  await sendDelayed(
    ctx,
    armed.filter((timer) => timer.dueAt <= reach),
  );
}

/**
 * Those of these timers that are stored and due past every sweep's reach so far (the cursor's
 * `through`): a later sweep sends each. By their sort keys (domain/timers.ts, timerSortKey).
 */
export async function pendingTimers(
  ctx: EngineContext,
  timers: ReadonlyArray<{ message: TaskMessage; dueAt: number }>,
): Promise<Set<string>> {
  const [stored, cursor] = await Promise.all([ctx.store.getTimers(timers), ctx.store.getTimerCursor()]);
  return new Set(
    stored.filter((timer) => cursor === undefined || timer.dueAt > cursor.through).map(timerSortKey),
  );
}

export interface TimerSweepReport {
  /** Timers sent as delayed messages. */
  sent: number;
}

/**
 * Sends every timer due within SQS's reach that no sweep sent yet, then moves the cursor. A sweep
 * cut short leaves the cursor: the next sends its timers again (a duplicate message is harmless,
 * as every message is fenced on the attempt it names).
 */
export async function sweepTimers(ctx: EngineContext, now: number): Promise<TimerSweepReport> {
  const cursor = await ctx.store.getTimerCursor();
  const { from, through } = sweepWindow(cursor, now);
  let sent = 0;
  const shards = Array.from({ length: TIMER_LIMITS.shards }, (_, shard) => shard);
  await mapLimit(shards, 4, async (shard) => {
    let next: string | undefined;
    do {
      const page = await ctx.store.listTimers(shard, from, through, {
        limit: PAGE,
        ...(next ? { next } : {}),
      });
      const due = page.items.filter((timer) => unsent(timer, cursor));
      await sendDelayed(ctx, due);
      sent += due.length;
      next = page.next;
    } while (next !== undefined);
  });
  await ctx.store.advanceTimerCursor({ through, sweptAt: now });
  return { sent };
}

/** Sends timers delayed to their times, from the clock as it is now (a slow sweep's are not late). */
async function sendDelayed(ctx: EngineContext, timers: readonly Timer[]): Promise<void> {
  if (timers.length === 0) return;
  const now = ctx.clock.now();
  const byDelay = new Map<number, TaskMessage[]>();
  for (const timer of timers) {
    const delay = delaySecondsUntil(timer.dueAt, now);
    byDelay.set(delay, [...(byDelay.get(delay) ?? []), timer.message]);
  }
  await Promise.all(
    [...byDelay].map(([delaySeconds, messages]) =>
      ctx.queue.send(messages, delaySeconds > 0 ? { delaySeconds } : undefined),
    ),
  );
}

/**
 * When the next sweep would send something: the earliest timer no sweep sent yet, less the lead.
 * What a driver on a virtual clock (the test runtime) runs its next sweep at; undefined with none.
 */
export async function nextTimerSweepAt(store: Store, now: number): Promise<number | undefined> {
  const cursor = await store.getTimerCursor();
  const { from } = sweepWindow(cursor, now);
  let earliest: number | undefined;
  for (let shard = 0; shard < TIMER_LIMITS.shards; shard++) {
    let next: string | undefined;
    do {
      const page = await store.listTimers(shard, from, Number.MAX_SAFE_INTEGER, {
        limit: PAGE,
        ...(next ? { next } : {}),
      });
      const first = page.items.find((timer) => unsent(timer, cursor));
      if (first) {
        if (earliest === undefined || first.dueAt < earliest) earliest = first.dueAt;
        break;
      }
      next = page.next;
    } while (next !== undefined);
  }
  return earliest === undefined ? undefined : earliest - TIMER_LIMITS.leadMs;
}
