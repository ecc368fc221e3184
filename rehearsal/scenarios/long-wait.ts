/**
 * A `wait` beyond SQS's 15 minutes goes through the timers' index: armed as a durable timer, sent
 * by the sweep that finds it within reach, delayed to its time. Real time cannot pass 20 minutes
 * here, so the functions' clock jumps 19 minutes ahead (lambda/clock.ts), as libfaketime would move
 * a process's: the next scheduled sweep finds the timer a minute away and sends it delayed by that
 * minute, in real time; the wait then completes, not before its time on the functions' clock.
 */
import { QueryCommand } from "@aws-sdk/client-dynamodb";
import { timerPk } from "../../shared/adapters/dynamo/keys.js";
import { timerBucket, timerShard } from "../../shared/domain/timers.js";
import { setFunctionClockOffset } from "../lambda/clock.js";
import { waitFor } from "../wait.js";
import type { Scenario } from "./context.js";
import { check, describe, eventMs, historyOf, nodeOf, register, start, waitForEnd } from "./helpers.js";

const WAIT_SECONDS = 1200;
/** The jump leaves the timer a minute ahead: within the sweep's 13-minute reach, SQS delays the rest. */
const JUMP_MS = (WAIT_SECONDS - 60) * 1000;

export const longWaitScenario: Scenario = {
  name: `a ${WAIT_SECONDS / 60}-minute wait, beyond SQS's reach, re-armed through the timers' index`,
  timeoutMs: 240_000,
  async run(ctx) {
    const name = ctx.unique("long-wait");
    await register(ctx, {
      name,
      nodes: [
        { id: "later", type: "wait", params: { seconds: WAIT_SECONDS } },
        { id: "after", type: "pass", dependsOn: ["later"], params: { value: "after" } },
      ],
    });
    const startedAt = Date.now();
    const executionId = await start(ctx, { workflow: name });
    await waitFor(
      "the wait to be queued",
      async () => (nodeOf(await describe(ctx, executionId), "later").status === "QUEUED" ? true : undefined),
      { timeoutMs: 30_000 },
    );
    // Its durable timer, in its shard's partition of the day it is due (or the next, past midnight).
    const shard = timerShard(executionId);
    const buckets = [
      ...new Set([startedAt, startedAt + 120_000].map((t) => timerBucket(t + WAIT_SECONDS * 1000))),
    ];
    const timers = await waitFor(
      "the wait's durable timer in the index",
      async () => {
        const found: string[] = [];
        for (const bucket of buckets) {
          const { Items = [] } = await ctx.admin.dynamo.send(
            new QueryCommand({
              TableName: ctx.tableName,
              KeyConditionExpression: "pk = :pk",
              FilterExpression: "contains(sk, :execution)",
              ExpressionAttributeValues: {
                ":pk": { S: timerPk(shard, bucket) },
                ":execution": { S: executionId },
              },
              ConsistentRead: true,
            }),
          );
          found.push(...Items.map((item) => item.sk?.S ?? ""));
        }
        return found.length > 0 ? found : undefined;
      },
      { timeoutMs: 30_000 },
    );
    check(
      timers.every((sk) => sk.includes("#later#")),
      `timers of other nodes: ${JSON.stringify(timers)}`,
    );
    let view: Awaited<ReturnType<typeof waitForEnd>>;
    try {
      setFunctionClockOffset(JUMP_MS);
      view = await waitForEnd(ctx, executionId, 180_000);
    } finally {
      setFunctionClockOffset(0);
    }
    check(view.status === "SUCCEEDED", `ended ${view.status}: ${JSON.stringify(view.error)}`);
    check(nodeOf(view, "after").output === "after", "the node after the wait did not run");
    const events = await historyOf(ctx, executionId);
    const at = (type: string) => {
      const event = events.find((e) => e.type === type && e.nodeId === "later");
      check(event, `history has no ${type} of the wait`);
      return eventMs(event);
    };
    const earlyMs = at("NodeQueued") + WAIT_SECONDS * 1000 - at("NodeStarted");
    check(earlyMs <= 0, `the wait started ${earlyMs} ms before its time (the functions' clock)`);
    return `timer in the index; after a ${JUMP_MS / 60_000}-minute jump the sweep sent it and the wait ended ${-earlyMs} ms after its time`;
  },
};
