/**
 * Concurrency slots in DynamoDB (keys.ts `slotsKey`, `waiterKey`): one item per limit and key value
 * holding its state (domain/slots.ts), written whole by a Put conditioned on the version it was read
 * at (engine/slots.ts re-reads and retries a refused write); its waiters in the same partition,
 * one item each, sorted by their place, so the next to grant is the first of one Query.
 */
import { DeleteCommand, PutCommand } from "@aws-sdk/lib-dynamodb";
import type { SlotsItem, SlotWaiter, TaskMessage } from "../../ports.js";
import { ATTR, SLOT_WAITER_PREFIX, slotsKey, slotsPk, waiterKey } from "./keys.js";
import type { TableIO } from "./table-io.js";
import { putAtVersion } from "./versioned.js";
import { expiresAfter } from "./writes.js";

/**
 * A limit's state outlives every execution that took its slots; with a retention, an item not
 * written for this long (no holder, no waiter: those write it) goes.
 */
const IDLE_DAYS = 400;

export async function getSlots(io: TableIO, slotKey: string): Promise<SlotsItem | undefined> {
  const item = await io.get(slotsKey(slotKey), ["version", "state"]);
  if (item === undefined) return undefined;
  return { version: Number(item.version), state: String(item.state) };
}

export async function putSlots(
  io: TableIO,
  slotKey: string,
  item: SlotsItem,
  expectedVersion: number,
  now: number,
  retentionDays: number | undefined,
): Promise<boolean> {
  return putAtVersion(
    io,
    slotsKey(slotKey),
    {
      version: item.version,
      state: item.state,
      ...(retentionDays === undefined ? {} : { [ATTR.ttl]: expiresAfter(now, IDLE_DAYS + retentionDays) }),
    },
    expectedVersion,
  );
}

export async function putWaiter(
  io: TableIO,
  waiter: SlotWaiter,
  now: number,
  retentionDays: number | undefined,
): Promise<void> {
  await io.doc.send(
    new PutCommand({
      TableName: io.tableName,
      Item: {
        ...waiterKey(waiter.slotKey, waiter.place),
        message: waiter.message,
        since: waiter.since,
        limit: waiter.limit,
        ...(retentionDays === undefined ? {} : { [ATTR.ttl]: expiresAfter(now, IDLE_DAYS + retentionDays) }),
      },
    }),
  );
}

export async function getWaiter(
  io: TableIO,
  slotKey: string,
  place: string,
): Promise<SlotWaiter | undefined> {
  const item = await io.get(waiterKey(slotKey, place), ["message", "since", "limit"]);
  return item === undefined ? undefined : waiterOf(slotKey, place, item);
}

/** A waiter item as read (its message stored as a map, as a timer's is: timers.ts). */
function waiterOf(slotKey: string, place: string, item: Record<string, unknown>): SlotWaiter {
  return {
    slotKey,
    place,
    message: item.message as TaskMessage,
    since: Number(item.since),
    limit: Number(item.limit),
  };
}

export async function listWaiters(io: TableIO, slotKey: string, limit: number): Promise<SlotWaiter[]> {
  const { items } = await io.queryPage({
    TableName: io.tableName,
    KeyConditionExpression: "#pk = :pk AND begins_with(#sk, :prefix)",
    ExpressionAttributeNames: { "#pk": ATTR.pk, "#sk": ATTR.sk },
    ExpressionAttributeValues: { ":pk": slotsPk(slotKey), ":prefix": SLOT_WAITER_PREFIX },
    ConsistentRead: true,
    Limit: limit,
  });
  return items.map((item) => waiterOf(slotKey, String(item[ATTR.sk]).slice(SLOT_WAITER_PREFIX.length), item));
}

export async function deleteWaiter(io: TableIO, slotKey: string, place: string): Promise<boolean> {
  const result = await io.doc.send(
    new DeleteCommand({ TableName: io.tableName, Key: waiterKey(slotKey, place), ReturnValues: "ALL_OLD" }),
  );
  return result.Attributes !== undefined;
}
