/**
 * Idempotency keys: the same key returns the same execution; once that execution is gone — deleted
 * by the table's TTL after its retention, which the rehearsal plays by deleting its item — the key
 * starts a new one (the key is reclaimed in a transaction that checks the execution's absence).
 */
import { DeleteItemCommand } from "@aws-sdk/client-dynamodb";
import type { Scenario } from "./context.js";
import { check, expectStatus, register, waitForEnd } from "./helpers.js";

export const idempotencyScenario: Scenario = {
  name: "idempotency key: same key, same execution; after its TTL deletion, a new one",
  timeoutMs: 60_000,
  async run(ctx) {
    const name = ctx.unique("keyed");
    await register(ctx, { name, nodes: [{ id: "only", type: "noop" }] });
    const body = { workflow: name, idempotencyKey: ctx.unique("order-1") };
    const first = expectStatus(
      await ctx.api.post<{ executionId: string }>("/executions", body),
      202,
      "POST /executions",
    );
    const again = expectStatus(
      await ctx.api.post<{ executionId: string }>("/executions", body),
      200,
      "the same key again",
    );
    check(again.executionId === first.executionId, "the same key gave another execution");
    check(
      (await waitForEnd(ctx, first.executionId)).status === "SUCCEEDED",
      "the keyed execution did not succeed",
    );
    await ctx.admin.dynamo.send(
      new DeleteItemCommand({
        TableName: ctx.tableName,
        Key: { pk: { S: `EX#${first.executionId}` }, sk: { S: "EX" } },
      }),
    );
    const renewed = expectStatus(
      await ctx.api.post<{ executionId: string }>("/executions", body),
      202,
      "the key of an expired execution",
    );
    check(renewed.executionId !== first.executionId, "the key still names the deleted execution");
    check(
      (await waitForEnd(ctx, renewed.executionId)).status === "SUCCEEDED",
      "the new execution did not succeed",
    );
    return "200 with the same id; a new execution once the first was gone";
  },
};
