/**
 * The Store contract for concurrency slots (Store.getSlots/putSlots and the waiters): a limit's
 * state written only at the version it was read at, so racing acquirers never both take the last
 * slot; waiters listed in the order of their places, a place written twice kept once. Run on every
 * adapter by store.test.ts.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  acquireSlot,
  decodeSlots,
  encodeSlots,
  grantWaiter,
  holderId,
  placeWaiter,
} from "../../shared/domain/slots.js";
import type { SlotWaiter, Store } from "../../shared/ports.js";
import type { StoreFactory } from "./store.contract.js";

export function describeSlotsContract(name: string, factory: StoreFactory): void {
  describe(`${name}: concurrency slots`, () => {
    let store: Store;
    let cleanup: (() => Promise<void>) | undefined;
    beforeAll(async () => {
      ({ store, cleanup } = await factory());
    });
    afterAll(async () => {
      await cleanup?.();
    });

    /** Takes a slot of `limit` for `holder` as engine/slots.ts will: read, decide, write at the version read. */
    async function take(key: string, holder: string, limit: number): Promise<boolean> {
      for (;;) {
        const item = await store.getSlots(key);
        const outcome = acquireSlot(decodeSlots(item?.state), holder, limit, Date.now());
        if (!outcome.acquired) return false;
        if (!outcome.changed) return true;
        const version = item?.version ?? 0;
        if (
          await store.putSlots(key, { version: version + 1, state: encodeSlots(outcome.state) }, version, 1)
        )
          return true;
      }
    }

    it("writes the first version only when none is stored, and each next one only at the version read", async () => {
      const key = `wf/n/${randomUUID()}`;
      expect(await store.getSlots(key)).toBeUndefined();
      expect(await store.putSlots(key, { version: 1, state: "{}" }, 0, 1)).toBe(true);
      expect(await store.putSlots(key, { version: 1, state: '{"x":1}' }, 0, 1)).toBe(false);
      expect(await store.getSlots(key)).toEqual({ version: 1, state: "{}" });
      expect(await store.putSlots(key, { version: 2, state: '{"x":2}' }, 2, 1)).toBe(false);
      expect(await store.putSlots(key, { version: 2, state: '{"x":2}' }, 1, 1)).toBe(true);
      expect(await store.getSlots(key)).toEqual({ version: 2, state: '{"x":2}' });
    });

    it("never lets limit + 1 take slots: 12 racing acquirers of a limit of 3", {
      timeout: 120_000,
    }, async () => {
      // A key with the characters tenants' values may hold.
      const key = `wf/node/tenant #1 — ünïcode/${randomUUID()}`;
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) => take(key, holderId(randomUUID(), "node", i + 1), 3)),
      );
      expect(results.filter(Boolean)).toHaveLength(3);
      const state = decodeSlots((await store.getSlots(key))?.state);
      expect(Object.keys(state.holders)).toHaveLength(3);
    });

    it("lists waiters in the order of their places, first `limit` only; deletes each once", async () => {
      const key = `wf/n/${randomUUID()}`;
      let state = decodeSlots(undefined);
      const places: string[] = [];
      // Two tenants, the first with three waiters: the places interleave them.
      for (const group of ["A", "A", "A", "B"]) {
        const placed = placeWaiter(state, group);
        state = placed.state;
        places.push(placed.place);
      }
      const waiter = (place: string, i: number): SlotWaiter => ({
        slotKey: key,
        place,
        message: { executionId: `e${i}`, nodeId: "n", attempt: 1, deps: [0, 2] },
        since: 1_000 + i,
        limit: 1 + i,
      });
      // Written out of order, one twice (a retried write).
      for (const i of [3, 1, 0, 2, 1]) await store.putWaiter(waiter(places[i]!, i), 5);
      const listed = await store.listWaiters(key, 10);
      expect(listed.map((w) => w.message.executionId)).toEqual(["e0", "e3", "e1", "e2"]);
      expect(listed[0]).toEqual(waiter(places[0]!, 0));
      expect((await store.listWaiters(key, 2)).map((w) => w.message.executionId)).toEqual(["e0", "e3"]);
      expect(await store.getWaiter(key, places[3]!)).toEqual(waiter(places[3]!, 3));
      expect(await store.getWaiter(key, "999.missing")).toBeUndefined();
      // Granting follows the places; the state's clock moves with them.
      state = grantWaiter(state, listed[0]!.place);
      expect(await store.deleteWaiter(key, places[0]!)).toBe(true);
      expect(await store.deleteWaiter(key, places[0]!)).toBe(false);
      expect(await store.getWaiter(key, places[0]!)).toBeUndefined();
      expect((await store.listWaiters(key, 10)).map((w) => w.message.executionId)).toEqual([
        "e3",
        "e1",
        "e2",
      ]);
      // Another key's queue is its own.
      expect(await store.listWaiters(`${key}/other`, 10)).toEqual([]);
    });
  });
}
