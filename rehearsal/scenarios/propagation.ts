/**
 * A crash between a completion and its propagation: the worker dies right after the completion of
 * the last parent of a wide `merge` is written, before it records that parent's arrival. Nobody
 * else would decide the merge; the sweeper finds the completion whose propagation never ran and
 * drives it, running the merge itself — whose parts (17 values of almost 4 KiB inline and one
 * large value in S3) are too wide to keep as references, so the sweeper reads the large value and
 * writes the merged one to S3.
 */
import { isDeepStrictEqual } from "node:util";
import type { Scenario } from "./context.js";
import { check, describe, expectStatus, nodeOf, register, waitForEnd } from "./helpers.js";

const NARROW = 17;

export const propagationScenario: Scenario = {
  name: "crash between a completion and its propagation → the sweeper drives it (a wide merge)",
  timeoutMs: 120_000,
  async run(ctx) {
    const name = ctx.unique("wide-merge");
    const value = "v".repeat(3_900);
    const parents = Array.from({ length: NARROW }, (_, i) => ({
      id: `p${i}`,
      type: "pass",
      params: { value },
    }));
    await register(ctx, {
      name,
      nodes: [
        ...parents,
        { id: "big", type: "pass" },
        // `last` runs after every other parent of the merge has completed: its completion is the last.
        { id: "gate", type: "noop", dependsOn: [...parents.map((p) => p.id), "big"] },
        { id: "last", type: "noop", dependsOn: ["gate"] },
        { id: "m", type: "merge", dependsOn: [...parents.map((p) => p.id), "big", "last"] },
      ],
    });
    const input = { blob: "i".repeat(8 * 1024) };
    const { executionId } = expectStatus(
      await ctx.api.post<{ executionId: string }>("/executions", { workflow: name, input, start: false }),
      202,
      "POST /executions",
    );
    const sweeperWrites = ctx.callCount(ctx.principals.sweeper, "s3:PutObject");
    const sweeperReads = ctx.callCount(ctx.principals.sweeper, "s3:GetObject");
    const fault = ctx.faults.add({
      principal: ctx.principals.worker,
      at: "after",
      matches: ({ operation, body }) =>
        (operation === "UpdateItem" || operation === "TransactWriteItems") &&
        body.includes(`EX#${executionId}`) &&
        body.includes('"N#last"') &&
        body.includes('"COMPLETED"'),
    });
    try {
      expectStatus(await ctx.api.post(`/executions/${executionId}/trigger`, {}), 202, "POST trigger");
      const ended = await waitForEnd(ctx, executionId, 90_000);
      check(fault.hits === 1, "the worker was not crashed after the last completion");
      check(ended.status === "SUCCEEDED", `ended ${ended.status}: ${JSON.stringify(ended.error)}`);
    } finally {
      fault.remove();
    }
    check(
      ctx.callCount(ctx.principals.sweeper, "s3:PutObject") > sweeperWrites,
      "the sweeper wrote no merged value",
    );
    check(
      ctx.callCount(ctx.principals.sweeper, "s3:GetObject") > sweeperReads,
      "the sweeper read no large part",
    );
    const view = await describe(ctx, executionId, true);
    const merged = nodeOf(view, "m").output as Record<string, unknown>;
    check(
      parents.every((p) => merged[p.id] === value),
      "a narrow part of the merge differs",
    );
    check(isDeepStrictEqual(merged.big, input), "the large part of the merge differs");
    check(
      merged.last === null && Object.keys(merged).length === NARROW + 2,
      `the merge has ${Object.keys(merged).length} parts`,
    );
    return "the worker died after the last completion; the sweeper ran the merge (S3 read and write)";
  },
};
