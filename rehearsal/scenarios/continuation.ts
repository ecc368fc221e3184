/**
 * The worker's use of its Lambda context: a chain of quick nodes runs from a single task message
 * (the engine continues with a ready child in the same invocation while it fits before the deadline
 * it computes from getRemainingTimeInMillis), instead of one SQS round trip per node.
 */
import { isDeepStrictEqual } from "node:util";
import type { Scenario } from "./context.js";
import { check, expectStatus, register, waitForEnd } from "./helpers.js";

const LENGTH = 6;

export const continuationScenario: Scenario = {
  name: `a chain of ${LENGTH} runs from one task message (continuation within getRemainingTimeInMillis)`,
  timeoutMs: 60_000,
  async run(ctx) {
    const name = ctx.unique("chain");
    const nodes = Array.from({ length: LENGTH }, (_, i) => ({
      id: `n${i}`,
      type: "pass",
      ...(i === 0 ? {} : { dependsOn: [`n${i - 1}`] }),
    }));
    await register(ctx, { name, nodes });
    const { executionId } = expectStatus(
      await ctx.api.post<{ executionId: string }>("/executions", {
        workflow: name,
        input: { step: "all" },
        start: false,
      }),
      202,
      "POST /executions",
    );
    // The task messages of this execution the worker receives (duplicates included).
    let messages = 0;
    const stop = ctx.consumers.worker.observe((records) => {
      messages += records.filter((record) => record.body.includes(executionId)).length;
    });
    try {
      expectStatus(await ctx.api.post(`/executions/${executionId}/trigger`, {}), 202, "POST trigger");
      const view = await waitForEnd(ctx, executionId);
      check(view.status === "SUCCEEDED", `ended ${view.status}`);
      const expected = { [`n${LENGTH - 1}`]: { step: "all" } };
      check(isDeepStrictEqual(view.output, expected), `output ${JSON.stringify(view.output)}`);
    } finally {
      stop();
    }
    check(messages === 1, `the chain took ${messages} task messages`);
    return `${LENGTH} nodes from 1 task message (continued in its invocation)`;
  },
};
