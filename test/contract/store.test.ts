/** The Store contract on every adapter: in memory, and DynamoDB on the emulator (moto by default). */
import { DeleteTableCommand } from "@aws-sdk/client-dynamodb";
import { inject } from "vitest";
import { DynamoStore } from "../../shared/adapters/dynamo/store.js";
import { ensureTable } from "../../shared/adapters/dynamo/table.js";
import { MemoryStore } from "../../shared/adapters/memory/store.js";
import { awsClients, uniqueName } from "../support/aws.js";
import { describeStoreContract } from "./store.contract.js";

describeStoreContract("MemoryStore", async () => ({ store: new MemoryStore() }));

describeStoreContract("DynamoStore (emulator)", async () => {
  const clients = awsClients(inject("awsEndpoint"));
  const table = uniqueName("weft-contract");
  await ensureTable(clients.dynamo, table);
  return {
    store: new DynamoStore(clients.doc, table),
    async cleanup() {
      await clients.dynamo.send(new DeleteTableCommand({ TableName: table })).catch(() => undefined);
      clients.destroy();
    },
  };
});
