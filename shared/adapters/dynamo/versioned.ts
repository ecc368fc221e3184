/**
 * Items written whole at the version they were read at (optimistic concurrency): an execution's
 * variables (variables.ts), a limit's slots and a rate's bucket (slots.ts). The engine re-reads and
 * retries a refused write.
 */
import { PutCommand } from "@aws-sdk/lib-dynamodb";
import { isConditionFailure } from "./expression.js";
import { ATTR, type Key } from "./keys.js";
import type { TableIO } from "./table-io.js";

/**
 * Puts `key` with `attributes` only while its stored `version` is `expectedVersion` (0: no item
 * yet); false, nothing written, when another write came first.
 */
export async function putAtVersion(
  io: TableIO,
  key: Key,
  attributes: Record<string, unknown>,
  expectedVersion: number,
): Promise<boolean> {
  try {
    await io.doc.send(
      new PutCommand({
        TableName: io.tableName,
        Item: { ...key, ...attributes },
        ...(expectedVersion === 0
          ? { ConditionExpression: "attribute_not_exists(#pk)", ExpressionAttributeNames: { "#pk": ATTR.pk } }
          : {
              ConditionExpression: "#version = :expected",
              ExpressionAttributeNames: { "#version": "version" },
              ExpressionAttributeValues: { ":expected": expectedVersion },
            }),
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}
