import { describe, expect, it } from "vitest";
import { MemoryStore } from "../../shared/adapters/memory/store.js";
import { ArrivalBatcher } from "../../shared/engine/arrival-batcher.js";
import type { ShardArrivalRequest, Store } from "../../shared/ports.js";

/** A store whose shard writes wait until released, so the test decides what is in flight. */
function heldStore() {
  const inner = new MemoryStore();
  const writes: ShardArrivalRequest[] = [];
  const held: Array<() => void> = [];
  const store: Pick<Store, "recordShardArrival"> = {
    async recordShardArrival(request) {
      writes.push(request);
      await new Promise<void>((release) => held.push(release));
      return inner.recordShardArrival(request);
    },
  };
  const releaseNext = async () => {
    held.shift()?.();
    await new Promise((r) => setImmediate(r));
  };
  return { store, writes, releaseNext, held };
}

const request = (parentIndex: number, shard = 0, childId = "join"): ShardArrivalRequest => ({
  executionId: "ex",
  childId,
  shard,
  parentIndexes: [parentIndex],
  now: 1000 + parentIndex,
});

describe("ArrivalBatcher (group commit of shard arrivals in one invocation)", () => {
  it("sends the first arrival at once and the ones that come while it is in flight together next", async () => {
    const { store, writes, releaseNext } = heldStore();
    const batcher = new ArrivalBatcher(store);
    const first = batcher.record(request(1));
    await Promise.resolve();
    expect(writes.map((w) => w.parentIndexes)).toEqual([[1]]);
    const later = [batcher.record(request(2)), batcher.record(request(3)), batcher.record(request(2))];
    expect(writes).toHaveLength(1); // they wait for the write in flight
    await releaseNext();
    expect(await first).toEqual({ shard: 0, okDeps: [1] });
    expect(writes.map((w) => w.parentIndexes)).toEqual([[1], [2, 3, 2]]);
    // The latest arrival's time goes with the batch (a retention counts from the last write).
    expect(writes[1]?.now).toBe(1003);
    await releaseNext();
    for (const shard of await Promise.all(later)) expect(shard).toEqual({ shard: 0, okDeps: [1, 2, 3] });
    // Two writes carried the four arrivals.
    expect(writes.map((w) => w.parentIndexes.length)).toEqual([1, 3]);
  });

  it("keeps shards, children and executions apart", async () => {
    const { store, writes, releaseNext, held } = heldStore();
    const batcher = new ArrivalBatcher(store);
    const all = [
      batcher.record(request(1, 0)),
      batcher.record(request(2, 1)),
      batcher.record(request(3, 0, "other")),
    ];
    await Promise.resolve();
    expect(writes).toHaveLength(3);
    while (held.length > 0) await releaseNext();
    expect(await Promise.all(all)).toEqual([
      { shard: 0, okDeps: [1] },
      { shard: 1, okDeps: [2] },
      { shard: 0, okDeps: [3] },
    ]);
  });

  it("fails every arrival of a failed write, and starts afresh afterwards", async () => {
    let fail = true;
    const inner = new MemoryStore();
    const batcher = new ArrivalBatcher({
      async recordShardArrival(r) {
        await Promise.resolve();
        if (fail) throw new Error("throttled");
        return inner.recordShardArrival(r);
      },
    });
    const failed = [batcher.record(request(1)), batcher.record(request(2))];
    await expect(failed[0]).rejects.toThrow("throttled");
    await expect(failed[1]).rejects.toThrow("throttled");
    fail = false;
    expect(await batcher.record(request(3))).toEqual({ shard: 0, okDeps: [3] });
  });
});
