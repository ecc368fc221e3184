/**
 * TableIO.batchGet reads its chunks of 100 keys at once (up to BATCH_GET_PARALLEL), not one after
 * another: a 350-key read on the emulator has more than one BatchGetItem in flight, and returns
 * every item once.
 */
import { BatchGetCommand, type DynamoDBDocumentClient, PutCommand } from "@aws-sdk/lib-dynamodb";
import { describe, expect, inject, it } from "vitest";
import { BATCH_GET_PARALLEL, TableIO } from "../../shared/adapters/dynamo/table-io.js";
import { createTestBackend } from "../support/aws.js";
import { EMULATOR } from "../support/backends.js";
import { PATIENT } from "../support/progress.js";

describe(`TableIO.batchGet (${EMULATOR})`, PATIENT, () => {
  it("reads a 350-key batch in parallel chunks and returns each item once", async () => {
    const backend = await createTestBackend(inject("awsEndpoints"));
    try {
      const { doc } = backend.clients;
      const table = backend.names.table;
      const keys = Array.from({ length: 350 }, (_, i) => ({ pk: `T#${i % 3}`, sk: `item-${i}` }));
      for (let i = 0; i < keys.length; i += 50)
        await Promise.all(
          keys
            .slice(i, i + 50)
            .map((key, j) => doc.send(new PutCommand({ TableName: table, Item: { ...key, v: i + j } }))),
        );

      let inFlight = 0;
      let most = 0;
      let calls = 0;
      const counting = {
        send: async (command: unknown) => {
          if (!(command instanceof BatchGetCommand)) return doc.send(command as never);
          calls += 1;
          inFlight += 1;
          most = Math.max(most, inFlight);
          try {
            return await doc.send(command);
          } finally {
            inFlight -= 1;
          }
        },
      } as unknown as DynamoDBDocumentClient;

      const items = await new TableIO(counting, table).batchGet(keys, ["pk", "sk", "v"]);
      expect(items.map((item) => item.sk).sort()).toEqual(keys.map((key) => key.sk).sort());
      expect(calls).toBeGreaterThanOrEqual(4);
      expect(most).toBeGreaterThan(1);
      expect(most).toBeLessThanOrEqual(BATCH_GET_PARALLEL);
    } finally {
      await backend.cleanup();
    }
  });
});
