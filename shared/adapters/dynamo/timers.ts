/**
 * The timers' due index in DynamoDB (domain/timers.ts): an item per timer under
 * `TM#<shard>#<day bucket>`, sorted by `<dueAt>#<execution>#<node>#<attempt>`, read with strongly
 * consistent queries (so a sweep sees every timer written before it read), deleted by the table's
 * TTL a week after its time. The sweep's cursor is one item, moved only forward.
 */
import { PutCommand } from "@aws-sdk/lib-dynamodb";
import {
  decodeCursor,
  encodeCursor,
  type TimerPageCursor,
  timerPageCursorSchema,
} from "../../domain/cursor.js";
import {
  TIMER_LIMITS,
  type Timer,
  type TimerCursor,
  timerBucket,
  timerKeyAfter,
  timerShard,
  timerSortKey,
} from "../../domain/timers.js";
import type { Page } from "../../ports.js";
import { isConditionFailure } from "./expression.js";
import { ATTR, TIMER_CURSOR_KEY, timerPk } from "./keys.js";
import type { TableIO } from "./table-io.js";

type Item = Record<string, unknown>;

function timerItem(timer: Timer): Item {
  return {
    [ATTR.pk]: timerPk(timerShard(timer.message.executionId), timerBucket(timer.dueAt)),
    [ATTR.sk]: timerSortKey(timer),
    message: timer.message,
    dueAt: timer.dueAt,
    armedAt: timer.armedAt,
    [ATTR.ttl]: Math.ceil((timer.dueAt + TIMER_LIMITS.retentionMs) / 1000),
  };
}

function timerFromItem(item: Item): Timer {
  return {
    message: item.message as Timer["message"],
    dueAt: Number(item.dueAt),
    armedAt: Number(item.armedAt),
  };
}

/** One conditional put per timer: a timer armed again keeps its first arming time. */
export async function putTimers(io: TableIO, timers: readonly Timer[]): Promise<void> {
  await Promise.all(
    timers.map(async (timer) => {
      try {
        await io.doc.send(
          new PutCommand({
            TableName: io.tableName,
            Item: timerItem(timer),
            ConditionExpression: "attribute_not_exists(#pk)",
            ExpressionAttributeNames: { "#pk": ATTR.pk },
          }),
        );
      } catch (error) {
        if (!isConditionFailure(error)) throw error;
      }
    }),
  );
}

/** Those of these timers that are stored: a strongly consistent BatchGetItem. */
export async function getTimers(
  io: TableIO,
  timers: ReadonlyArray<Pick<Timer, "message" | "dueAt">>,
): Promise<Timer[]> {
  if (timers.length === 0) return [];
  const keys = timers.map((timer) => ({
    [ATTR.pk]: timerPk(timerShard(timer.message.executionId), timerBucket(timer.dueAt)),
    [ATTR.sk]: timerSortKey(timer),
  }));
  const items = await io.batchGet(keys, ["message", "dueAt", "armedAt"]);
  return items.map(timerFromItem);
}

/**
 * One shard's timers due in (from, through], bucket after bucket: a query per bucket the range
 * touches (one, unless it crosses midnight UTC), one item more than a page to know if one follows.
 */
export async function listTimers(
  io: TableIO,
  shard: number,
  from: number,
  through: number,
  page: { limit: number; next?: string },
): Promise<Page<Timer>> {
  const limit = Math.floor(page.limit);
  if (!(limit > 0)) return { items: [] };
  const after =
    page.next === undefined ? timerKeyAfter(from) : decodeCursor(page.next, timerPageCursorSchema).t;
  const last = timerKeyAfter(through);
  const items: Item[] = [];
  const lastBucket = timerBucket(through);
  for (let bucket = timerBucket(Number(after.slice(0, 15))); bucket <= lastBucket; bucket++) {
    let startKey: Record<string, unknown> | undefined = {
      [ATTR.pk]: timerPk(shard, bucket),
      [ATTR.sk]: after,
    };
    do {
      const result = await io.queryPage({
        TableName: io.tableName,
        KeyConditionExpression: "#pk = :pk AND #sk <= :last",
        ExpressionAttributeNames: { "#pk": ATTR.pk, "#sk": ATTR.sk },
        ExpressionAttributeValues: { ":pk": timerPk(shard, bucket), ":last": last },
        ConsistentRead: true,
        Limit: limit + 1 - items.length,
        ExclusiveStartKey: startKey,
      });
      items.push(...result.items);
      startKey = result.lastKey;
    } while (startKey && items.length <= limit);
    if (items.length > limit) break;
  }
  const timers = items.slice(0, limit).map(timerFromItem);
  const end = items.length > limit ? items[limit - 1] : undefined;
  return end === undefined
    ? { items: timers }
    : { items: timers, next: encodeCursor({ t: String(end[ATTR.sk]) } satisfies TimerPageCursor) };
}

export async function getTimerCursor(io: TableIO): Promise<TimerCursor | undefined> {
  const item = await io.get(TIMER_CURSOR_KEY, ["through", "sweptAt"]);
  return item === undefined ? undefined : { through: Number(item.through), sweptAt: Number(item.sweptAt) };
}

export async function advanceTimerCursor(io: TableIO, cursor: TimerCursor): Promise<boolean> {
  try {
    await io.doc.send(
      new PutCommand({
        TableName: io.tableName,
        Item: { ...TIMER_CURSOR_KEY, through: cursor.through, sweptAt: cursor.sweptAt },
        ConditionExpression: "attribute_not_exists(#pk) OR #through < :through",
        ExpressionAttributeNames: { "#pk": ATTR.pk, "#through": "through" },
        ExpressionAttributeValues: { ":through": cursor.through },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}
