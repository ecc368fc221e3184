/** Creates weft's table (see keys.ts for the design) when it is missing. */
import {
  CreateTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  type DynamoDBClient,
  type GlobalSecondaryIndex,
  ResourceInUseException,
  ResourceNotFoundException,
  type TableDescription,
  UpdateTimeToLiveCommand,
} from "@aws-sdk/client-dynamodb";
import { ATTR, INDEX } from "./keys.js";

const WAIT_TIMEOUT_MS = 5 * 60_000;

/** Creates the table with its indexes if missing, waits until it is ACTIVE, enables TTL. Idempotent. */
export async function ensureTable(client: DynamoDBClient, tableName: string): Promise<void> {
  const existing = await describe(client, tableName);
  if (!existing) {
    try {
      await client.send(
        new CreateTableCommand({
          TableName: tableName,
          BillingMode: "PAY_PER_REQUEST",
          AttributeDefinitions: [ATTR.pk, ATTR.sk, ATTR.gsi1pk, ATTR.gsi1sk, ATTR.gsi2pk, ATTR.gsi2sk].map(
            (name) => ({ AttributeName: name, AttributeType: "S" as const }),
          ),
          KeySchema: [
            { AttributeName: ATTR.pk, KeyType: "HASH" },
            { AttributeName: ATTR.sk, KeyType: "RANGE" },
          ],
          GlobalSecondaryIndexes: [
            listingIndex(INDEX.byWorkflow, ATTR.gsi1pk, ATTR.gsi1sk),
            {
              IndexName: INDEX.due,
              KeySchema: [
                { AttributeName: ATTR.gsi2pk, KeyType: "HASH" },
                { AttributeName: ATTR.gsi2sk, KeyType: "RANGE" },
              ],
              Projection: { ProjectionType: "KEYS_ONLY" },
            },
          ],
        }),
      );
    } catch (error) {
      // Someone else created it meanwhile: fine, wait for it below.
      if (!(error instanceof ResourceInUseException)) throw error;
    }
  }
  await waitActive(client, tableName);
  await ensureTtl(client, tableName);
}

function listingIndex(name: string, hashKey: string, rangeKey: string): GlobalSecondaryIndex {
  return {
    IndexName: name,
    KeySchema: [
      { AttributeName: hashKey, KeyType: "HASH" },
      { AttributeName: rangeKey, KeyType: "RANGE" },
    ],
    // Keys only: an execution's updates (status included) then never cost an index write.
    Projection: { ProjectionType: "KEYS_ONLY" },
  };
}

async function describe(client: DynamoDBClient, tableName: string): Promise<TableDescription | undefined> {
  try {
    const result = await client.send(new DescribeTableCommand({ TableName: tableName }));
    return result.Table;
  } catch (error) {
    if (error instanceof ResourceNotFoundException) return undefined;
    throw error;
  }
}

async function waitActive(client: DynamoDBClient, tableName: string): Promise<TableDescription> {
  const deadline = Date.now() + WAIT_TIMEOUT_MS;
  let delay = 100;
  for (;;) {
    const table = await describe(client, tableName);
    const active =
      table?.TableStatus === "ACTIVE" &&
      (table.GlobalSecondaryIndexes ?? []).every((index) => (index.IndexStatus ?? "ACTIVE") === "ACTIVE");
    if (table && active) return table;
    if (Date.now() > deadline) throw new Error(`table ${tableName} did not become ACTIVE in time`);
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 2_000);
  }
}

/** Enables TTL on `expiresAt`; emulators without TTL support are tolerated. */
async function ensureTtl(client: DynamoDBClient, tableName: string): Promise<void> {
  try {
    const current = await client.send(new DescribeTimeToLiveCommand({ TableName: tableName }));
    const status = current.TimeToLiveDescription?.TimeToLiveStatus;
    if (status === "ENABLED" || status === "ENABLING") return;
    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: tableName,
        TimeToLiveSpecification: { Enabled: true, AttributeName: ATTR.ttl },
      }),
    );
  } catch (error) {
    const name = error instanceof Error ? error.name : "";
    // Already enabled (a concurrent call), or an emulator that does not implement TTL.
    if (name === "ValidationException" || name === "UnknownOperationException") return;
    throw error;
  }
}
