/**
 * The store's external workers (domain/placement.ts) on the table (key design in keys.ts): the
 * worker registry (WORKER_SHARDS partitions by worker id), the pools' offers (POOL_SHARDS partitions
 * per pool, each oldest first) with their per-attempt markers, and the take that withdraws an
 * offer, claims its node and adds the hold to the worker in one transaction. No partition carries a
 * whole fleet's or a whole pool's traffic (the arithmetic beside the shard counts in keys.ts).
 */
import { DeleteCommand, type TransactWriteCommandInput, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { decodeCursor, encodeCursor, workerCursorSchema } from "../../domain/cursor.js";
import {
  type Hold,
  holdKey,
  type ReadyTask,
  type RunsOn,
  type WorkerRecord,
  type WorkerRegistrationRecord,
  workerExpired,
  workerExpiresAt,
} from "../../domain/placement.js";
import { type NodeRecord, pendingNode } from "../../domain/records.js";
import type { Outcome, Page, TakeOutcome, TakeTask } from "../../ports.js";
import { type Item, nodeFromItem } from "./codec.js";
import { Expression, isConditionFailure, sleep, updateExpression } from "./expression.js";
import {
  ATTR,
  type Key,
  offerItemKey,
  offerMarkerKey,
  POOL_SHARDS,
  poolPk,
  poolReadShard,
  WORKER_PREFIX,
  WORKER_SHARDS,
  workerKey,
  workersPk,
} from "./keys.js";
import type { TableIO } from "./table-io.js";

/** The registration fields putWorker writes (everything but holds and version). */
const REGISTRATION_FIELDS = [
  "workerId",
  "pool",
  "executors",
  "capabilities",
  "labels",
  "maxParallel",
  "registeredAt",
  "heartbeatAt",
  "heartbeatSeconds",
  "placement",
] as const satisfies ReadonlyArray<keyof WorkerRecord>;

export const WORKER_RECORD_ATTRIBUTES = [...REGISTRATION_FIELDS, "holds", "version"] as const;

const READY_TASK_ATTRIBUTES = [
  "pool",
  "executionId",
  "nodeId",
  "attempt",
  "workflow",
  "version",
  "runsOn",
  "offeredAt",
] as const satisfies ReadonlyArray<keyof ReadyTask>;

/** A transaction item (TransactWriteItems). */
export type TransactItem = NonNullable<TransactWriteCommandInput["TransactItems"]>[number];

/** A condition on another item, checked in a transaction (as TableIO.conditionalUpdateChecked). */
export interface ConditionOn {
  key: Key;
  e: Expression;
  condition: string;
}

/**
 * A placeholder for an attribute name Expression.name cannot take (a hold key holds `/` and any
 * character of an execution or node id): `#<tag>`, mapped to the name.
 */
function anyName(e: Expression, tag: string, attribute: string): string {
  const placeholder = `#${tag}`;
  e.names[placeholder] = attribute;
  return placeholder;
}

const MAX_CONFLICT_RETRIES = 5;

/**
 * A single write of a worker item, retried while a take's transaction holds the item: DynamoDB
 * refuses a plain write to an item a transaction is writing (TransactionConflictException), and
 * the SDK does not retry it. The worker item is in every take of that worker.
 */
async function besideTakes<T>(write: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await write();
    } catch (error) {
      const conflict = error instanceof Error && error.name === "TransactionConflictException";
      if (!conflict || attempt >= MAX_CONFLICT_RETRIES) throw error;
      await sleep(20 * 2 ** attempt * Math.random());
    }
  }
}

// ── items ───────────────────────────────────────────────────────────────────────────────────────

function holdFromItem(value: unknown): Hold {
  const hold = value as Hold;
  return {
    executionId: hold.executionId,
    nodeId: hold.nodeId,
    attempt: Number(hold.attempt),
    leaseToken: hold.leaseToken,
    slot: hold.slot,
    claimedAt: Number(hold.claimedAt),
  };
}

export function workerFromItem(item: Item): WorkerRecord {
  const holds: Record<string, Hold> = {};
  for (const [key, hold] of Object.entries((item.holds as Record<string, unknown> | undefined) ?? {}))
    holds[key] = holdFromItem(hold);
  return {
    workerId: item.workerId as string,
    pool: item.pool as string,
    executors: [...((item.executors as string[] | undefined) ?? [])],
    capabilities: { ...((item.capabilities as Record<string, string> | undefined) ?? {}) },
    labels: [...((item.labels as string[] | undefined) ?? [])],
    maxParallel: Number(item.maxParallel),
    registeredAt: Number(item.registeredAt),
    heartbeatAt: Number(item.heartbeatAt),
    heartbeatSeconds: Number(item.heartbeatSeconds),
    holds,
    version: Number(item.version),
    ...(typeof item.placement === "string" ? { placement: item.placement } : {}),
  };
}

function readyTaskToItem(task: ReadyTask): Item {
  const item: Item = { ...offerItemKey(task) };
  for (const name of READY_TASK_ATTRIBUTES) item[name] = task[name];
  return item;
}

function readyTaskFromItem(item: Item): ReadyTask {
  return {
    pool: item.pool as string,
    executionId: item.executionId as string,
    nodeId: item.nodeId as string,
    attempt: Number(item.attempt),
    workflow: item.workflow as string,
    version: Number(item.version),
    runsOn: item.runsOn as RunsOn,
    offeredAt: Number(item.offeredAt),
  };
}

// ── workers ─────────────────────────────────────────────────────────────────────────────────────

/**
 * One conditional UpdateItem: the registration replaced, holds kept, version bumped (1 for a new
 * worker), its expiry (the table's TTL) moved on — where placement.ts mayRegister allows: a new
 * id, the same placement, a registration from before placements were kept, or a dead one.
 */
export async function putWorker(
  io: TableIO,
  worker: WorkerRegistrationRecord,
  deadBefore: number,
): Promise<Outcome<WorkerRecord>> {
  const e = new Expression();
  const sets = REGISTRATION_FIELDS.flatMap((field) =>
    worker[field] === undefined ? [] : [`${e.name(field)} = ${e.value(worker[field])}`],
  );
  const holds = e.name("holds");
  const version = e.name("version");
  const placement = e.name("placement");
  sets.push(
    `${holds} = if_not_exists(${holds}, ${e.value({})})`,
    `${version} = if_not_exists(${version}, ${e.value(0)}) + ${e.value(1)}`,
    `${e.name(ATTR.ttl)} = ${e.value(workerExpiresAt(worker.heartbeatAt))}`,
  );
  const condition = [
    `attribute_not_exists(${e.name(ATTR.pk)})`,
    `attribute_not_exists(${placement})`,
    `${placement} = ${e.value(worker.placement ?? "")}`,
    `${e.name("heartbeatAt")} < ${e.value(deadBefore)}`,
  ].join(" OR ");
  const result = await besideTakes(() =>
    io.conditionalUpdate(workerKey(worker.workerId), e, condition, updateExpression(sets, [])),
  );
  if (result.ok) return { ok: true, record: workerFromItem(result.item) };
  return { ok: false, current: result.current && workerFromItem(result.current) };
}

export async function getWorker(io: TableIO, workerId: string): Promise<WorkerRecord | undefined> {
  const item = await io.get(workerKey(workerId), WORKER_RECORD_ATTRIBUTES);
  return item && workerFromItem(item);
}

/** Every shard of the registry, one Query each (paged to the end) in parallel, merged by worker id. */
export async function listWorkers(io: TableIO): Promise<WorkerRecord[]> {
  const shards = await Promise.all(
    shardNumbers(WORKER_SHARDS).map((shard) => io.queryAll(registryQuery(io, shard))),
  );
  return shards
    .flat()
    .map(workerFromItem)
    .sort((a, b) => a.workerId.localeCompare(b.workerId));
}

/**
 * A strongly consistent Query of one registry shard, every field of a worker, by id; after `after`
 * (a worker id) when given. A shard holds only worker items, so `sk > W#<after>` stays among them.
 */
function registryQuery(io: TableIO, shard: number, after?: string) {
  const e = new Expression();
  const sk = e.name(ATTR.sk);
  const range =
    after === undefined
      ? `begins_with(${sk}, ${e.value(WORKER_PREFIX)})`
      : `${sk} > ${e.value(`${WORKER_PREFIX}${after}`)}`;
  return {
    TableName: io.tableName,
    KeyConditionExpression: `${e.name(ATTR.pk)} = ${e.value(workersPk(shard))} AND ${range}`,
    ProjectionExpression: e.projection(WORKER_RECORD_ATTRIBUTES),
    ExpressionAttributeNames: e.names,
    ExpressionAttributeValues: e.values,
    ConsistentRead: true,
  };
}

/**
 * A page of the registry by worker id (the sort key's byte order: ids are ASCII, so the code unit
 * order), without the registrations expired at `now`: DynamoDB's TTL deletes them within a day or
 * two, and until then they are skipped here (the page may then hold fewer than `limit`, with `next`
 * still given).
 *
 * Every shard is read after the cursor in parallel, a few each (ids hash evenly over the shards:
 * about twice a shard's share of `limit`), so a page reads about twice what it shows, not `limit`
 * per shard. The page is what is known complete: the ids up to the lowest last id of a shard that
 * had more (every shard has given all of its ids up to there), at most `limit` of them — never
 * empty while any is left, since that shard's last id is in it.
 */
export async function pageWorkers(
  io: TableIO,
  page: { limit: number; next?: string },
  now: number,
): Promise<Page<WorkerRecord>> {
  const limit = Math.floor(page.limit);
  if (!(limit > 0)) return { items: [] };
  const after = page.next === undefined ? undefined : decodeCursor(page.next, workerCursorSchema).k;
  const perShard = Math.min(limit, 2 * Math.ceil(limit / WORKER_SHARDS) + 1);
  const shards = await Promise.all(
    shardNumbers(WORKER_SHARDS).map((shard) =>
      io.queryPage({ ...registryQuery(io, shard, after), Limit: perShard }),
    ),
  );
  let complete: string | undefined;
  for (const shard of shards) {
    const last = shard.items.at(-1)?.workerId as string | undefined;
    if (shard.lastKey !== undefined && last !== undefined && (complete === undefined || last < complete))
      complete = last;
  }
  const found = shards
    .flatMap((shard) => shard.items)
    .map(workerFromItem)
    .sort((a, b) => byCodeUnits(a.workerId, b.workerId));
  const known = complete === undefined ? found : found.filter((worker) => worker.workerId <= complete);
  const items = known.slice(0, limit);
  const more = found.length > items.length || shards.some((shard) => shard.lastKey !== undefined);
  const lastId = items.at(-1)?.workerId;
  const live = items.filter((worker) => !workerExpired(worker, now));
  return more && lastId !== undefined ? { items: live, next: encodeCursor({ k: lastId }) } : { items: live };
}

function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** 0 … count − 1. */
function shardNumbers(count: number): number[] {
  return Array.from({ length: count }, (_, shard) => shard);
}

/**
 * Moves heartbeatAt forward to `now`, never back: written only when later than the stored one.
 * Refused, the item as found answers (none: no such worker).
 */
export async function touchWorker(
  io: TableIO,
  workerId: string,
  now: number,
): Promise<WorkerRecord | undefined> {
  const e = new Expression();
  const heartbeatAt = e.name("heartbeatAt");
  const at = e.value(now);
  const result = await besideTakes(() =>
    io.conditionalUpdate(
      workerKey(workerId),
      e,
      `attribute_exists(${e.name(ATTR.pk)}) AND ${heartbeatAt} < ${at}`,
      `SET ${heartbeatAt} = ${at}, ${e.name(ATTR.ttl)} = ${e.value(workerExpiresAt(now))}`,
    ),
  );
  if (result.ok) return workerFromItem(result.item);
  return result.current && workerFromItem(result.current);
}

/** Deletes the registration only while it is at `version`; false when it changed or is gone. */
export async function deleteWorker(io: TableIO, workerId: string, version: number): Promise<boolean> {
  const e = new Expression();
  try {
    await besideTakes(() =>
      io.doc.send(
        new DeleteCommand({
          TableName: io.tableName,
          Key: workerKey(workerId),
          ConditionExpression: `${e.name("version")} = ${e.value(version)}`,
          ExpressionAttributeNames: e.names,
          ExpressionAttributeValues: e.values,
        }),
      ),
    );
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

/** Removes a hold and bumps the version, only while it is that attempt's hold (else no change). */
export async function releaseHold(
  io: TableIO,
  workerId: string,
  key: string,
  leaseToken: string,
): Promise<void> {
  const e = new Expression();
  const hold = `${e.name("holds")}.${anyName(e, "holdKey", key)}`;
  const version = e.name("version");
  try {
    await besideTakes(() =>
      io.doc.send(
        new UpdateCommand({
          TableName: io.tableName,
          Key: workerKey(workerId),
          ConditionExpression: `${hold}.${e.name("leaseToken")} = ${e.value(leaseToken)}`,
          UpdateExpression: updateExpression([`${version} = ${version} + ${e.value(1)}`], [hold]),
          ExpressionAttributeNames: e.names,
          ExpressionAttributeValues: e.values,
        }),
      ),
    );
  } catch (error) {
    if (!isConditionFailure(error)) throw error;
  }
}

// ── offers ──────────────────────────────────────────────────────────────────────────────────────

/**
 * The offer and its marker in one transaction, each only while absent: the marker exists already
 * when this node attempt was offered (at whatever time), and then nothing is written.
 */
export async function offerTask(io: TableIO, task: ReadyTask): Promise<void> {
  const offer = readyTaskToItem(task);
  const absent = {
    ConditionExpression: "attribute_not_exists(#pk)",
    ExpressionAttributeNames: { "#pk": ATTR.pk },
  };
  await io.transact({
    TransactItems: [
      { Put: { TableName: io.tableName, Item: offer, ...absent } },
      {
        Put: {
          TableName: io.tableName,
          Item: {
            ...offerMarkerKey(task),
            pool: task.pool,
            offerPk: offer[ATTR.pk],
            offerSk: offer[ATTR.sk],
          },
          ...absent,
        },
      },
    ],
  });
}

/**
 * A pool's offers, at most `limit`, strongly consistent (as the store's reads).
 *
 * - Without `from` (the sweeper's gauges): the pool's oldest, every shard read in parallel and
 *   merged oldest first — exactly what one partition gave before the shards.
 * - With `from` (a poll, with a random token): the oldest of the shard `from` hashes to, then of the
 *   next shards in turn, only while fewer than `limit` were found — each shard oldest first. A busy
 *   pool's poll is one Query of one shard; a sparse pool's reads the shards it needs, in rounds of
 *   1, 2, 4, … in parallel (at most 6 round trips for 32 shards), so an idle look costs about one
 *   read unit per shard and finds an offer whatever shard it is in. Polls start at random shards,
 *   so every shard is read first by its share of them and none waits behind the others.
 */
export async function listReadyTasks(
  io: TableIO,
  pool: string,
  limit: number,
  from?: string,
): Promise<ReadyTask[]> {
  const wanted = Math.floor(limit);
  if (!(wanted > 0)) return [];
  if (from === undefined) {
    const shards = await Promise.all(
      shardNumbers(POOL_SHARDS).map((shard) => oldestOffers(io, pool, shard, wanted)),
    );
    return shards
      .flat()
      .sort((a, b) => byCodeUnits(a[ATTR.sk] as string, b[ATTR.sk] as string))
      .slice(0, wanted)
      .map(readyTaskFromItem);
  }
  const first = poolReadShard(from);
  const found: Item[] = [];
  let read = 0;
  for (let round = 1; read < POOL_SHARDS && found.length < wanted; round *= 2) {
    const shards = shardNumbers(Math.min(round, POOL_SHARDS - read)).map(
      (step) => (first + read + step) % POOL_SHARDS,
    );
    const left = wanted - found.length;
    const results = await Promise.all(shards.map((shard) => oldestOffers(io, pool, shard, left)));
    for (const items of results) found.push(...items);
    read += shards.length;
  }
  return found.slice(0, wanted).map(readyTaskFromItem);
}

/** The oldest offers of one shard of a pool, at most `limit` (paged until then). */
async function oldestOffers(io: TableIO, pool: string, shard: number, limit: number): Promise<Item[]> {
  const items: Item[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const e = new Expression();
    const page = await io.queryPage({
      TableName: io.tableName,
      KeyConditionExpression: `${e.name(ATTR.pk)} = ${e.value(poolPk(pool, shard))}`,
      ProjectionExpression: e.projection([ATTR.sk, ...READY_TASK_ATTRIBUTES]),
      ExpressionAttributeNames: e.names,
      ExpressionAttributeValues: e.values,
      ScanIndexForward: true,
      ConsistentRead: true,
      Limit: limit - items.length,
      ExclusiveStartKey: startKey,
    });
    items.push(...page.items);
    startKey = page.lastKey;
  } while (startKey && items.length < limit);
  return items.slice(0, limit);
}

/**
 * Deletes the offer of the task's node attempt and its marker, found through the marker (so the
 * task's offeredAt need not be the offer's). The marker is deleted only while it still names that
 * offer: a withdrawal that stalled never removes the marker of a later offer of the attempt.
 */
export async function withdrawTask(io: TableIO, task: ReadyTask): Promise<void> {
  const markerKey = offerMarkerKey(task);
  const marker = await io.get(markerKey);
  if (!marker) return;
  const e = new Expression();
  await io.transact({
    TransactItems: [
      {
        Delete: {
          TableName: io.tableName,
          Key: { pk: marker.offerPk as string, sk: marker.offerSk as string },
        },
      },
      {
        Delete: {
          TableName: io.tableName,
          Key: markerKey,
          ConditionExpression: `${e.name("offerSk")} = ${e.value(marker.offerSk)}`,
          ExpressionAttributeNames: e.names,
          ExpressionAttributeValues: e.values,
        },
      },
    ],
  });
}

// ── taking ──────────────────────────────────────────────────────────────────────────────────────

/**
 * One TransactWriteItems: the offer deleted (it must exist) with its marker, the node (at `node`)
 * claimed (`claim`, the update transitionNode would make, with `ending` when the claim is
 * conditioned on its execution ending), and the hold added to the worker at `take.workerVersion`. Refused, the first
 * failed part is named in the memory store's order (offer, worker, node) and nothing was written.
 * Taken, the node and the worker are read back in one consistent BatchGetItem.
 */
export async function takeTask(
  io: TableIO,
  take: TakeTask,
  node: Key,
  claim: TransactItem,
  ending: ConditionOn | undefined,
  nodeAttributes: readonly string[],
): Promise<TakeOutcome> {
  const { executionId, nodeId } = take.task;
  const w = new Expression();
  const hold = `${w.name("holds")}.${anyName(w, "holdKey", holdKey(executionId, nodeId))}`;
  const version = w.name("version");
  const workerUpdate = io.updateItem(
    workerKey(take.workerId),
    w,
    `${version} = ${w.value(take.workerVersion)}`,
    updateExpression([`${hold} = ${w.value(take.hold)}`, `${version} = ${version} + ${w.value(1)}`], []),
  );
  const items: TransactItem[] = [
    {
      Delete: {
        TableName: io.tableName,
        Key: offerItemKey(take.task),
        ConditionExpression: "attribute_exists(#pk)",
        ExpressionAttributeNames: { "#pk": ATTR.pk },
      },
    },
    { Delete: { TableName: io.tableName, Key: offerMarkerKey(take.task) } },
    claim,
    workerUpdate,
  ];
  if (ending) {
    items.push({
      ConditionCheck: {
        TableName: io.tableName,
        Key: ending.key,
        ConditionExpression: ending.condition,
        ExpressionAttributeNames: ending.e.names,
        ExpressionAttributeValues: ending.e.valuesOrUndefined,
      },
    });
  }
  const outcome = await io.transact({ TransactItems: items });
  if (outcome === "ok") {
    const worker = workerKey(take.workerId);
    const read = await io.batchGet(
      [node, worker],
      [...new Set([...nodeAttributes, ...WORKER_RECORD_ATTRIBUTES])],
    );
    const nodeItem = read.find((item) => item[ATTR.pk] === node.pk && item[ATTR.sk] === node.sk);
    const workerItem = read.find((item) => item[ATTR.pk] === worker.pk && item[ATTR.sk] === worker.sk);
    return {
      ok: true,
      node: nodeItem ? nodeFromItem(nodeItem) : pendingNode(executionId, nodeId),
      worker: workerFromItem(workerItem ?? {}),
    };
  }
  const failed = (index: number) => outcome[index]?.Code === "ConditionalCheckFailed";
  if (failed(0)) return { ok: false, refused: "offer" };
  if (failed(3)) return { ok: false, refused: "worker" };
  const current = await io.get(node, nodeAttributes);
  const found: NodeRecord | undefined = current
    ? nodeFromItem(current)
    : failed(2)
      ? pendingNode(executionId, nodeId)
      : undefined;
  return { ok: false, refused: "node", ...(found ? { node: found } : {}) };
}
