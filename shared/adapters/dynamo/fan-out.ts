/**
 * The fan-out budget of a root execution in DynamoDB (domain/fan-out.ts; keys.ts for the items).
 *
 * A counter alone is not idempotent: a repeated `ADD` counts twice. So every count moves in one
 * transaction with a write that is itself refused on a repeat: a child's descendant with the
 * creation of the child (conditioned on its idempotency key being free, and its item absent), a
 * reservation of map items with its marker's creation, a release with its marker's deletion. The
 * counter's own condition (`< limit`) refuses the write that would pass the limit.
 */
import type { TransactWriteCommandInput } from "@aws-sdk/lib-dynamodb";
import type { FanOutCounts, MapItemsReservation } from "../../ports.js";
import { Expression, updateExpression } from "./expression.js";
import { ATTR, executionPk, fanOutKey, nodeKey, RESERVATION_PREFIX, reservationKey } from "./keys.js";
import type { TableIO } from "./table-io.js";
import { expiresAfter } from "./writes.js";

type TransactItem = NonNullable<TransactWriteCommandInput["TransactItems"]>[number];

const DESCENDANTS = "descendants";
const IN_FLIGHT = "mapItemsInFlight";

/** Adds `by` to one of a root's counts, only while the count stays within `limit` (when given). */
function countWrite(
  tableName: string,
  root: string,
  field: typeof DESCENDANTS | typeof IN_FLIGHT,
  by: number,
  options: { atMost?: number; now: number; retentionDays: number | undefined },
): TransactItem {
  const e = new Expression();
  const count = e.name(field);
  const sets =
    options.retentionDays === undefined
      ? []
      : [`${e.name(ATTR.ttl)} = ${e.value(expiresAfter(options.now, options.retentionDays))}`];
  const ceiling = options.atMost === undefined ? undefined : e.value(options.atMost - by);
  const add = e.value(by);
  return {
    Update: {
      TableName: tableName,
      Key: fanOutKey(root),
      UpdateExpression: updateExpression(sets, [], [`${count} ${add}`]),
      ...(ceiling === undefined
        ? {}
        : { ConditionExpression: `attribute_not_exists(${count}) OR ${count} <= ${ceiling}` }),
      ExpressionAttributeNames: e.names,
      ExpressionAttributeValues: e.values,
    },
  };
}

/** A child's count against its root, for the transaction that creates it: refused at the limit. */
export function descendantWrite(
  tableName: string,
  root: string,
  limit: number,
  now: number,
  retentionDays: number | undefined,
): TransactItem {
  return countWrite(tableName, root, DESCENDANTS, 1, { atMost: limit, now, retentionDays });
}

const failed = (reason: { Code?: string } | undefined) => reason?.Code === "ConditionalCheckFailed";

export async function reserveMapItems(
  io: TableIO,
  tableName: string,
  reservation: MapItemsReservation,
  limit: number,
  now: number,
  retentionDays: number | undefined,
  /** The map's node (in its execution of `nodeShards` node shards, keys.ts) and its lease. */
  fence?: { nodeId: string; leaseToken: string; nodeShards: number },
): Promise<{ ok: true } | { ok: false; inFlight: number; fenced?: true }> {
  // No TTL: a marker lives until its release (at the latest its execution's settled end), however
  // long its map runs; one expired before would leave its units counted for good.
  const marker = {
    ...reservationKey(reservation.executionId, reservation.key),
    root: reservation.rootExecutionId,
    units: reservation.units,
  };
  const result = await io.transact({
    TransactItems: [
      {
        Put: {
          TableName: tableName,
          Item: marker,
          ConditionExpression: "attribute_not_exists(#pk)",
          ExpressionAttributeNames: { "#pk": ATTR.pk },
        },
      },
      countWrite(tableName, reservation.rootExecutionId, IN_FLIGHT, reservation.units, {
        atMost: limit,
        now,
        retentionDays,
      }),
      ...(fence
        ? [
            {
              ConditionCheck: {
                TableName: tableName,
                Key: nodeKey(reservation.executionId, fence.nodeId, fence.nodeShards),
                ConditionExpression:
                  "#status = :running AND #lease.#token = :token AND (attribute_not_exists(#cr) OR #cr = :false)",
                ExpressionAttributeNames: {
                  "#status": "status",
                  "#lease": "lease",
                  "#token": "token",
                  "#cr": "cancelRequested",
                },
                ExpressionAttributeValues: {
                  ":running": "RUNNING",
                  ":token": fence.leaseToken,
                  ":false": false,
                },
              },
            },
          ]
        : []),
    ],
  });
  if (result === "ok") return { ok: true };
  const inFlight = async () => (await getFanOut(io, reservation.rootExecutionId)).mapItemsInFlight;
  // The map stopped meanwhile: nothing reserved, whatever else refused.
  if (fence && failed(result[2])) return { ok: false, inFlight: await inFlight(), fenced: true };
  // Its marker exists: this reservation was made before (a repeat), and counted then.
  if (failed(result[0])) return { ok: true };
  return { ok: false, inFlight: await inFlight() };
}

export async function releaseMapItems(
  io: TableIO,
  tableName: string,
  reservation: MapItemsReservation,
): Promise<boolean> {
  const result = await io.transact({
    TransactItems: [
      {
        Delete: {
          TableName: tableName,
          Key: reservationKey(reservation.executionId, reservation.key),
          ConditionExpression: "#units = :units AND #root = :root",
          ExpressionAttributeNames: { "#units": "units", "#root": "root" },
          ExpressionAttributeValues: { ":units": reservation.units, ":root": reservation.rootExecutionId },
        },
      },
      countWrite(tableName, reservation.rootExecutionId, IN_FLIGHT, -reservation.units, {
        now: 0,
        retentionDays: undefined,
      }),
    ],
  });
  return result === "ok";
}

export async function listMapItemReservations(
  io: TableIO,
  tableName: string,
  executionId: string,
): Promise<MapItemsReservation[]> {
  const e = new Expression();
  const items = await io.queryAll({
    TableName: tableName,
    KeyConditionExpression: `${e.name(ATTR.pk)} = ${e.value(executionPk(executionId))} AND begins_with(${e.name(ATTR.sk)}, ${e.value(RESERVATION_PREFIX)})`,
    ExpressionAttributeNames: e.names,
    ExpressionAttributeValues: e.values,
    ConsistentRead: true,
  });
  return items.map((item) => ({
    rootExecutionId: item.root as string,
    executionId,
    key: (item[ATTR.sk] as string).slice(RESERVATION_PREFIX.length),
    units: Number(item.units),
  }));
}

export async function getFanOut(io: TableIO, rootExecutionId: string): Promise<FanOutCounts> {
  const item = await io.get(fanOutKey(rootExecutionId), [DESCENDANTS, IN_FLIGHT]);
  return { descendants: Number(item?.[DESCENDANTS] ?? 0), mapItemsInFlight: Number(item?.[IN_FLIGHT] ?? 0) };
}
