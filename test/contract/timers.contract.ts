/**
 * The Store contract of the timers' due index (shared/ports.ts, domain/timers.ts): timers armed
 * once, listed by shard in time order within (from, through] across day buckets, in pages; the
 * sweep's cursor moved only forward. Run on every adapter by store.test.ts, on a store of its own.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasCode } from "../../shared/domain/errors.js";
import { TIMER_LIMITS, type Timer, timerShard } from "../../shared/domain/timers.js";
import type { Store } from "../../shared/ports.js";
import type { StoreFactory } from "./store.contract.js";

const DAY = TIMER_LIMITS.bucketMs;
/** Just before a day bucket's end, so a few seconds on cross into the next bucket. */
const BASE = 20_000 * DAY - 5_000;

/** An execution id in `shard` (ids are hashed to shards). */
function idInShard(shard: number): string {
  for (;;) {
    const id = randomUUID();
    if (timerShard(id) === shard) return id;
  }
}

function timer(executionId: string, dueAt: number, nodeId = "n", armedAt = BASE - 3_600_000): Timer {
  return { message: { executionId, nodeId, attempt: 1 }, dueAt, armedAt };
}

async function listAll(store: Store, shard: number, from: number, through: number, limit: number) {
  const pages: Timer[][] = [];
  let next: string | undefined;
  for (let guard = 0; guard < 100; guard++) {
    const page = await store.listTimers(shard, from, through, { limit, ...(next ? { next } : {}) });
    expect(page.items.length).toBeLessThanOrEqual(limit);
    pages.push(page.items);
    if (page.next === undefined) return pages;
    expect(page.items).toHaveLength(limit);
    next = page.next;
  }
  throw new Error("the listing never ended");
}

export function describeTimerContract(name: string, factory: StoreFactory): void {
  describe(`${name} timers`, () => {
    let store: Store;
    let cleanup: (() => Promise<void>) | undefined;
    beforeAll(async () => {
      ({ store, cleanup } = await factory());
    });
    afterAll(async () => {
      await cleanup?.();
    });

    it("lists a shard's timers due in (from, through], earliest first, and no other shard's", async () => {
      const a = idInShard(3);
      const b = idInShard(3);
      const other = idInShard(4);
      await store.putTimers([
        timer(a, BASE + 2_000, "late"),
        timer(b, BASE + 1_000),
        timer(a, BASE, "at-from"),
        timer(a, BASE + 9_000, "after-through"),
        timer(other, BASE + 1_500),
      ]);
      const page = await store.listTimers(3, BASE, BASE + 2_000, { limit: 10 });
      expect(page.next).toBeUndefined();
      expect(page.items.map((t) => [t.message.executionId, t.message.nodeId, t.dueAt])).toEqual([
        [b, "n", BASE + 1_000],
        [a, "late", BASE + 2_000],
      ]);
      expect(page.items[0]).toEqual(timer(b, BASE + 1_000));
      const elsewhere = await store.listTimers(4, BASE, BASE + 2_000, { limit: 10 });
      expect(elsewhere.items.map((t) => t.message.executionId)).toEqual([other]);
    });

    it("gets those of given timers that are stored, by message and time", async () => {
      const id = idInShard(6);
      await store.putTimers([timer(id, BASE + 300, "stored", BASE - 7)]);
      const found = await store.getTimers([
        { message: timer(id, BASE + 300, "stored").message, dueAt: BASE + 300 },
        { message: timer(id, BASE + 301, "stored").message, dueAt: BASE + 301 },
        { message: timer(id, BASE + 300, "never").message, dueAt: BASE + 300 },
      ]);
      expect(found).toEqual([timer(id, BASE + 300, "stored", BASE - 7)]);
      expect(await store.getTimers([])).toEqual([]);
    });

    it("keeps a timer armed twice once, with its first arming time", async () => {
      const id = idInShard(5);
      await store.putTimers([timer(id, BASE + 100, "twice", BASE - 10)]);
      await store.putTimers([timer(id, BASE + 100, "twice", BASE - 5)]);
      const page = await store.listTimers(5, BASE, BASE + 200, { limit: 10 });
      expect(page.items.filter((t) => t.message.executionId === id)).toEqual([
        timer(id, BASE + 100, "twice", BASE - 10),
      ]);
    });

    it("pages through timers across day buckets, each once", async () => {
      const shard = 7;
      const ids = Array.from({ length: 7 }, () => idInShard(shard));
      // Four before midnight, three after: the range spans two buckets.
      const times = [
        BASE + 1_000,
        BASE + 2_000,
        BASE + 3_000,
        BASE + 4_000,
        BASE + 6_000,
        BASE + 7_000,
        BASE + 8_000,
      ];
      await store.putTimers(ids.map((id, i) => timer(id, times[i]!)));
      for (const limit of [1, 2, 3, 7, 8]) {
        const pages = await listAll(store, shard, BASE, BASE + 8_000, limit);
        expect(pages.flat().map((t) => t.dueAt)).toEqual(times);
      }
      const afterMidnight = await store.listTimers(shard, BASE + 5_000, BASE + 60_000, { limit: 10 });
      expect(afterMidnight.items.map((t) => t.dueAt)).toEqual(times.slice(4));
    });

    it("refuses a page cursor it never gave", async () => {
      const refused = await store
        .listTimers(1, BASE, BASE + 1, { limit: 1, next: "not-a-cursor" })
        .catch((e) => e);
      expect(hasCode(refused, "InvalidCursor")).toBe(true);
    });

    it("moves the sweep's cursor forward only", async () => {
      expect(await store.getTimerCursor()).toBeUndefined();
      expect(await store.advanceTimerCursor({ through: BASE, sweptAt: BASE - 780_000 })).toBe(true);
      expect(await store.advanceTimerCursor({ through: BASE - 1, sweptAt: BASE })).toBe(false);
      expect(await store.advanceTimerCursor({ through: BASE, sweptAt: BASE })).toBe(false);
      expect(await store.getTimerCursor()).toEqual({ through: BASE, sweptAt: BASE - 780_000 });
      expect(await store.advanceTimerCursor({ through: BASE + 60_000, sweptAt: BASE + 1 })).toBe(true);
      expect(await store.getTimerCursor()).toEqual({ through: BASE + 60_000, sweptAt: BASE + 1 });
    });
  });
}
