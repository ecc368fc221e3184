/**
 * The store's two listings over sharded indexes: executions newest first (gsi1: one workflow's
 * shards, or every workflow's), and the sweeper's due executions earliest first (gsi2). Both indexes
 * hold keys only, so the records are batch-read and checked against what the index said.
 */
import { QueryCommand } from "@aws-sdk/lib-dynamodb";
import { mapLimit } from "../../domain/concurrency.js";
import { decodeCursor, encodeCursor } from "../../domain/cursor.js";
import type { ExecutionRecord } from "../../domain/records.js";
import * as z from "../../domain/zod.js";
import type { ExecutionQuery, Page } from "../../ports.js";
import { EXECUTION_RECORD_ATTRIBUTES, executionFromItem } from "./codec.js";
import { Expression } from "./expression.js";
import {
  ATTR,
  DUE_SHARDS,
  duePk,
  dueUpperBound,
  executionIdFromPk,
  executionKey,
  INDEX,
  LISTING_SHARDS,
  workflowListingPk,
} from "./keys.js";
import type { TableIO } from "./table-io.js";

/** listDueExecutions' read state of one due-index shard. */
interface DueShard {
  pk: string;
  /** Entries read but not yet taken, ascending. */
  buffer: Array<{ sortKey: string; executionId: string }>;
  startKey: Record<string, unknown> | undefined;
  exhausted: boolean;
}

/** Cursor of listExecutions: the sort key the previous page ended at; every shard goes on below it. */
const listingCursorSchema = z.object({ below: z.string().check(z.minLength(1)) });

/** Queries of listing shards in flight at once (a listing of all executions reads 16 per workflow). */
const LISTING_CONCURRENCY = 32;
/** Rounds of reading a page may take when a status filter leaves too few (the page is then short). */
const LISTING_ROUNDS = 5;

/**
 * Executions newest first: one workflow's (its LISTING_SHARDS shards of gsi1), or every workflow's
 * (`workflows` names them). Each round reads the newest keys below the position from every shard,
 * merges them, reads the records of the newest `want` only, and filters them by status; a page may be
 * short (a status few match) and still have a `next`.
 */
export async function listExecutions(
  io: TableIO,
  query: ExecutionQuery,
  workflows: () => Promise<readonly string[]>,
): Promise<Page<ExecutionRecord>> {
  const limit = Math.max(1, Math.floor(query.limit));
  const names = query.workflow !== undefined ? [query.workflow] : await workflows();
  const shards = names.flatMap((name) =>
    Array.from({ length: LISTING_SHARDS }, (_, shard) => workflowListingPk(name, shard)),
  );
  let below = readCursor(query.next);
  const items: ExecutionRecord[] = [];
  for (let round = 0; round < LISTING_ROUNDS; round++) {
    const want = query.status === undefined ? limit - items.length : Math.max(limit - items.length, 25);
    const read = await mapLimit(shards, LISTING_CONCURRENCY, (pk) => readListingKeys(io, pk, below, want));
    const all = read.flatMap((shard) => shard.entries).sort((a, b) => (a.sortKey < b.sortKey ? 1 : -1));
    const taken = all.slice(0, want);
    const more = all.length > taken.length || read.some((shard) => shard.more);
    const records = new Map(
      (await io.batchGetExecutions(taken.map((entry) => entry.executionId))).map((r) => [r.executionId, r]),
    );
    for (const [i, { sortKey, executionId }] of taken.entries()) {
      const record = records.get(executionId);
      if (record && (query.status === undefined || record.status === query.status)) items.push(record);
      if (items.length === limit) {
        // Full: the next page goes on below this entry, unless nothing is left below it.
        const left = more || i < taken.length - 1;
        return left ? { items, next: encodeCursor({ below: sortKey }) } : { items };
      }
    }
    if (!more || taken.length === 0) return { items };
    below = taken[taken.length - 1]!.sortKey;
  }
  return { items, next: encodeCursor({ below }) };
}

export async function listDueExecutions(io: TableIO, now: number, limit: number): Promise<ExecutionRecord[]> {
  const wanted = Math.floor(limit);
  if (!(wanted > 0)) return [];
  const bound = dueUpperBound(now);
  const shards: DueShard[] = Array.from({ length: DUE_SHARDS }, (_, shard) => ({
    pk: duePk(shard),
    buffer: [],
    startKey: undefined,
    exhausted: false,
  }));
  const found = new Map<string, ExecutionRecord>();
  const seen = new Set<string>();
  // Rounds of a k-way merge: with every shard holding at least `need` entries (or exhausted),
  // the earliest `need` entries overall are buffered. Entries the records contradict (the index
  // lags behind the table) are dropped and the next round reads further.
  for (;;) {
    const need = wanted - found.size;
    if (need <= 0) break;
    await Promise.all(shards.map((shard) => fillDueShard(io, shard, bound, need)));
    const taken = shards
      .flatMap((shard) => shard.buffer.map((entry) => ({ entry, shard })))
      .sort((a, b) => (a.entry.sortKey < b.entry.sortKey ? -1 : a.entry.sortKey > b.entry.sortKey ? 1 : 0))
      .slice(0, need);
    if (taken.length === 0) break;
    for (const { entry, shard } of taken) shard.buffer.splice(shard.buffer.indexOf(entry), 1);
    const ids = [...new Set(taken.map(({ entry }) => entry.executionId))].filter((id) => !seen.has(id));
    for (const id of ids) seen.add(id);
    const items = await io.batchGet(
      ids.map((id) => executionKey(id)),
      EXECUTION_RECORD_ATTRIBUTES,
    );
    for (const item of items) {
      const record = executionFromItem(item);
      if (record.status !== "PENDING" && record.sweepAt !== undefined && record.sweepAt <= now) {
        found.set(record.executionId, record);
      }
    }
  }
  return [...found.values()]
    .sort(
      (a, b) =>
        a.sweepAt! - b.sweepAt! ||
        (a.executionId < b.executionId ? -1 : a.executionId > b.executionId ? 1 : 0),
    )
    .slice(0, wanted);
}

/** Reads due-index entries of one shard (ascending, up to `bound`) until `need` are buffered. */
async function fillDueShard(io: TableIO, shard: DueShard, bound: string, need: number): Promise<void> {
  while (!shard.exhausted && shard.buffer.length < need) {
    const e = new Expression();
    const result = await io.doc.send(
      new QueryCommand({
        TableName: io.tableName,
        IndexName: INDEX.due,
        KeyConditionExpression: `${e.name(ATTR.gsi2pk)} = ${e.value(shard.pk)} AND ${e.name(ATTR.gsi2sk)} <= ${e.value(bound)}`,
        ExpressionAttributeNames: e.names,
        ExpressionAttributeValues: e.values,
        ScanIndexForward: true,
        Limit: Math.max(need - shard.buffer.length, 10),
        ExclusiveStartKey: shard.startKey,
      }),
    );
    for (const item of result.Items ?? []) {
      shard.buffer.push({
        sortKey: item[ATTR.gsi2sk] as string,
        executionId: executionIdFromPk(item[ATTR.pk] as string),
      });
    }
    shard.startKey = result.LastEvaluatedKey;
    if (!shard.startKey) shard.exhausted = true;
  }
}

/** The newest `want` keys of one listing shard below `below` ("" = from the newest), keys only. */
async function readListingKeys(
  io: TableIO,
  pk: string,
  below: string,
  want: number,
): Promise<{ entries: Array<{ sortKey: string; executionId: string }>; more: boolean }> {
  const e = new Expression();
  let keyCondition = `${e.name(ATTR.gsi1pk)} = ${e.value(pk)}`;
  if (below !== "") keyCondition += ` AND ${e.name(ATTR.gsi1sk)} < ${e.value(below)}`;
  const result = await io.doc.send(
    new QueryCommand({
      TableName: io.tableName,
      IndexName: INDEX.byWorkflow,
      KeyConditionExpression: keyCondition,
      ProjectionExpression: e.projection([ATTR.gsi1sk, ATTR.pk]),
      ExpressionAttributeNames: e.names,
      ExpressionAttributeValues: e.values,
      ScanIndexForward: false,
      Limit: want,
    }),
  );
  const entries = (result.Items ?? []).map((item) => ({
    sortKey: item[ATTR.gsi1sk] as string,
    executionId: executionIdFromPk(item[ATTR.pk] as string),
  }));
  return { entries, more: result.LastEvaluatedKey !== undefined };
}

function readCursor(next: string | undefined): string {
  if (next === undefined || next === "") return "";
  return decodeCursor(next, listingCursorSchema).below;
}
