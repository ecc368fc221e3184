/**
 * The fan-out budget on the deployed stack: a map reserves its lanes against its root's map items
 * in flight (domain/fan-out.ts), and a crash cannot leak them. Here every attempt of the worker
 * function to give the reservation back dies before its transaction reaches the table; the
 * execution still succeeds, and the sweeper — which keeps a succeeded execution with maps in its
 * index until what they hold is given back — gives it back itself (its role's DeleteItem).
 */
import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import { unmarshall } from "@aws-sdk/util-dynamodb";
import { fanOutKey } from "../../shared/adapters/dynamo/keys.js";
import { waitFor } from "../wait.js";
import type { Scenario } from "./context.js";
import { check, expectStatus, nodeOf, register, start, waitForEnd } from "./helpers.js";

export const fanOutReleaseScenario: Scenario = {
  name: "fan-out budget: a map's reservation the worker never gave back (crashed) is given back by the sweeper",
  timeoutMs: 150_000,
  async run(ctx) {
    const workflow = ctx.unique("reserve");
    await register(ctx, {
      name: workflow,
      nodes: [
        {
          id: "squares",
          type: "map",
          params: {
            items: "{% input.numbers %}",
            task: { type: "pass", params: { value: "{% $item * $item %}" } },
            maxConcurrency: 2,
          },
        },
      ],
    });
    const sweeperDeletes = ctx.callCount(ctx.principals.sweeper, "dynamodb:DeleteItem");
    // Created first, started once the fault is in place.
    const executionId = await start(ctx, { workflow, input: { numbers: [1, 2, 3, 4] }, start: false });
    const fault = ctx.faults.add({
      principal: ctx.principals.worker,
      at: "before",
      times: Number.POSITIVE_INFINITY,
      matches: ({ operation, body }) =>
        operation === "TransactWriteItems" &&
        body.includes('"Delete"') &&
        body.includes(`EX#${executionId}`) &&
        body.includes('"F#'),
    });
    try {
      expectStatus(await ctx.api.post(`/executions/${executionId}/trigger`, {}), 202, "POST trigger");
      const ended = await waitForEnd(ctx, executionId, 120_000);
      check(ended.status === "SUCCEEDED", `ended ${ended.status}: ${JSON.stringify(ended.error)}`);
      check(JSON.stringify(nodeOf(ended, "squares").output) === "[1,4,9,16]", "the map's output differs");
      const inFlight = async () => {
        const { Item } = await ctx.admin.dynamo.send(
          new GetItemCommand({
            TableName: ctx.tableName,
            Key: { pk: { S: fanOutKey(executionId).pk }, sk: { S: "FANOUT" } },
            ConsistentRead: true,
          }),
        );
        return Item ? Number(unmarshall(Item).mapItemsInFlight ?? 0) : 0;
      };
      await waitFor(
        "the sweeper to give the reservation back",
        async () => ((await inFlight()) === 0 ? true : undefined),
        {
          timeoutMs: 90_000,
        },
      );
      check(fault.hits >= 1, "the worker never tried to give the reservation back");
    } finally {
      fault.remove();
    }
    const deletes = ctx.callCount(ctx.principals.sweeper, "dynamodb:DeleteItem") - sweeperDeletes;
    check(deletes >= 1, "the sweeper deleted nothing");
    return `the worker crashed ${fault.hits} time(s) giving it back; the sweeper gave back the map's 2 lanes`;
  },
};
