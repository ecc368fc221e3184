/**
 * The cold-start bench's yardstick (bench/cold-start.ts): the least a DynamoDB-backed Lambda can be,
 * one GetItem with @aws-sdk/client-dynamodb. Bundled like the functions; never deployed.
 */
import { DynamoDBClient, GetItemCommand } from "@aws-sdk/client-dynamodb";

const client = new DynamoDBClient({});

export const handler = async (event: { id: string }) =>
  client.send(
    new GetItemCommand({ TableName: process.env.TABLE_NAME ?? "table", Key: { pk: { S: event.id } } }),
  );
