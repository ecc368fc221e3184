/**
 * The Store contract for execution variables (Store.getVariables/putVariables): a write only at the
 * version it was read at, so optimistic writers never lose one another's changes. Run on every
 * adapter by store.test.ts; engine/vars.ts's retry loop is driven through a bare engine context.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "../../shared/engine/context.js";
import { applyVariables, readVariables } from "../../shared/engine/vars.js";
import type { Clock, Store } from "../../shared/ports.js";
import type { StoreFactory } from "./store.contract.js";

const item = (version: number, document: unknown) => ({
  version,
  document: JSON.stringify(document),
  applied: "{}",
});

const realClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

export function describeVariablesContract(name: string, factory: StoreFactory): void {
  describe(`${name}: execution variables`, () => {
    let store: Store;
    let cleanup: (() => Promise<void>) | undefined;
    beforeAll(async () => {
      ({ store, cleanup } = await factory());
    });
    afterAll(async () => {
      await cleanup?.();
    });

    /** Just what engine/vars.ts uses of an engine context. */
    const context = () =>
      ({
        store,
        clock: realClock,
        ids: { executionId: randomUUID, token: randomUUID, random: Math.random },
        logger: silentLogger,
      }) as unknown as Parameters<typeof applyVariables>[0];

    it("writes the first version only when none is stored, and each next one only at the version read", async () => {
      const id = randomUUID();
      expect(await store.getVariables(id)).toBeUndefined();
      expect(await store.putVariables(id, item(1, { a: 1 }), 0, 1)).toBe(true);
      expect(await store.putVariables(id, item(1, { a: 2 }), 0, 1)).toBe(false);
      expect(await store.getVariables(id)).toEqual(item(1, { a: 1 }));
      expect(await store.putVariables(id, item(2, { a: 3 }), 2, 1)).toBe(false);
      expect(await store.putVariables(id, item(2, { a: 3 }), 1, 1)).toBe(true);
      expect(await store.getVariables(id)).toEqual(item(2, { a: 3 }));
    });

    it("takes exactly one of racing writes at one version", async () => {
      const id = randomUUID();
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) => store.putVariables(id, item(1, { i }), 0, 1)),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
    });

    // A hundred writers at once on one item: on an emulator that serializes, many rounds of retries.
    it("counts 100 concurrent incrs exactly, each node once even when applied twice", {
      timeout: 180_000,
    }, async () => {
      const id = randomUUID();
      const ctx = context();
      const incr = { op: "incr", path: "counter", by: 1 } as const;
      const results = await Promise.all(
        Array.from({ length: 100 }, (_, i) => applyVariables(ctx, id, `n${i}`, 1, incr, true)),
      );
      expect(await readVariables(ctx, id)).toEqual({ counter: 100 });
      expect(results.map((r) => (r as { value: number }).value).sort((a, b) => a - b)).toEqual(
        Array.from({ length: 100 }, (_, i) => i + 1),
      );
      // A duplicate (or a second attempt) of a node that applied gives its result again, counting nothing.
      expect(await applyVariables(ctx, id, "n7", 2, incr, true)).toEqual(results[7]);
      expect(await readVariables(ctx, id)).toEqual({ counter: 100 });
    });
  });
}
