/**
 * The single-table key design of weft's DynamoDB store.
 *
 * Table: partition key `pk` (S), sort key `sk` (S), PAY_PER_REQUEST, TTL attribute `expiresAt`.
 *
 * | item                  | pk                | sk                       | other attributes                                  |
 * |-----------------------|-------------------|--------------------------|---------------------------------------------------|
 * | workflow head         | `WF#<name>`       | `HEAD`                   | latestVersion                                     |
 * | workflow version      | `WF#<name>`       | `V#<version, 10 digits>` | name, version, definition (JSON string),          |
 * |                       |                   |                          | definitionHash, createdAt                         |
 * | workflow hash index   | `WF#<name>`       | `H#<definitionHash>`     | version                                           |
 * | workflow listing      | `WORKFLOWS`       | `<name>`                 | name, latestVersion, createdAt (of version 1),    |
 * |                       |                   |                          | description (the latest version's, when it has)   |
 * | execution             | `EX#<id>`         | `EX`                     | the ExecutionRecord fields, sinksDone as a Number |
 * |                       |                   |                          | Set, history (list), gsi1 listing keys            |
 * | node (map item: `I#`) | `EX#<id>` or      | `N#<nodeId>`             | the NodeRecord fields (executionId and nodeId are |
 * |                       | `EX#<id>#<node    |                          | read back from the keys), okDeps/badDeps as       |
 * |                       | shard, 2 digits>` |                          | Number Sets, history (list)                       |
 * | arrival shard of a    | `EX#<id>` or      | `A#<childId>#<shard, 4   | okDeps (Number Set), expiresAt with a retention   |
 * | wide `all` fan-in     | `EX#<id>#<node    | digits>`                 |                                                   |
 * |                       | shard, 2 digits>` |                          |                                                   |
 * | fan-out budget of a   | `EX#<root id>`    | `FANOUT`                 | descendants, mapItemsInFlight (Numbers), expiresAt |
 * | root execution        |                   |                          | with a retention (domain/fan-out.ts)              |
 * | execution variables   | `EX#<id>`         | `VARS`                   | version (Number), document and applied (JSON      |
 * | (engine/vars.ts)      |                   |                          | strings), expiresAt with a retention              |
 * | map-items reservation | `EX#<id>`         | `F#<map id>[<attempt>]`  | root, units: what a map attempt reserved of its    |
 * |                       |                   |                          | root's map items in flight, until it is given back |
 * | idempotency key (per  | `IDEM#<wf>#<key>` | `IDEM`                   | executionId, createdAt, and what the request that |
 * | workflow `<wf>`)      |                   |                          | took it asked: inputSha256, start                 |
 * | named lease           | `LEASE#<name>`    | `LEASE`                  | owner, expiresAt (epoch ms, see below)            |
 * | dead letter           | `DLQ`             | `<record id>`            | the DeadLetterRecord fields but id (read back     |
 * |                       |                   |                          | from sk)                                          |
 * | concurrency slots of  | `SLOTS#<slot key>`| `SLOTS`                  | version (Number), state (JSON string: holders and |
 * | a limit's key value   |                   |                          | the fair queue's clock, domain/slots.ts)          |
 * | slot waiter           | `SLOTS#<slot key>`| `W#<place>`              | message (the TaskMessage that runs it), since     |
 * | external worker       | `WORKERS#<shard,  | `W#<workerId>`           | the WorkerRecord fields: holds (a map by holdKey, |
 * |                       | 2 digits>`        |                          | each a Hold), version (bumped with holds)         |
 * | offer (a ReadyTask)   | `POOL#<pool>#     | `<offeredAt, 15 digits>` | the ReadyTask fields, runsOn as a map             |
 * |                       | <shard, 2 digits>`| `#<offerKey>`            |                                                   |
 * | offer marker (one per | `OFFERED#<id>`    | `<nodeId>#<attempt>`     | pool, offerPk and offerSk (the offer's key)       |
 * | node attempt)         |                   |                          |                                                   |
 *
 * An execution's nodes, map items and arrival shards are spread over its `nodeShards` partitions
 * (ExecutionRecord.nodeShards, fixed when it is created by domain/node-shards.ts: 1, or NODE_SHARDS
 * = 16 for a graph of more than 64 nodes or with a `map`; the arithmetic there). Node shard 0 is the
 * execution's own partition `EX#<id>`, node shard s > 0 is `EX#<id>#<s, 2 digits>`: with one
 * shard (every small execution, and every execution created before the field existed) everything
 * of an execution is in `EX#<id>`, as it always was. A node's shard is 0 with one shard; else a map
 * item's index modulo the shards (a map's items and lanes spread evenly), any other node's FNV-1a of
 * its id modulo the shards; arrival shard `A#<childId>#<n>` is on shard (FNV-1a(childId) + n) modulo
 * the shards (nodeShard, arrivalNodeShard). The execution item, its fan-out budget and its
 * reservations stay in `EX#<id>`. The store learns an execution's shards from its record (and
 * keeps them: node-partitions.ts) and derives every node key from them.
 *
 * So one Query per partition — in parallel, merged in sort-key order — reads all of an execution's
 * nodes, one map attempt's items, or its history for `listHistory` (whose range before the items is
 * read in `EX#<id>` alone): the Queries of before for an execution of one shard, 15 more for a
 * wide one. A BatchGetItem of nodes names their keys, wherever they are. Execution ids hold no
 * `#`, so a partition key names its execution (executionIdFromPk).
 *
 * External workers are spread over WORKER_SHARDS partitions `WORKERS#<shard>` by a hash of their
 * id (listing them is one Query per shard, in parallel, merged by id). A pool's offers are spread
 * over POOL_SHARDS partitions `POOL#<pool>#<shard>` by a hash of their offer key, each sorted by
 * offer time: a poll reads the oldest of a shard it picks at random and goes on to the next shards
 * only while it has fewer than it asked for (workers/offers in workers.ts; the arithmetic beside
 * the constants). Pool names and worker ids have no `#`, so no shard key is another's, and none
 * is a key of before the shards (`WORKERS`, `POOL#<pool>`, `OFFER#<id>`: ignored, docs/workers.md).
 * An offer and its marker are written, and deleted, together in one transaction: the marker (found
 * by the node attempt alone) makes offering idempotent per attempt whatever the offer time, and
 * tells a withdrawal where the offer is.
 *
 * Every workflow has one item in the partition `WORKFLOWS`, written in the transaction that creates
 * each of its versions (beside its head, the version and its hash index): listing workflows by name
 * is one Query of that partition, never a scan of the `WF#` partitions. (A workflow registered
 * before the listing existed appears with its next version.)
 *
 * Dead letters share the partition `DLQ`; their ids are chosen by the engine to sort by time, so a
 * Query of that partition lists them oldest first and the last id returned is the page position.
 * (Dead-lettered work is rare; one partition is plenty.)
 *
 * A lease item's `expiresAt` is the lease expiry in epoch milliseconds. It shares its name with
 * the table's TTL attribute, which DynamoDB reads as epoch seconds: a millisecond value lies
 * millennia ahead, so TTL never deletes a lease (and a deleted lease would only be a free one).
 *
 * Global secondary indexes:
 * - `gsi1` — the listing: executions of one workflow, write-sharded over LISTING_SHARDS (16)
 *   partitions so that a burst of starts does not land on one hot index partition:
 *   `gsi1pk = XW#<workflow>#<shard>` (a hash of the execution id),
 *   `gsi1sk = <createdAt, 15 digits>#<executionId>`. One workflow's listing queries its 16 shards and
 *   merges newest first; the listing of all executions merges every workflow's (their names from the
 *   `WORKFLOWS` partition). One index entry per execution, one write unit at its start: a second,
 *   all-executions index would cost every start another.
 * - The listing index is KEYS_ONLY: a listing reads the records it shows (reads are cheap), and no
 *   write to an execution item after its creation — status changes included — costs an index
 *   write.
 * - `gsi2` — the sweeper's due index (KEYS_ONLY, sparse): RUNNING executions that have a `sweepAt`,
 *   write-sharded: `gsi2pk = SW#<shard 0..7>` (the same hash of the execution id),
 *   `gsi2sk = <sweepAt, 15 digits>#<executionId>`. Every execution write that sets `sweepAt` sets
 *   both keys in the same write; a write that removes `sweepAt` (patch null) or moves the status to
 *   SUCCEEDED/FAILED/CANCELLED removes `sweepAt` and both keys, so finished executions leave the
 *   index. `listDueExecutions` queries the 8 shards with `gsi2sk <= <now, 15 digits>#~`
 *   (ascending), then reads the records with a consistent BatchGet and keeps those still RUNNING
 *   and due (the index is eventually consistent), earliest first.
 */
import { parseMapItemId } from "../../domain/map.js";
import { offerKey, type ReadyTask } from "../../domain/placement.js";
import type { ExecutionStatus } from "../../domain/records.js";
import { keyInstant } from "../../domain/timers.js";

export const ATTR = {
  pk: "pk",
  sk: "sk",
  gsi1pk: "gsi1pk",
  gsi1sk: "gsi1sk",
  gsi2pk: "gsi2pk",
  gsi2sk: "gsi2sk",
  history: "history",
  ttl: "expiresAt",
} as const;

export const INDEX = {
  byWorkflow: "gsi1",
  due: "gsi2",
} as const;

/**
 * Write shards of each workflow's listing (gsi1). An entry holds keys only (well under 1 KB), so a
 * start costs one write unit on one shard: at DynamoDB's 1,000 write units per second per
 * partition, 16 shards take 16,000 starts per second of one workflow (the goal: 10,000).
 */
export const LISTING_SHARDS = 16;

/** Number of write shards of the due index (gsi2). */
export const DUE_SHARDS = 8;

/** Execution statuses that end an execution: a write moving to one removes it from the due index. */
export const FINAL_EXECUTION_STATUSES: readonly ExecutionStatus[] = ["SUCCEEDED", "FAILED", "CANCELLED"];

export interface Key {
  pk: string;
  sk: string;
}

export const WORKFLOW_PREFIX = "WF#";
export const EXECUTION_PREFIX = "EX#";
export const NODE_PREFIX = "N#";
export const ITEM_PREFIX = "I#";
export const ARRIVAL_SHARD_PREFIX = "A#";
export const RESERVATION_PREFIX = "F#";
export const IDEM_PREFIX = "IDEM#";
export const LEASE_PREFIX = "LEASE#";
export const DEAD_LETTER_PK = "DLQ";
const TIMER_PREFIX = "TM#";
export const DUE_PREFIX = "SW#";
export const WORKERS_PREFIX = "WORKERS#";
export const WORKFLOWS_PK = "WORKFLOWS";
export const WORKER_PREFIX = "W#";
export const POOL_PREFIX = "POOL#";
export const OFFER_PREFIX = "OFFERED#";

/**
 * Shards of the worker registry. Each task writes its worker's item three times — the take (a
 * transaction: twice the units), the release of its hold and the poll's heartbeat — about 8 write
 * units with a worker item of 1–2 KB (one holding 4–8 tasks: bench/capacity.ts sizes); a partition takes about 1,000 write units a
 * second, so 125 tasks/s per shard: 64 shards carry 8,000 tasks/s fleet-wide (5,000 with 1.6×
 * room). One worker's item is its own ceiling (about 125 tasks/s for one worker). Listing the
 * registry (a registration counts its pool twice; GET /workers; the sweeper's pool gauges each
 * minute) is 64 Queries, in parallel, of about one read unit each.
 */
export const WORKER_SHARDS = 64;

/**
 * Shards of each pool's offers. Each task puts and deletes its offer in transactions (4 write units
 * for an offer under 1 KB): 250 tasks/s per partition of 1,000 write units. A busy poll reads the
 * 100 oldest offers of one shard (about 31 KB of 300-byte offers, 8 read units strongly
 * consistent) and takes one: about 370 tasks/s per partition of 3,000 read units. So 250 tasks/s
 * per shard (the writes bound it), and 32 shards
 * carry 8,000 tasks/s in one pool (5,000 with 1.6× room); pools are apart. An idle look reads each
 * shard once: 32 Queries of about one read unit (docs/workers.md, what it costs).
 */
export const POOL_SHARDS = 32;

export function workflowHeadKey(name: string): Key {
  return { pk: `${WORKFLOW_PREFIX}${name}`, sk: "HEAD" };
}

export function workflowVersionKey(name: string, version: number): Key {
  return { pk: `${WORKFLOW_PREFIX}${name}`, sk: `V#${pad(version, 10)}` };
}

export function workflowHashKey(name: string, definitionHash: string): Key {
  return { pk: `${WORKFLOW_PREFIX}${name}`, sk: `H#${definitionHash}` };
}

/** A workflow's item in the listing partition: sorted by name. */
export function workflowListingKey(name: string): Key {
  return { pk: WORKFLOWS_PK, sk: name };
}

/**
 * One of an execution's partitions: shard 0 is `EX#<id>` (its own item, its fan-out budget and
 * reservations, and all its nodes when it has one shard: every execution of before), shard s > 0
 * `EX#<id>#<s, 2 digits>` (nodes, map items and arrival shards only). Execution ids hold no `#`
 * (UUIDs), so no shard's key is another execution's.
 */
export function executionPk(executionId: string, shard = 0): string {
  return shard === 0
    ? `${EXECUTION_PREFIX}${executionId}`
    : `${EXECUTION_PREFIX}${executionId}#${pad(shard, 2)}`;
}

/** Every partition key of an execution of `shards` node shards, shard 0 first. */
export function executionPks(executionId: string, shards: number): string[] {
  return Array.from({ length: shardCount(shards) }, (_, shard) => executionPk(executionId, shard));
}

/**
 * The node shard of a node of an execution with `shards` node shards (ExecutionRecord.nodeShards,
 * domain/node-shards.ts): 0 with one; a map item's index modulo `shards` (so a map's items, and
 * its lanes, spread evenly); any other node's FNV-1a of its id modulo `shards`.
 */
export function nodeShard(nodeId: string, shards: number): number {
  const count = shardCount(shards);
  if (count === 1) return 0;
  const item = parseMapItemId(nodeId);
  return (item === undefined ? fnv1a(nodeId) : item.index) % count;
}

/**
 * The node shard of arrival shard `shard` of a wide fan-in into `childId`: the child's own hash
 * moved on by the shard, so one fan-in's arrivals spread over every partition.
 */
export function arrivalNodeShard(childId: string, shard: number, shards: number): number {
  const count = shardCount(shards);
  return count === 1 ? 0 : (fnv1a(childId) + shard) % count;
}

/** A stored count of node shards, as a count of partitions (absent, or anything but a whole ≥ 1: one). */
function shardCount(shards: number | undefined): number {
  return shards !== undefined && Number.isSafeInteger(shards) && shards >= 1 ? shards : 1;
}

export function executionKey(executionId: string): Key {
  return { pk: executionPk(executionId), sk: "EX" };
}

/**
 * A map's items (domain/map.ts) sort apart from the DAG's nodes (`I#` before `N#`), so listing an
 * execution's nodes never reads a 100,000-item map, and one map attempt's items are one range of
 * each partition. `shards`: the execution's node shards (absent: 1, all in `EX#<id>`).
 */
export function nodeKey(executionId: string, nodeId: string, shards = 1): Key {
  const prefix = parseMapItemId(nodeId) === undefined ? NODE_PREFIX : ITEM_PREFIX;
  return { pk: executionPk(executionId, nodeShard(nodeId, shards)), sk: `${prefix}${nodeId}` };
}

/** The sort key prefix of one map attempt's items. */
export function mapItemsPrefix(mapId: string, mapAttempt: number): string {
  return `${ITEM_PREFIX}${mapId}[${mapAttempt}.`;
}

/**
 * A key is unique within its workflow. Workflow names have no `#` (definition.ts), so the first `#`
 * after the prefix ends the name whatever the key holds.
 */
export function idempotencyKey(workflow: string, key: string): Key {
  return { pk: `${IDEM_PREFIX}${workflow}#${key}`, sk: "IDEM" };
}

/**
 * An arrival shard of a wide `all` fan-in: in one of the execution's partitions
 * (arrivalNodeShard), outside the `N#` nodes.
 */
export function arrivalShardKey(executionId: string, childId: string, shard: number, shards = 1): Key {
  return {
    pk: executionPk(executionId, arrivalNodeShard(childId, shard, shards)),
    sk: `${ARRIVAL_SHARD_PREFIX}${childId}#${pad(shard, 4)}`,
  };
}

export function shardFromSk(sk: string): number {
  return Number(sk.slice(sk.lastIndexOf("#") + 1));
}

/** A root execution's fan-out counts (domain/fan-out.ts). */
export function fanOutKey(rootExecutionId: string): Key {
  return { pk: executionPk(rootExecutionId), sk: "FANOUT" };
}

/**
 * An execution's variables: an item of their own beside the execution's (which every worker reads),
 * so the execution item stays small and a write of variables conflicts with nothing else. Its sort
 * key sorts after the nodes' (`N#`), out of the ranges a history or node listing reads.
 */
export function variablesKey(executionId: string): Key {
  return { pk: executionPk(executionId), sk: "VARS" };
}

/**
 * A concurrency limit's key value (domain/slots.ts): its state item and, beside it, its waiters
 * sorted by their place (so the next to grant is the first of a Query). The slot key is the
 * engine's (engine/slots.ts), at most SLOT_KEY_MAX_LENGTH characters.
 */
export const SLOT_WAITER_PREFIX = "W#";

export function slotsPk(slotKey: string): string {
  return `SLOTS#${slotKey}`;
}

export function slotsKey(slotKey: string): Key {
  return { pk: slotsPk(slotKey), sk: "SLOTS" };
}

export function waiterKey(slotKey: string, place: string): Key {
  return { pk: slotsPk(slotKey), sk: `${SLOT_WAITER_PREFIX}${place}` };
}

/** A map attempt's reservation of its root's map items in flight, under its own execution. */
export function reservationKey(executionId: string, key: string): Key {
  return { pk: executionPk(executionId), sk: `${RESERVATION_PREFIX}${key}` };
}

export function leaseKey(name: string): Key {
  return { pk: `${LEASE_PREFIX}${name}`, sk: "LEASE" };
}

/** Timers (domain/timers.ts): one partition per shard and day bucket, sorted by time. */
export function timerPk(shard: number, bucket: number): string {
  return `${TIMER_PREFIX}${pad(shard, 2)}#${pad(bucket, 6)}`;
}

/** Where the sweep of timers stands (one item). */
export const TIMER_CURSOR_KEY: Key = { pk: "TIMERS", sk: "CURSOR" };

export function deadLetterKey(id: string): Key {
  return { pk: DEAD_LETTER_PK, sk: id };
}

/** The registry shard of a worker: FNV-1a of its id, modulo WORKER_SHARDS. */
export function workerShard(workerId: string): number {
  return fnv1a(workerId) % WORKER_SHARDS;
}

export function workersPk(shard: number): string {
  return `${WORKERS_PREFIX}${pad(shard, 2)}`;
}

export function workerKey(workerId: string): Key {
  return { pk: workersPk(workerShard(workerId)), sk: `${WORKER_PREFIX}${workerId}` };
}

/** The shard of an offer in its pool: FNV-1a of its offer key (one per node attempt), modulo POOL_SHARDS. */
export function offerShard(task: Pick<ReadyTask, "executionId" | "nodeId" | "attempt">): number {
  return fnv1a(offerKey(task)) % POOL_SHARDS;
}

/** The shard a read of a pool's offers starts at: FNV-1a of what the reader gave, modulo POOL_SHARDS. */
export function poolReadShard(from: string): number {
  return fnv1a(from) % POOL_SHARDS;
}

export function poolPk(pool: string, shard: number): string {
  return `${POOL_PREFIX}${pool}#${pad(shard, 2)}`;
}

/** An offer in its pool's shard: oldest first, then by node attempt (offerKey is unique). */
export function offerItemKey(
  task: Pick<ReadyTask, "pool" | "executionId" | "nodeId" | "attempt" | "offeredAt">,
): Key {
  return { pk: poolPk(task.pool, offerShard(task)), sk: `${keyInstant(task.offeredAt)}#${offerKey(task)}` };
}

/**
 * The marker of a node attempt's offer. The attempt follows the last `#`, so any node id (even one
 * holding `#`) gives a key of its own.
 */
export function offerMarkerKey(task: Pick<ReadyTask, "executionId" | "nodeId" | "attempt">): Key {
  return { pk: `${OFFER_PREFIX}${task.executionId}`, sk: `${task.nodeId}#${task.attempt}` };
}

/** Sort key of both listing indexes: creation time, then id (unique, so usable as a position). */
export function listingSortKey(createdAt: number, executionId: string): string {
  return `${pad(createdAt, 15)}#${executionId}`;
}

/** One shard of a workflow's listing. Workflow names have no `#` (definition.ts). */
export function workflowListingPk(workflow: string, shard: number): string {
  return `XW#${workflow}#${shard}`;
}

/** The listing shard of an execution: FNV-1a of its id, modulo LISTING_SHARDS. */
export function listingShard(executionId: string): number {
  return fnv1a(executionId) % LISTING_SHARDS;
}

/** The due-index shard of an execution: FNV-1a of its id, modulo DUE_SHARDS. */
export function dueShard(executionId: string): number {
  return fnv1a(executionId) % DUE_SHARDS;
}

export function duePk(shard: number): string {
  return `${DUE_PREFIX}${shard}`;
}

/** Sort key of the due index. Fractional or out-of-range instants are floored / clamped. */
export function dueSortKey(sweepAt: number, executionId: string): string {
  return `${keyInstant(sweepAt)}#${executionId}`;
}

/**
 * Upper bound (inclusive) of the due-index sort keys of executions due at `now`: `~` sorts after
 * every character of an execution id. Covers every sweepAt ≤ now (and, for fractional instants,
 * a few later ones the reader filters out).
 */
export function dueUpperBound(now: number): string {
  return `${keyInstant(now)}#~`;
}

/** The due-index keys an execution item with `sweepAt` carries. */
export function dueKeys(executionId: string, sweepAt: number): Record<string, string> {
  return {
    [ATTR.gsi2pk]: duePk(dueShard(executionId)),
    [ATTR.gsi2sk]: dueSortKey(sweepAt, executionId),
  };
}

function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/** The listing keys an execution item carries. */
export function listingKeys(
  executionId: string,
  workflow: string,
  createdAt: number,
): Record<string, string> {
  const sortKey = listingSortKey(createdAt, executionId);
  return {
    [ATTR.gsi1pk]: workflowListingPk(workflow, listingShard(executionId)),
    [ATTR.gsi1sk]: sortKey,
  };
}

/** The execution of any of its partitions' keys (`EX#<id>` or `EX#<id>#<shard>`). */
export function executionIdFromPk(pk: string): string {
  if (!pk.startsWith(EXECUTION_PREFIX)) return pk;
  const rest = pk.slice(EXECUTION_PREFIX.length);
  const hash = rest.indexOf("#");
  return hash < 0 ? rest : rest.slice(0, hash);
}

export function nodeIdFromSk(sk: string): string {
  return sk.startsWith(NODE_PREFIX) || sk.startsWith(ITEM_PREFIX) ? sk.slice(NODE_PREFIX.length) : sk;
}

function pad(value: number, width: number): string {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`cannot encode ${value} in a key`);
  return String(value).padStart(width, "0");
}
