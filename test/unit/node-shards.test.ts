/**
 * An execution's node shards (domain/node-shards.ts) and the keys they give its nodes, map items and
 * arrival shards (shared/adapters/dynamo/keys.ts).
 */
import { describe, expect, it } from "vitest";
import {
  arrivalNodeShard,
  arrivalShardKey,
  executionIdFromPk,
  executionKey,
  executionPk,
  executionPks,
  fanOutKey,
  nodeKey,
  nodeShard,
  reservationKey,
} from "../../shared/adapters/dynamo/keys.js";
import { NodePartitions } from "../../shared/adapters/dynamo/node-partitions.js";
import type { TableIO } from "../../shared/adapters/dynamo/table-io.js";
import { compileGraph } from "../../shared/domain/graph.js";
import { mapItemId, mapTallyId } from "../../shared/domain/map.js";
import { NODE_SHARDS, nodeShardsOf, SMALL_GRAPH_NODES } from "../../shared/domain/node-shards.js";
import { node, workflow } from "./domain-fixtures.js";

const chain = (length: number) =>
  workflow(Array.from({ length }, (_, i) => node(`n${i}`, i === 0 ? undefined : [`n${i - 1}`])));

describe("nodeShardsOf", () => {
  it("keeps a graph of at most 64 nodes and no map on one partition, and spreads any other over 16", () => {
    expect(NODE_SHARDS).toBe(16);
    expect(SMALL_GRAPH_NODES).toBe(64);
    expect(nodeShardsOf(compileGraph(chain(1)))).toBe(1);
    expect(nodeShardsOf(compileGraph(chain(64)))).toBe(1);
    expect(nodeShardsOf(compileGraph(chain(65)))).toBe(16);
    expect(nodeShardsOf(compileGraph(chain(2000)))).toBe(16);
    const map = workflow([
      node("list"),
      node("m", ["list"], { type: "map", params: { items: [1, 2], task: { type: "echo" } } }),
    ]);
    expect(nodeShardsOf(compileGraph(map))).toBe(16);
  });

  it("does not count the onFailure handler, which runs once", () => {
    const graph = compileGraph({ ...chain(64), onFailure: { type: "noop" } });
    expect(graph.onFailure).toBeDefined();
    expect(nodeShardsOf(graph)).toBe(1);
  });
});

describe("execution partition keys", () => {
  const id = "2f1c0e9a-5b7d-4c3e-8f21-9a0b1c2d3e4f";

  it("with one shard, puts everything in EX#<id>, the keys of before", () => {
    for (const nodeId of ["a", "m[1.7]", mapTallyId("m", 1, "lanes"), "$onFailure"]) {
      expect(nodeKey(id, nodeId, 1)).toEqual(nodeKey(id, nodeId));
      expect(nodeKey(id, nodeId).pk).toBe(`EX#${id}`);
    }
    expect(nodeKey(id, "a")).toEqual({ pk: `EX#${id}`, sk: "N#a" });
    expect(nodeKey(id, "m[1.7]")).toEqual({ pk: `EX#${id}`, sk: "I#m[1.7]" });
    expect(arrivalShardKey(id, "join", 3)).toEqual({ pk: `EX#${id}`, sk: "A#join#0003" });
    expect(arrivalShardKey(id, "join", 3, 1)).toEqual(arrivalShardKey(id, "join", 3));
    expect(executionPks(id, 1)).toEqual([`EX#${id}`]);
    expect(nodeShard("anything", 1)).toBe(0);
    // A count that is no whole number of at least one is one.
    for (const odd of [0, -3, 2.5, Number.NaN]) expect(nodeShard("m[1.5]", odd)).toBe(0);
  });

  it("names shard 0 EX#<id> and shard s EX#<id>#<s, 2 digits>", () => {
    expect(executionPk(id)).toBe(`EX#${id}`);
    expect(executionPk(id, 0)).toBe(`EX#${id}`);
    expect(executionPk(id, 1)).toBe(`EX#${id}#01`);
    expect(executionPk(id, 15)).toBe(`EX#${id}#15`);
    expect(executionPks(id, 16)).toEqual([
      `EX#${id}`,
      ...Array.from({ length: 15 }, (_, i) => `EX#${id}#${String(i + 1).padStart(2, "0")}`),
    ]);
  });

  it("spreads a map's items by index, and other nodes by a hash of their id", () => {
    for (let index = 0; index < 100; index++) {
      const item = mapItemId("m", 2, index);
      expect(nodeShard(item, 16)).toBe(index % 16);
      expect(nodeKey(id, item, 16)).toEqual({ pk: executionPk(id, index % 16), sk: `I#${item}` });
    }
    const nodeIds = Array.from({ length: 400 }, (_, i) => `node-${i}`);
    const counts = new Array<number>(16).fill(0);
    for (const nodeId of nodeIds) {
      const shard = nodeShard(nodeId, 16);
      expect(shard).toBe(nodeShard(nodeId, 16));
      expect(nodeKey(id, nodeId, 16)).toEqual({ pk: executionPk(id, shard), sk: `N#${nodeId}` });
      counts[shard]! += 1;
    }
    // 400 ids over 16 shards: every shard has some, none many (25 each on average).
    expect(Math.min(...counts)).toBeGreaterThan(5);
    expect(Math.max(...counts)).toBeLessThan(50);
  });

  it("spreads one fan-in's arrival shards over every partition, from its child's hash on", () => {
    const first = arrivalNodeShard("join", 0, 16);
    const shards = Array.from({ length: 16 }, (_, shard) => arrivalNodeShard("join", shard, 16));
    expect(new Set(shards).size).toBe(16);
    expect(shards).toEqual(shards.map((_, shard) => (first + shard) % 16));
    expect(arrivalShardKey(id, "join", 20, 16)).toEqual({
      pk: executionPk(id, (first + 20) % 16),
      sk: "A#join#0020",
    });
  });

  it("keeps the execution item, its fan-out budget and reservations in EX#<id>", () => {
    expect(executionKey(id).pk).toBe(`EX#${id}`);
    expect(fanOutKey(id).pk).toBe(`EX#${id}`);
    expect(reservationKey(id, "m[1]").pk).toBe(`EX#${id}`);
  });

  it("reads the execution back from any of its partition keys", () => {
    for (const pk of executionPks(id, 16)) expect(executionIdFromPk(pk)).toBe(id);
    expect(executionIdFromPk(nodeKey(id, "m[1.9]", 16).pk)).toBe(id);
    expect(executionIdFromPk("ex7")).toBe("ex7");
  });
});

describe("NodePartitions", () => {
  /** A table holding `items` (execution id → its item's nodeShards, or null for none), its reads counted. */
  const table = (items: Record<string, number | null>) => {
    const reads: string[] = [];
    const io = {
      get: async (key: { pk: string; sk: string }, attributes?: readonly string[]) => {
        const id = executionIdFromPk(key.pk);
        reads.push(id);
        expect(key.sk).toBe("EX");
        expect(attributes).toEqual(["pk", "nodeShards"]);
        if (!(id in items)) return undefined;
        const shards = items[id];
        return shards === null ? { pk: key.pk } : { pk: key.pk, nodeShards: shards };
      },
    } as unknown as TableIO;
    return { io, reads };
  };

  it("remembers what records say, reads a miss once, and keeps at most its capacity, least recent out", async () => {
    const { io, reads } = table({ a: 16, b: null, c: 16 });
    const partitions = new NodePartitions(io, 2);
    partitions.remember({ executionId: "x", nodeShards: 16 }, { executionId: "y" }, undefined);
    expect(await partitions.of("x")).toBe(16);
    expect(await partitions.of("y")).toBe(1);
    expect(reads).toEqual([]);
    expect(await partitions.of("a")).toBe(16); // read; x, the least recent, goes
    expect(await partitions.of("a")).toBe(16);
    expect(await partitions.of("b")).toBe(1); // an item without the field: one shard, remembered
    expect(await partitions.of("b")).toBe(1);
    expect(reads).toEqual(["a", "b"]);
    expect(await partitions.of("x")).toBe(1); // forgotten, and not in this table
    expect(reads).toEqual(["a", "b", "x"]);
  });

  it("does not remember an execution it did not find", async () => {
    const items: Record<string, number | null> = {};
    const { io, reads } = table(items);
    const partitions = new NodePartitions(io);
    expect(await partitions.of("late")).toBe(1);
    items.late = 16;
    expect(await partitions.of("late")).toBe(16);
    expect(await partitions.of("late")).toBe(16);
    expect(reads).toEqual(["late", "late"]);
  });

  it("waits for a read of the record under way rather than reading again", async () => {
    const { io, reads } = table({ e: 16 });
    const partitions = new NodePartitions(io);
    let answer: (record: { executionId: string; nodeShards: number }) => void = () => {};
    const read = partitions.read(
      "e",
      new Promise<{ executionId: string; nodeShards: number }>((resolve) => {
        answer = resolve;
      }).then((record) => {
        partitions.remember(record);
        return record;
      }),
    );
    const shards = partitions.of("e");
    answer({ executionId: "e", nodeShards: 16 });
    expect(await read).toEqual({ executionId: "e", nodeShards: 16 });
    expect(await shards).toBe(16);
    expect(reads).toEqual([]);
    // A read that fails or finds nothing leaves the lookup to read for itself.
    const failed = partitions.read("f", Promise.reject(new Error("throttled")));
    const lookup = partitions.of("f");
    await expect(failed).rejects.toThrow("throttled");
    expect(await lookup).toBe(1);
    expect(reads).toEqual(["f"]);
  });
});
