/**
 * A map's item that crashes its worker at every claim: its message is dead-lettered, and the DLQ
 * consumer fails the item (tolerated by the map) and carries its lane on — it sends the next item's
 * task message itself (no look of the sweeper reads a running map's items) — so the map completes
 * and the execution succeeds, the failed item's place holding its error.
 *
 * Compression: while it runs, the records of a failed invocation come back after 1 s instead of
 * the queue's visibility timeout.
 */
import { waitFor } from "../wait.js";
import type { Scenario } from "./context.js";
import { check, nodeOf, register, start, waitForEnd } from "./helpers.js";
import { deadLettersOf } from "./terminal-failure.js";

export const poisonItemScenario: Scenario = {
  name: "a map item that crashes its worker at every claim → DLQ → failed (tolerated), its lane carried on by the DLQ consumer → SUCCEEDED",
  timeoutMs: 150_000,
  async run(ctx) {
    const name = ctx.unique("crashing-item");
    await register(ctx, {
      name,
      nodes: [
        {
          id: "items",
          type: "map",
          params: {
            items: ["poison", "fine"],
            task: { type: "pass", params: { value: "{% $item %}" } },
            maxConcurrency: 1,
            toleratedFailureCount: 1,
          },
        },
      ],
    });
    const sendsBefore = ctx.callCount(ctx.principals.dlq, "sqs:SendMessage");
    const executionId = await start(ctx, { workflow: name });
    const fault = ctx.faults.add({
      principal: ctx.principals.worker,
      at: "before",
      times: Number.POSITIVE_INFINITY,
      matches: ({ operation, body }) =>
        (operation === "UpdateItem" || operation === "TransactWriteItems") &&
        body.includes(`EX#${executionId}`) &&
        body.includes('"I#items[1.0]"') &&
        body.includes('"RUNNING"'),
    });
    ctx.consumers.worker.setFailedInvocationVisibility(1);
    try {
      await waitFor(
        "the item's dead letter to be recorded",
        async () => ((await deadLettersOf(ctx, executionId)).length > 0 ? true : undefined),
        { timeoutMs: 120_000, intervalMs: 500 },
      );
    } finally {
      fault.remove();
      ctx.consumers.worker.setFailedInvocationVisibility(undefined);
    }
    const view = await waitForEnd(ctx, executionId, 60_000);
    check(view.status === "SUCCEEDED", `ended ${view.status}: ${JSON.stringify(view.error)}`);
    const output = nodeOf(view, "items").output as Array<{ error?: { name?: string } } | string>;
    check(
      Array.isArray(output) && output[1] === "fine" && typeof output[0] === "object",
      `the map's output is ${JSON.stringify(output)}`,
    );
    check(fault.hits >= 5, `the worker crashed ${fault.hits} times`);
    const sends = ctx.callCount(ctx.principals.dlq, "sqs:SendMessage") - sendsBefore;
    check(sends >= 1, "the DLQ consumer sent no task message");
    return `${fault.hits} crashes; the DLQ consumer failed the item and sent the lane's next (${sends} send(s))`;
  },
};
