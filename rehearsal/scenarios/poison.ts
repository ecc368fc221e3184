/**
 * Poison messages. A task message that cannot be processed — sent for an execution not started
 * yet, which the worker refuses on every receive — and one that is not a task message at all. The
 * task queue's redrive policy moves both to the DLQ after maxReceiveCount receives; the DLQ consumer
 * records the first as a dead letter (its node FAILED, DeadLettered) and drops the second. Then the
 * operator's way out: the execution is started, and POST /dlq/redrive sends the dead letter back as
 * a new attempt, after which the execution succeeds.
 */
import { GetQueueAttributesCommand, SendMessageCommand } from "@aws-sdk/client-sqs";
import { waitFor } from "../wait.js";
import type { Scenario } from "./context.js";
import { check, expectStatus, nodeOf, register, waitForEnd, waitForExecution } from "./helpers.js";
import { deadLettersOf } from "./terminal-failure.js";

export const poisonScenario: Scenario = {
  name: "poison message → DLQ (redrive policy) → recorded → POST /dlq/redrive",
  timeoutMs: 150_000,
  async run(ctx) {
    const name = ctx.unique("poisoned");
    await register(ctx, { name, nodes: [{ id: "a", type: "pass", params: { value: "done" } }] });
    const { executionId } = expectStatus(
      await ctx.api.post<{ executionId: string }>("/executions", { workflow: name, start: false }),
      202,
      "POST /executions start:false",
    );
    // A task message sent before its execution started: the worker fails it on every receive.
    await ctx.admin.sqs.send(
      new SendMessageCommand({
        QueueUrl: ctx.taskQueueUrl,
        MessageBody: JSON.stringify({ executionId, nodeId: "a", attempt: 1 }),
      }),
    );
    await ctx.admin.sqs.send(
      new SendMessageCommand({ QueueUrl: ctx.taskQueueUrl, MessageBody: "this is not a task message" }),
    );
    const [letter] = await waitFor(
      "the dead letter to be recorded",
      async () => {
        const letters = await deadLettersOf(ctx, executionId);
        return letters.length > 0 ? letters : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    check(letter?.reason === "poison" && letter.nodeId === "a", `dead letter ${JSON.stringify(letter)}`);
    check((letter.receiveCount ?? 0) >= 5, `recorded after ${letter.receiveCount} receives`);
    const failed = await waitForExecution(
      ctx,
      executionId,
      (v) => nodeOf(v, "a").status === "FAILED",
      "the node to fail",
    );
    check(
      nodeOf(failed, "a").error?.name === "DeadLettered",
      `the node failed with ${JSON.stringify(nodeOf(failed, "a").error)}`,
    );
    // The malformed one was dead-lettered too, and dropped by the DLQ consumer: the DLQ drains.
    await waitFor(
      "the DLQ to drain",
      async () => {
        const attributes = await ctx.admin.sqs.send(
          new GetQueueAttributesCommand({
            QueueUrl: ctx.deadLetterQueueUrl,
            AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
          }),
        );
        const left =
          Number(attributes.Attributes?.ApproximateNumberOfMessages ?? 0) +
          Number(attributes.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);
        return left === 0 ? true : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    if (failed.status === "PENDING") {
      expectStatus(await ctx.api.post(`/executions/${executionId}/trigger`, {}), 202, "POST trigger");
    }
    const redriven = expectStatus(
      await ctx.api.post<{ redriven: string[]; skipped: Array<{ id: string; reason: string }> }>(
        "/dlq/redrive",
        {
          messageIds: [letter.id],
        },
      ),
      202,
      "POST /dlq/redrive",
    );
    check(redriven.redriven.includes(letter.id), `redrive answered ${JSON.stringify(redriven)}`);
    const view = await waitForEnd(ctx, executionId);
    check(view.status === "SUCCEEDED", `after redrive the execution is ${view.status}`);
    check(nodeOf(view, "a").attempt === 2, `the redriven node ran as attempt ${nodeOf(view, "a").attempt}`);
    check((await deadLettersOf(ctx, executionId)).length === 0, "the redriven dead letter is gone");
    return `dead-lettered after ${letter.receiveCount} receives, recorded, redriven as attempt 2 → SUCCEEDED; the malformed one dropped`;
  },
};
