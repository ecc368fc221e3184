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
 * | execution             | `EX#<id>`         | `EX`                     | the ExecutionRecord fields, sinksDone as a Number |
 * |                       |                   |                          | Set, history (list), gsi1/gsi3 listing keys       |
 * | node                  | `EX#<id>`         | `N#<nodeId>`             | the NodeRecord fields (executionId and nodeId are |
 * |                       |                   |                          | read back from the keys), okDeps/badDeps as       |
 * |                       |                   |                          | Number Sets, history (list)                       |
 * | idempotency key       | `IDEM#<key>`      | `IDEM`                   | executionId, createdAt                            |
 *
 * An execution and all its nodes share one partition, so one Query reads a whole execution (its
 * nodes, and its history for `listHistory`).
 *
 * Global secondary indexes:
 * - `gsi1` — executions of one workflow, newest last: `gsi1pk = XW#<workflow>`,
 *   `gsi1sk = <createdAt, 15 digits>#<executionId>`.
 * - `gsi3` — executions of all workflows, write-sharded over 8 partitions so that a burst of new
 *   executions does not land on one hot index partition: `gsi3pk = XA#<shard 0..7>` (a hash of the
 *   execution id), `gsi3sk` as gsi1sk. Listing queries the 8 shards and merges newest first.
 * - Both listing indexes project only the summary attributes (INCLUDE: status, workflow, version,
 *   createdAt, startedAt, finishedAt, executionId), so the frequent writes to an execution item
 *   that change none of them (sink completions, history appends) cost no index write.
 * - `gsi2` (`gsi2pk`, `gsi2sk`, KEYS_ONLY, sparse) is reserved for the sweeper's due index; nothing
 *   maintains it yet.
 */

export const ATTR = {
  pk: "pk",
  sk: "sk",
  gsi1pk: "gsi1pk",
  gsi1sk: "gsi1sk",
  gsi2pk: "gsi2pk",
  gsi2sk: "gsi2sk",
  gsi3pk: "gsi3pk",
  gsi3sk: "gsi3sk",
  history: "history",
  ttl: "expiresAt",
} as const;

export const INDEX = {
  byWorkflow: "gsi1",
  due: "gsi2",
  all: "gsi3",
} as const;

/** Attributes the listing indexes project (besides the table and index keys). */
export const SUMMARY_ATTRIBUTES = [
  "status",
  "workflow",
  "version",
  "createdAt",
  "startedAt",
  "finishedAt",
  "executionId",
] as const;

/** Number of write shards of the all-executions listing index. */
export const LISTING_SHARDS = 8;

export interface Key {
  pk: string;
  sk: string;
}

export const WORKFLOW_PREFIX = "WF#";
export const EXECUTION_PREFIX = "EX#";
export const NODE_PREFIX = "N#";
export const IDEM_PREFIX = "IDEM#";

export function workflowHeadKey(name: string): Key {
  return { pk: `${WORKFLOW_PREFIX}${name}`, sk: "HEAD" };
}

export function workflowVersionKey(name: string, version: number): Key {
  return { pk: `${WORKFLOW_PREFIX}${name}`, sk: `V#${pad(version, 10)}` };
}

export function workflowHashKey(name: string, definitionHash: string): Key {
  return { pk: `${WORKFLOW_PREFIX}${name}`, sk: `H#${definitionHash}` };
}

export function executionPk(executionId: string): string {
  return `${EXECUTION_PREFIX}${executionId}`;
}

export function executionKey(executionId: string): Key {
  return { pk: executionPk(executionId), sk: "EX" };
}

export function nodeKey(executionId: string, nodeId: string): Key {
  return { pk: executionPk(executionId), sk: `${NODE_PREFIX}${nodeId}` };
}

export function idempotencyKey(key: string): Key {
  return { pk: `${IDEM_PREFIX}${key}`, sk: "IDEM" };
}

/** Sort key of both listing indexes: creation time, then id (unique, so usable as a position). */
export function listingSortKey(createdAt: number, executionId: string): string {
  return `${pad(createdAt, 15)}#${executionId}`;
}

export function workflowListingPk(workflow: string): string {
  return `XW#${workflow}`;
}

export function allListingPk(shard: number): string {
  return `XA#${shard}`;
}

/** The listing shard of an execution: FNV-1a of its id, modulo LISTING_SHARDS. */
export function listingShard(executionId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < executionId.length; i++) {
    hash ^= executionId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % LISTING_SHARDS;
}

/** The listing keys an execution item carries. */
export function listingKeys(
  executionId: string,
  workflow: string,
  createdAt: number,
): Record<string, string> {
  const sortKey = listingSortKey(createdAt, executionId);
  return {
    [ATTR.gsi1pk]: workflowListingPk(workflow),
    [ATTR.gsi1sk]: sortKey,
    [ATTR.gsi3pk]: allListingPk(listingShard(executionId)),
    [ATTR.gsi3sk]: sortKey,
  };
}

export function executionIdFromPk(pk: string): string {
  return pk.startsWith(EXECUTION_PREFIX) ? pk.slice(EXECUTION_PREFIX.length) : pk;
}

export function nodeIdFromSk(sk: string): string {
  return sk.startsWith(NODE_PREFIX) ? sk.slice(NODE_PREFIX.length) : sk;
}

function pad(value: number, width: number): string {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`cannot encode ${value} in a key`);
  return String(value).padStart(width, "0");
}
