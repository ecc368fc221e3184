/**
 * The store's two listings over sharded indexes: executions newest first (gsi1 for one workflow,
 * gsi3 across all), and the sweeper's due executions earliest first (gsi2). Both indexes hold keys
 * only, so the records are batch-read and checked against what the index said.
 */
import { QueryCommand } from "@aws-sdk/lib-dynamodb";
import * as z from "zod";
import { decodeCursor, encodeCursor } from "../../domain/cursor.js";
import { invalidCursor } from "../../domain/errors.js";
import type { ExecutionRecord, ExecutionStatus } from "../../domain/records.js";
import type { ExecutionQuery, Page } from "../../ports.js";
import { EXECUTION_RECORD_ATTRIBUTES, executionFromItem } from "./codec.js";
import { Expression } from "./expression.js";
import {
  ATTR,
  allListingPk,
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

/** Cursor of listExecutions: per listing shard, where the previous page stopped. */
interface ListingCursor {
  /** Per shard: "" = not started, a sort key = continue below it, null = exhausted. */
  p: Array<string | null>;
}

export async function listExecutions(io: TableIO, query: ExecutionQuery): Promise<Page<ExecutionRecord>> {
  const limit = Math.max(1, Math.floor(query.limit));
  const partitions =
    query.workflow !== undefined
      ? [
          {
            index: INDEX.byWorkflow,
            pkName: ATTR.gsi1pk,
            skName: ATTR.gsi1sk,
            pk: workflowListingPk(query.workflow),
          },
        ]
      : Array.from({ length: LISTING_SHARDS }, (_, shard) => ({
          index: INDEX.all,
          pkName: ATTR.gsi3pk,
          skName: ATTR.gsi3sk,
          pk: allListingPk(shard),
        }));
  const positions = readCursor(query.next, partitions.length);

  // Read up to `limit` matching entries from every partition not yet exhausted, newest first.
  const fetched = await Promise.all(
    partitions.map(async (partition, i) => {
      const position = positions[i];
      if (position === null || position === undefined) return { entries: [], exhausted: true };
      return readListingPartition(io, partition, position, limit, query.status);
    }),
  );

  // Merge newest first and take one page.
  const merged = fetched
    .flatMap((result, partition) => result.entries.map((entry) => ({ ...entry, partition })))
    .sort((a, b) => (a.sortKey < b.sortKey ? 1 : a.sortKey > b.sortKey ? -1 : 0))
    .slice(0, limit);

  const nextPositions = positions.map((position, i) => {
    if (position === null) return null;
    const taken = merged.filter((entry) => entry.partition === i);
    const result = fetched[i]!;
    if (result.exhausted && taken.length === result.entries.length) return null;
    return taken.length > 0 ? taken[taken.length - 1]!.sortKey : (position ?? "");
  });

  const items = merged.map((entry) => entry.record);
  const more = nextPositions.some((position) => position !== null);
  return more ? { items, next: encodeCursor({ p: nextPositions } satisfies ListingCursor) } : { items };
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

/**
 * Newest-first entries of one listing partition, with their records. The listing indexes hold keys
 * only (so an execution's status changes cost no index write): records are batch-read here and
 * the status filter applies to them.
 */
async function readListingPartition(
  io: TableIO,
  partition: { index: string; pkName: string; skName: string; pk: string },
  position: string,
  limit: number,
  status: ExecutionStatus | undefined,
): Promise<{ entries: Array<{ sortKey: string; record: ExecutionRecord }>; exhausted: boolean }> {
  const entries: Array<{ sortKey: string; record: ExecutionRecord }> = [];
  let startKey: Record<string, unknown> | undefined;
  for (;;) {
    const e = new Expression();
    let keyCondition = `${e.name(partition.pkName)} = ${e.value(partition.pk)}`;
    if (position !== "") keyCondition += ` AND ${e.name(partition.skName)} < ${e.value(position)}`;
    const remaining = limit - entries.length;
    const result = await io.doc.send(
      new QueryCommand({
        TableName: io.tableName,
        IndexName: partition.index,
        KeyConditionExpression: keyCondition,
        ProjectionExpression: e.projection([partition.skName, ATTR.pk]),
        ExpressionAttributeNames: e.names,
        ExpressionAttributeValues: e.values,
        ScanIndexForward: false,
        // With a status filter, read more per request: non-matching entries are dropped below.
        Limit: status === undefined ? remaining : Math.max(remaining * 2, 50),
        ExclusiveStartKey: startKey,
      }),
    );
    const found = (result.Items ?? []).map((item) => ({
      sortKey: item[partition.skName] as string,
      executionId: executionIdFromPk(item[ATTR.pk] as string),
    }));
    const records = new Map(
      (await io.batchGetExecutions(found.map((f) => f.executionId))).map((r) => [r.executionId, r]),
    );
    for (const { sortKey, executionId } of found) {
      const record = records.get(executionId);
      if (record && (status === undefined || record.status === status)) entries.push({ sortKey, record });
    }
    startKey = result.LastEvaluatedKey;
    if (!startKey) return { entries, exhausted: true };
    if (entries.length >= limit) return { entries: entries.slice(0, limit), exhausted: false };
  }
}

/** Each partition's last key read, or null once it is exhausted. */
const listingCursorSchema = z.object({ p: z.array(z.string().nullable()) });

function readCursor(next: string | undefined, partitions: number): Array<string | null> {
  if (next === undefined || next === "") return Array.from({ length: partitions }, () => "");
  const { p } = decodeCursor(next, listingCursorSchema);
  if (p.length !== partitions) throw invalidCursor();
  return p;
}
