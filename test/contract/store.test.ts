/** The Store contract on every adapter: in memory, and DynamoDB on the emulator (moto by default). */
import { randomUUID } from "node:crypto";
import { DeleteTableCommand } from "@aws-sdk/client-dynamodb";
import { DeleteCommand, GetCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  dueKeys,
  executionKey,
  idempotencyKey,
  leaseKey,
  nodeKey,
  offerItemKey,
  offerMarkerKey,
  workerKey,
  workflowListingKey,
} from "../../shared/adapters/dynamo/keys.js";
import { DynamoStore } from "../../shared/adapters/dynamo/store.js";
import { ensureTable } from "../../shared/adapters/dynamo/table.js";
import { MemoryStore } from "../../shared/adapters/memory/store.js";
import { holdKey, type ReadyTask, workerExpiresAt } from "../../shared/domain/placement.js";
import type { ExecutionRecord } from "../../shared/domain/records.js";
import { type AwsClients, awsClients, uniqueName } from "../support/aws.js";
import { describeStoreContract } from "./store.contract.js";
import { describeStoreFenceContract } from "./store-fences.contract.js";
import { describeTimerContract } from "./timers.contract.js";
import { describeWorkerContract } from "./workers.contract.js";
import { describeWorkflowListingContract } from "./workflow-listing.contract.js";

const memoryStore = async () => ({ store: new MemoryStore() });
const emulatorStore = async () => {
  const clients = awsClients(inject("awsEndpoints"));
  const table = uniqueName("weft-contract");
  await ensureTable(clients.dynamo, table);
  return {
    store: new DynamoStore(clients.doc, table),
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

/** What the contract cannot see: the sparse due index (gsi2) is maintained in the same writes. */
describe("DynamoStore due-index keys (emulator)", () => {
  const t = emulatorTable("weft-due");
  const raw = t.raw;
  const dueAttributes = async (id: string) => {
    const item = await raw(executionKey(id));
    return { sweepAt: item?.sweepAt, gsi2pk: item?.gsi2pk, gsi2sk: item?.gsi2sk };
  };
  const running = (overrides: Partial<ExecutionRecord> = {}): ExecutionRecord => ({
    executionId: randomUUID(),
    workflow: "wf",
    version: 1,
    status: "RUNNING",
    input: { json: "null" },
    createdAt: 1,
    sinksDone: [],
    ...overrides,
  });

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

  it("keeps a worker under WORKERS with its holds as a map, and an offer by time in its pool with a marker", async () => {
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
    expect(workerKey("w1")).toEqual({ pk: "WORKERS", sk: "W#w1" });
    // Its expiry is the table's TTL attribute, in epoch seconds: DynamoDB deletes it after the
    // retention; a heartbeat moves it on.
    expect(await raw(workerKey("w1"))).toMatchObject({
      pk: "WORKERS",
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
    expect(offer).toEqual({ pk: "POOL#gpu", sk: `000000000005000#${executionId}/n#1#2` });
    expect(await raw(offer)).toMatchObject({ nodeId: "n#1", attempt: 2, offeredAt: 5_000 });
    expect(offerMarkerKey(task)).toEqual({ pk: `OFFER#${executionId}`, sk: "n#1#2" });
    expect(await raw(offerMarkerKey(task))).toMatchObject({ pool: "gpu", offerSk: offer.sk });

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
