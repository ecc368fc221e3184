/** The Store contract on every adapter: in memory, and DynamoDB on the emulator (moto by default). */
import { randomUUID } from "node:crypto";
import { DeleteTableCommand } from "@aws-sdk/client-dynamodb";
import { DeleteCommand, GetCommand, PutCommand, ScanCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  arrivalShardKey,
  dueKeys,
  executionKey,
  executionPk,
  idempotencyKey,
  leaseKey,
  nodeKey,
  offerItemKey,
  offerMarkerKey,
  offerShard,
  POOL_SHARDS,
  poolReadShard,
  WORKER_SHARDS,
  workerKey,
  workflowListingKey,
} from "../../shared/adapters/dynamo/keys.js";
import { DynamoStore } from "../../shared/adapters/dynamo/store.js";
import { ensureTable } from "../../shared/adapters/dynamo/table.js";
import { TableIO } from "../../shared/adapters/dynamo/table-io.js";
import { listReadyTasks, pageWorkers } from "../../shared/adapters/dynamo/workers.js";
import { MemoryStore } from "../../shared/adapters/memory/store.js";
import { holdKey, type ReadyTask, workerExpiresAt } from "../../shared/domain/placement.js";
import type { ExecutionRecord } from "../../shared/domain/records.js";
import type { Store } from "../../shared/ports.js";
import { type AwsClients, awsClients, uniqueName } from "../support/aws.js";
import { describeSlotsContract } from "./slots.contract.js";
import { describeStoreContract } from "./store.contract.js";
import { describeStoreFenceContract } from "./store-fences.contract.js";
import { describeTimerContract } from "./timers.contract.js";
import { describeVariablesContract } from "./variables.contract.js";
import { describeWorkerContract } from "./workers.contract.js";
import { describeWorkflowListingContract } from "./workflow-listing.contract.js";

const memoryStore = async () => ({ store: new MemoryStore() });
const emulatorStore = async () => {
  const clients = awsClients(inject("awsEndpoints"));
  const table = uniqueName("weft-contract");
  await ensureTable(clients.dynamo, table);
  return {
    store: new DynamoStore(clients.doc, table),
    offerShard,
    async cleanup() {
      await clients.dynamo.send(new DeleteTableCommand({ TableName: table })).catch(() => undefined);
      clients.destroy();
    },
  };
};

describeStoreContract("MemoryStore", memoryStore);
describeStoreContract("DynamoStore (emulator)", emulatorStore);
describeStoreFenceContract("MemoryStore", memoryStore);
describeStoreFenceContract("DynamoStore (emulator)", emulatorStore);
describeWorkerContract("MemoryStore", memoryStore);
describeWorkerContract("DynamoStore (emulator)", emulatorStore);
describeWorkflowListingContract("MemoryStore", memoryStore);
describeTimerContract("MemoryStore", memoryStore);
describeTimerContract("DynamoStore (emulator)", emulatorStore);
describeWorkflowListingContract("DynamoStore (emulator)", emulatorStore);
describeVariablesContract("MemoryStore", memoryStore);
describeVariablesContract("DynamoStore (emulator)", emulatorStore);
describeSlotsContract("MemoryStore", memoryStore);
describeSlotsContract("DynamoStore (emulator)", emulatorStore);

/** What the contract cannot see: the sparse due index (gsi2) is maintained in the same writes. */

/** A RUNNING execution record of workflow "wf" v1, with a new id. */
function running(overrides: Partial<ExecutionRecord> = {}): ExecutionRecord {
  return {
    executionId: randomUUID(),
    workflow: "wf",
    version: 1,
    status: "RUNNING",
    input: { json: "null" },
    createdAt: 1,
    sinksDone: [],
    ...overrides,
  };
}

describe("DynamoStore due-index keys (emulator)", () => {
  const t = emulatorTable("weft-due");
  const raw = t.raw;
  const dueAttributes = async (id: string) => {
    const item = await raw(executionKey(id));
    return { sweepAt: item?.sweepAt, gsi2pk: item?.gsi2pk, gsi2sk: item?.gsi2sk };
  };

  it("sets the keys with sweepAt and removes them with it, or when the execution finishes without one", async () => {
    const record = running({ sweepAt: 1_700_000_000_123 });
    const id = record.executionId;
    await t.store.createExecution(record, { at: 1, type: "ExecutionCreated" });
    const keys = dueKeys(id, 1_700_000_000_123);
    expect(keys.gsi2pk).toMatch(/^SW#[0-7]$/);
    expect(keys.gsi2sk).toBe(`001700000000123#${id}`);
    expect(await dueAttributes(id)).toEqual({ sweepAt: 1_700_000_000_123, ...keys });

    await t.store.transitionExecution(id, ["RUNNING"], { sweepAt: 42 });
    expect(await dueAttributes(id)).toEqual({ sweepAt: 42, ...dueKeys(id, 42) });
    expect(await t.store.pullSweepAt(id, 7)).toBe(true);
    expect(await dueAttributes(id)).toEqual({ sweepAt: 7, ...dueKeys(id, 7) });

    await t.store.transitionExecution(id, ["RUNNING"], { sweepAt: null });
    expect(await dueAttributes(id)).toEqual({ sweepAt: undefined, gsi2pk: undefined, gsi2sk: undefined });

    // Finishing removes them, unless the same write keeps a sweepAt (cleanup still to confirm).
    for (const status of ["SUCCEEDED", "FAILED", "CANCELLED"] as const) {
      const other = running({ sweepAt: 5 });
      await t.store.createExecution(other, { at: 1, type: "ExecutionCreated" });
      await t.store.transitionExecution(other.executionId, ["RUNNING"], { status });
      expect(await dueAttributes(other.executionId)).toEqual({
        sweepAt: undefined,
        gsi2pk: undefined,
        gsi2sk: undefined,
      });
      const kept = running({ sweepAt: 5 });
      await t.store.createExecution(kept, { at: 1, type: "ExecutionCreated" });
      await t.store.transitionExecution(kept.executionId, ["RUNNING"], { status, sweepAt: 9 });
      expect(await dueAttributes(kept.executionId)).toEqual({ sweepAt: 9, ...dueKeys(kept.executionId, 9) });
    }
  });

  it("stores a lease as owner and expiry", async () => {
    expect(await t.store.acquireLease("sweeper", "me", 10, 20)).toBe(true);
    expect(await raw(leaseKey("sweeper"))).toMatchObject({ owner: "me", expiresAt: 20 });
  });
});

/** Retention: finished items get a TTL from their finish time; a redrive removes it again. */
describe("DynamoStore retention TTL (emulator)", () => {
  let clients: AwsClients;
  let table: string;
  let store: DynamoStore;

  beforeAll(async () => {
    clients = awsClients(inject("awsEndpoints"));
    table = uniqueName("weft-ttl");
    await ensureTable(clients.dynamo, table);
    store = new DynamoStore(clients.doc, table, { retentionDays: 7 });
  });
  afterAll(async () => {
    await clients.dynamo.send(new DeleteTableCommand({ TableName: table })).catch(() => undefined);
    clients.destroy();
  });

  const rawTtl = async (key: { pk: string; sk: string }) =>
    (await clients.doc.send(new GetCommand({ TableName: table, Key: key, ConsistentRead: true }))).Item
      ?.expiresAt;

  it("sets expiresAt (epoch seconds) when an execution and a node finish, and removes it on revival", async () => {
    const executionId = randomUUID();
    const finishedAt = 1_800_000_000_123;
    await store.createExecution(
      {
        executionId,
        workflow: "w",
        version: 1,
        status: "RUNNING",
        input: { json: "null" },
        createdAt: 1,
        startedAt: 1,
        sinksDone: [],
      },
      { at: 1, type: "ExecutionStarted" },
    );
    expect(await rawTtl(executionKey(executionId))).toBeUndefined();
    await store.transitionExecution(executionId, ["RUNNING"], { status: "FAILED", finishedAt });
    expect(await rawTtl(executionKey(executionId))).toBe(Math.ceil(finishedAt / 1000) + 7 * 86_400);

    await store.transitionNode(executionId, "n", { status: ["PENDING"] }, { status: "FAILED", finishedAt });
    const node = nodeKey(executionId, "n");
    expect(await rawTtl(node)).toBe(Math.ceil(finishedAt / 1000) + 7 * 86_400);

    // A redrive revives both: no TTL, and finishedAt is removed (not stored as null).
    await store.transitionExecution(executionId, ["FAILED"], { status: "RUNNING", finishedAt: null });
    const revived = await store.transitionNode(
      executionId,
      "n",
      { status: ["FAILED"] },
      { status: "QUEUED", attempt: 2, finishedAt: null },
    );
    expect(revived.ok && revived.record.finishedAt).toBeUndefined();
    expect(await rawTtl(executionKey(executionId))).toBeUndefined();
    expect(await rawTtl(node)).toBeUndefined();
  });
});

/** What the contract cannot see: the key item's shape, and a key whose execution the retention deleted. */
describe("DynamoStore idempotency key items (emulator)", () => {
  const t = emulatorTable("weft-idem");
  const raw = t.raw;
  const keyed = (n: number) => ({ inputSha256: `${n}`.padStart(64, "0"), start: n % 2 === 0 });
  const record = (key: string): ExecutionRecord => ({
    executionId: randomUUID(),
    workflow: "orders",
    version: 1,
    status: "PENDING",
    input: { json: "null" },
    createdAt: 7,
    sinksDone: [],
    idempotencyKey: key,
  });

  it("keeps the key under its workflow with the execution and what the request asked", async () => {
    const first = record("k#1");
    await t.store.createExecution(first, { at: 7, type: "ExecutionCreated" }, keyed(2));
    expect(idempotencyKey("orders", "k#1")).toEqual({ pk: "IDEM#orders#k#1", sk: "IDEM" });
    expect(await raw(idempotencyKey("orders", "k#1"))).toEqual({
      pk: "IDEM#orders#k#1",
      sk: "IDEM",
      executionId: first.executionId,
      createdAt: 7,
      inputSha256: keyed(2).inputSha256,
      start: true,
    });
  });

  it("frees a key whose execution the retention deleted: the next create claims it", async () => {
    const first = record("expired");
    await t.store.createExecution(first, { at: 7, type: "ExecutionCreated" }, keyed(1));
    // DynamoDB's TTL deletes the finished execution; its key item has no TTL and stays.
    await t.clients.doc.send(new DeleteCommand({ TableName: t.table, Key: executionKey(first.executionId) }));

    const racers = [record("expired"), record("expired"), record("expired")];
    const results = await Promise.all(
      racers.map((r, i) => t.store.createExecution(r, { at: 8, type: "ExecutionCreated" }, keyed(10 + i))),
    );
    const winners = results.flatMap((r, i) => (r.created ? [i] : []));
    expect(winners).toHaveLength(1);
    const winner = racers[winners[0]!]!;
    for (const result of results)
      if ("existing" in result) expect(result.existing.executionId).toBe(winner.executionId);
    expect((await raw(idempotencyKey("orders", "expired")))?.executionId).toBe(winner.executionId);
    expect(await t.store.getExecution(winner.executionId)).toEqual(winner);
  });
});

/** What the contract cannot see: where workers, offers and their markers are, and that a take removes both. */
describe("DynamoStore worker and offer items (emulator)", () => {
  const t = emulatorTable("weft-workers");
  const raw = t.raw;

  it("keeps a worker under its WORKERS shard with its holds as a map, and an offer by time in its pool's shard with a marker", async () => {
    const put = await t.store.putWorker(
      {
        workerId: "w1",
        pool: "gpu",
        executors: [],
        capabilities: {},
        labels: [],
        maxParallel: 1,
        registeredAt: 1,
        heartbeatAt: 1,
        heartbeatSeconds: 30,
      },
      0,
    );
    if (!put.ok) throw new Error("refused");
    const worker = put.record;
    expect(workerKey("w1")).toEqual({ pk: expect.stringMatching(/^WORKERS#\d\d$/), sk: "W#w1" });
    // Its expiry is the table's TTL attribute, in epoch seconds: DynamoDB deletes it after the
    // retention; a heartbeat moves it on.
    expect(await raw(workerKey("w1"))).toMatchObject({
      pk: workerKey("w1").pk,
      holds: {},
      version: 1,
      expiresAt: workerExpiresAt(1),
    });
    await t.store.touchWorker("w1", 3_600_000);
    expect(await raw(workerKey("w1"))).toMatchObject({
      heartbeatAt: 3_600_000,
      expiresAt: workerExpiresAt(3_600_000),
    });

    const executionId = randomUUID();
    const task: ReadyTask = {
      pool: "gpu",
      executionId,
      nodeId: "n#1",
      attempt: 2,
      workflow: "wf",
      version: 1,
      runsOn: { pool: "gpu" },
      offeredAt: 5_000,
    };
    await t.store.offerTask(task);
    const offer = offerItemKey(task);
    const shard = String(offerShard(task)).padStart(2, "0");
    expect(offer).toEqual({ pk: `POOL#gpu#${shard}`, sk: `000000000005000#${executionId}/n#1#2` });
    expect(await raw(offer)).toMatchObject({ nodeId: "n#1", attempt: 2, offeredAt: 5_000 });
    expect(offerMarkerKey(task)).toEqual({ pk: `OFFERED#${executionId}`, sk: "n#1#2" });
    expect(await raw(offerMarkerKey(task))).toMatchObject({
      pool: "gpu",
      offerPk: offer.pk,
      offerSk: offer.sk,
    });

    await t.store.transitionNode(
      executionId,
      "n#1",
      { status: ["PENDING"] },
      { status: "QUEUED", attempt: 2 },
    );
    const hold = {
      executionId,
      nodeId: "n#1",
      attempt: 2,
      leaseToken: "t",
      slot: "wf/n#1",
      claimedAt: 6_000,
    };
    const taken = await t.store.takeTask({
      task,
      workerId: "w1",
      workerVersion: worker.version,
      hold,
      claim: {
        condition: { status: ["QUEUED"], attempt: 2 },
        patch: { status: "RUNNING", lease: { token: "t", expiresAt: 9_000 } },
        event: { at: 6_000, type: "NodeStarted", nodeId: "n#1", attempt: 2 },
      },
    });
    expect(taken.ok).toBe(true);
    expect(await raw(offer)).toBeUndefined();
    expect(await raw(offerMarkerKey(task))).toBeUndefined();
    expect((await raw(workerKey("w1")))?.holds).toEqual({ [holdKey(executionId, "n#1")]: hold });
    expect(await raw(nodeKey(executionId, "n#1"))).toMatchObject({ status: "RUNNING", attempt: 2 });
  });
});

/** What the contract cannot see: how the registry and the pools spread over their shards. */
describe("DynamoStore worker and pool shards (emulator)", () => {
  const t = emulatorTable("weft-shards");
  const raw = t.raw;
  const registration = (workerId: string, pool: string) => ({
    workerId,
    pool,
    executors: [],
    capabilities: {},
    labels: [],
    maxParallel: 1,
    registeredAt: 1,
    heartbeatAt: 1,
    heartbeatSeconds: 30,
  });
  const task = (pool: string, nodeId: string, offeredAt: number): ReadyTask => ({
    pool,
    executionId: randomUUID(),
    nodeId,
    attempt: 1,
    workflow: "wf",
    version: 1,
    runsOn: { pool },
    offeredAt,
  });
  /** The table's reads and writes through workers.ts, each Query counted. */
  const counted = () => {
    const calls = { queries: 0, itemsRead: 0 };
    const doc = {
      send: async (command: { constructor: { name: string } }) => {
        const query = command.constructor.name === "QueryCommand";
        if (query) calls.queries++;
        const result = (await t.clients.doc.send(command as never)) as { Items?: unknown[] };
        if (query) calls.itemsRead += result.Items?.length ?? 0;
        return result;
      },
    } as unknown as typeof t.clients.doc;
    return { io: new TableIO(doc, t.table), calls };
  };

  it("spreads the registry over its shards by worker id, and lists and pages it whole", async () => {
    const pool = `p-${randomUUID().slice(0, 8)}`;
    const ids = Array.from({ length: 96 }, (_, i) => `${pool}-w${String(i).padStart(2, "0")}`);
    for (const id of ids) {
      const put = await t.store.putWorker(registration(id, pool), 0);
      expect(put.ok).toBe(true);
    }
    const partitions = new Set(ids.map((id) => workerKey(id).pk));
    expect(partitions.size).toBeGreaterThan(WORKER_SHARDS / 4);
    for (const id of ids.slice(0, 8)) expect(await raw(workerKey(id))).toMatchObject({ workerId: id });
    expect((await t.store.listWorkers()).map((w) => w.workerId).filter((id) => id.startsWith(pool))).toEqual(
      ids,
    );
    const paged: string[] = [];
    let next: string | undefined;
    do {
      const page = await t.store.pageWorkers({ limit: 25, ...(next === undefined ? {} : { next }) }, 1);
      paged.push(...page.items.map((w) => w.workerId));
      next = page.next;
    } while (next !== undefined);
    expect(paged.filter((id) => id.startsWith(pool))).toEqual(ids);
    // A page reads a few ids of each shard, not `limit` of each.
    const { io, calls } = counted();
    const first = await pageWorkers(io, { limit: 25 }, 1);
    expect(first.items.length).toBeGreaterThan(0);
    expect(calls.queries).toBe(WORKER_SHARDS);
    expect(calls.itemsRead).toBeLessThanOrEqual(WORKER_SHARDS * 3);
  });

  it("spreads a pool's offers over its shards; a poll starts where its `from` says, one Query when that shard has enough", async () => {
    const pool = `p-${randomUUID().slice(0, 8)}`;
    const tasks = Array.from({ length: 64 }, (_, i) => task(pool, `n${i}`, 10_000 + i));
    for (const offer of tasks) await t.store.offerTask(offer);
    const shards = new Set(tasks.map(offerShard));
    expect(shards.size).toBeGreaterThan(POOL_SHARDS / 2);
    for (const offer of tasks.slice(0, 8))
      expect(await raw(offerItemKey(offer))).toMatchObject({ nodeId: offer.nodeId });

    const firsts = new Set<number>();
    for (let i = 0; i < 64; i++) {
      const from = `poll-${i}`;
      const start = poolReadShard(from);
      const { io, calls } = counted();
      const [first, ...rest] = await listReadyTasks(io, pool, 1, from);
      expect(rest).toEqual([]);
      const oldestOfShard = (shard: number) => tasks.filter((offer) => offerShard(offer) === shard)[0];
      if (shards.has(start)) {
        // Its own shard's oldest, read with one Query.
        expect(first).toEqual(oldestOfShard(start));
        expect(calls.queries).toBe(1);
      } else {
        // Its shard empty: the oldest of the first shard after it that holds one.
        let shard = start;
        while (!shards.has(shard)) shard = (shard + 1) % POOL_SHARDS;
        expect(first).toEqual(oldestOfShard(shard));
      }
      firsts.add(offerShard(first!));
    }
    // The polls start all over the pool: none waits behind the others.
    expect(firsts.size).toBeGreaterThan(POOL_SHARDS / 4);
    // Without `from` (the sweeper's gauges): the pool's oldest, exactly.
    expect(await t.store.listReadyTasks(pool, 5)).toEqual(tasks.slice(0, 5));
  });

  it("hands a poll's `from` to the shards: one Query when its start shard holds enough", async () => {
    const pool = `p-${randomUUID().slice(0, 8)}`;
    const tasks = Array.from({ length: 64 }, (_, i) => task(pool, `n${i}`, 10_000 + i));
    for (const offer of tasks) await t.store.offerTask(offer);
    const from = Array.from({ length: 256 }, (_, i) => `poll-${i}`).find((f) =>
      tasks.some((offer) => offerShard(offer) === poolReadShard(f)),
    )!;
    const { io, calls } = counted();
    const store: Store = new DynamoStore(io.doc, t.table);
    const read = await store.listReadyTasks(pool, 1, from);
    expect(read).toHaveLength(1);
    expect(offerShard(read[0]!)).toBe(poolReadShard(from));
    expect(calls.queries).toBe(1);
  });

  it("ignores the items of before the shards: a worker registers again, and an attempt offered then is offered again", async () => {
    const pool = `p-${randomUUID().slice(0, 8)}`;
    const old = task(pool, "n", 5_000);
    const put = async (item: Record<string, unknown>) =>
      t.clients.doc.send(new PutCommand({ TableName: t.table, Item: item }));
    // As the unsharded table held them: a worker under WORKERS, an offer under POOL#<pool>, its marker.
    await put({
      pk: "WORKERS",
      sk: `W#${pool}-w`,
      ...registration(`${pool}-w`, pool),
      holds: {},
      version: 1,
    });
    const legacySk = `000000000005000#${old.executionId}/n#1`;
    await put({ pk: `POOL#${pool}`, sk: legacySk, ...old });
    await put({ pk: `OFFER#${old.executionId}`, sk: "n#1", pool, offerSk: legacySk });

    expect(await t.store.getWorker(`${pool}-w`)).toBeUndefined();
    expect(await t.store.touchWorker(`${pool}-w`, 2)).toBeUndefined();
    expect(await t.store.listReadyTasks(pool, 10)).toEqual([]);
    // The sweeper's resend of the still QUEUED node offers it again, in its shard.
    const again = { ...old, offeredAt: 9_000 };
    await t.store.offerTask(again);
    expect(await t.store.listReadyTasks(pool, 10)).toEqual([again]);
    const store: Store = t.store;
    expect(await store.listReadyTasks(pool, 10, "poll")).toEqual([again]);
  });
});

/** What the contract cannot see: a workflow's listing item, written with each of its versions. */
describe("DynamoStore workflow listing items (emulator)", () => {
  const t = emulatorTable("weft-wf-list");
  const raw = t.raw;
  const record = (name: string, version: number, createdAt: number, description?: string) => ({
    name,
    version,
    definitionHash: `h${version}`,
    definition: {
      name,
      ...(description === undefined ? {} : { description }),
      nodes: [{ id: "a", type: "noop" }],
    },
    createdAt,
  });

  it("keeps one item per workflow under WORKFLOWS, brought up to each new version", async () => {
    expect(workflowListingKey("orders")).toEqual({ pk: "WORKFLOWS", sk: "orders" });
    await t.store.putWorkflowVersion(record("orders", 1, 5, "d1"));
    expect(await raw(workflowListingKey("orders"))).toEqual({
      pk: "WORKFLOWS",
      sk: "orders",
      name: "orders",
      latestVersion: 1,
      createdAt: 5,
      description: "d1",
    });
    await t.store.putWorkflowVersion(record("orders", 2, 9));
    expect(await raw(workflowListingKey("orders"))).toEqual({
      pk: "WORKFLOWS",
      sk: "orders",
      name: "orders",
      latestVersion: 2,
      createdAt: 5,
    });
  });

  it("lists a workflow registered before the listing existed from its next version on", async () => {
    await t.store.putWorkflowVersion(record("older", 1, 3));
    await t.clients.doc.send(new DeleteCommand({ TableName: t.table, Key: workflowListingKey("older") }));
    expect((await t.store.listWorkflows({ limit: 10 })).items.map((w) => w.name)).not.toContain("older");
    await t.store.putWorkflowVersion(record("older", 2, 7));
    const listed = (await t.store.listWorkflows({ limit: 10 })).items.find((w) => w.name === "older");
    expect(listed).toEqual({ name: "older", latestVersion: 2, createdAt: 7 });
  });
});

/** What the contract cannot see: which partition keys an execution's items are on. */
describe("DynamoStore node shards (emulator)", () => {
  const t = emulatorTable("weft-shards");
  const record = (nodeShards?: number): ExecutionRecord =>
    running(nodeShards === undefined ? {} : { nodeShards });
  /** Every item of the table under one of the execution's partition keys, as [pk, sk]. */
  const itemsOf = async (executionId: string) => {
    const found: Array<[string, string]> = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await t.clients.doc.send(
        new ScanCommand({ TableName: t.table, ConsistentRead: true, ExclusiveStartKey: startKey }),
      );
      for (const item of page.Items ?? []) {
        const pk = item.pk as string;
        if (pk === executionPk(executionId) || pk.startsWith(`${executionPk(executionId)}#`))
          found.push([pk, item.sk as string]);
      }
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return found;
  };
  /** 30 nodes, 32 items of a map and 16 arrival shards of one fan-in, each with an event. */
  const fill = async (store: Store, executionId: string) => {
    const nodeIds = [
      ...Array.from({ length: 30 }, (_, i) => `n${i}`),
      ...Array.from({ length: 32 }, (_, i) => `m[1.${i}]`),
    ];
    await Promise.all(
      nodeIds.map((nodeId, i) =>
        store.transitionNode(
          executionId,
          nodeId,
          { status: ["PENDING"] },
          { status: "QUEUED", attempt: 1 },
          { at: 10 + i, type: "NodeQueued", nodeId },
        ),
      ),
    );
    await Promise.all(
      Array.from({ length: 16 }, (_, shard) =>
        store.recordShardArrival({ executionId, childId: "join", shard, parentIndexes: [shard], now: 5 }),
      ),
    );
    return nodeIds;
  };

  it("spreads a wide execution's nodes, map items and arrival shards over its 16 partition keys", async () => {
    const wide = record(16);
    const id = wide.executionId;
    await t.store.createExecution(wide, { at: 1, type: "ExecutionStarted" });
    expect((await t.raw(executionKey(id)))?.nodeShards).toBe(16);
    const nodeIds = await fill(t.store, id);
    const items = await itemsOf(id);
    const pkOf = (sk: string) => items.find(([, s]) => s === sk)?.[0];
    // The execution item where it always was; every node and arrival shard at its sharded key.
    expect(pkOf("EX")).toBe(`EX#${id}`);
    for (const nodeId of nodeIds) expect(pkOf(nodeKey(id, nodeId, 16).sk)).toBe(nodeKey(id, nodeId, 16).pk);
    for (let i = 0; i < 32; i++)
      expect(pkOf(`I#m[1.${i}]`)).toBe(
        i % 16 === 0 ? `EX#${id}` : `EX#${id}#${String(i % 16).padStart(2, "0")}`,
      );
    for (let shard = 0; shard < 16; shard++)
      expect(pkOf(arrivalShardKey(id, "join", shard).sk)).toBe(arrivalShardKey(id, "join", shard, 16).pk);
    const pks = new Set(items.map(([pk]) => pk));
    expect(pks.size).toBe(16);
    const nodePks = new Set(items.filter(([, sk]) => sk.startsWith("N#")).map(([pk]) => pk));
    expect(nodePks.size).toBeGreaterThan(4);
    expect(items).toHaveLength(1 + 30 + 32 + 16);

    // Another process (its own store, nothing remembered) reads them all through the execution's record.
    const other = new DynamoStore(t.clients.doc, t.table);
    expect((await other.listNodes(id)).map((n) => n.nodeId)).toEqual(nodeIds.slice(0, 30).sort());
    expect((await other.listMapItems(id, "m", 1)).map((n) => n.nodeId)).toEqual(nodeIds.slice(30).sort());
    expect(await other.getNode(id, "m[1.7]")).toMatchObject({ executionId: id, status: "QUEUED" });
    expect((await other.getArrivalShards(id, "join", [3, 12])).map((s) => s.okDeps)).toEqual([[3], [12]]);
    expect(await other.listHistory(id, { withItems: true })).toHaveLength(1 + 62);
  });

  it("keeps a small execution's items all in EX#<id>, as before", async () => {
    const small = record();
    const id = small.executionId;
    await t.store.createExecution(small, { at: 1, type: "ExecutionStarted" });
    expect((await t.raw(executionKey(id)))?.nodeShards).toBeUndefined();
    await fill(t.store, id);
    const items = await itemsOf(id);
    expect(items).toHaveLength(1 + 30 + 32 + 16);
    expect(new Set(items.map(([pk]) => pk))).toEqual(new Set([`EX#${id}`]));
  });

  it("reads an execution's node shards once per process, and not at all beside a read of its record", async () => {
    const wide = record(16);
    const id = wide.executionId;
    await t.store.createExecution(wide, { at: 1, type: "ExecutionStarted" });
    await fill(t.store, id);
    /** Another process's store, its calls counted by command. */
    const counted = () => {
      const calls: string[] = [];
      const doc = {
        send: (command: { constructor: { name: string } }) => {
          calls.push(command.constructor.name.replace(/Command$/, ""));
          return (t.clients.doc.send as (c: unknown) => Promise<unknown>)(command);
        },
      } as unknown as typeof t.clients.doc;
      return { store: new DynamoStore(doc, t.table), calls };
    };
    // A node read first: the execution item's nodeShards, then the node; then the node alone.
    const first = counted();
    expect(await first.store.getNode(id, "n3")).toMatchObject({ nodeId: "n3" });
    expect(first.calls).toEqual(["Get", "Get"]);
    expect(await first.store.getNode(id, "m[1.3]")).toMatchObject({ nodeId: "m[1.3]" });
    expect(first.calls).toEqual(["Get", "Get", "Get"]);
    // Beside a read of the record (an attempt token's check): no read of its own.
    const beside = counted();
    const [execution, node] = await Promise.all([
      beside.store.getExecution(id),
      beside.store.getNode(id, "n3"),
    ]);
    expect(execution?.nodeShards).toBe(16);
    expect(node).toMatchObject({ nodeId: "n3" });
    expect(beside.calls).toEqual(["Get", "Get"]);
  });

  it("does not remember an execution it did not find: its nodes written after its creation are where it says", async () => {
    const wide = record(16);
    const id = wide.executionId;
    // A process looks before the execution exists (one shard then), ...
    const early = new DynamoStore(t.clients.doc, t.table);
    expect(await early.getNode(id, "n3")).toBeUndefined();
    expect(await early.listNodes(id)).toEqual([]);
    // ... another creates it and writes its nodes; the first finds them at their sharded keys.
    await t.store.createExecution(wide, { at: 1, type: "ExecutionStarted" });
    await fill(t.store, id);
    expect(await early.getNode(id, "n3")).toMatchObject({ nodeId: "n3", status: "QUEUED" });
    expect(await early.listNodes(id)).toHaveLength(30);
  });
});

/** A table of its own on the emulator for one describe block, with a DynamoStore and raw item reads. */
function emulatorTable(prefix: string) {
  let clients: AwsClients;
  let table: string;
  const t = {
    get clients() {
      return clients;
    },
    get table() {
      return table;
    },
    store: undefined as unknown as DynamoStore,
    raw: async (key: { pk: string; sk: string }) =>
      (await clients.doc.send(new GetCommand({ TableName: table, Key: key, ConsistentRead: true }))).Item,
  };
  beforeAll(async () => {
    clients = awsClients(inject("awsEndpoints"));
    table = uniqueName(prefix);
    await ensureTable(clients.dynamo, table);
    t.store = new DynamoStore(clients.doc, table);
  });
  afterAll(async () => {
    await clients.dynamo.send(new DeleteTableCommand({ TableName: table })).catch(() => undefined);
    clients.destroy();
  });
  return t;
}
