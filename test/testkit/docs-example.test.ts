/** The whole test of docs/testing-your-workflows.md, as written there (its task defined here). */
import { afterAll, expect, it } from "vitest";
import { z } from "zod";
import { defineTask } from "../../sdk/tasks.js";
import { createTestRuntime, type WorkflowDefinition } from "../../sdk/testing.js";

const charge = defineTask({
  type: "charge",
  params: z.object({}).strict().optional(),
  run: ({ input }) => ({ receipt: `r-${z.object({ orderId: z.string() }).parse(input).orderId}` }),
});

const weft = await createTestRuntime({ tasks: [charge] });
afterAll(() => weft.close());

const order: WorkflowDefinition = {
  name: "order",
  nodes: [
    { id: "charge", type: "charge", retry: { maxAttempts: 5, backoff: { initialSeconds: 60 } } },
    { id: "ship-tomorrow", type: "wait", dependsOn: ["charge"], params: { seconds: 86_400 } },
    { id: "approve", type: "callback", dependsOn: ["ship-tomorrow"], params: { timeoutSeconds: 3600 } },
    { id: "done", type: "merge", dependsOn: ["charge", "approve"] },
  ],
};

it("charges, waits a day, and ships once approved", async () => {
  const started = weft.clock.now();
  const id = await weft.start(order, { orderId: "o-1", amount: 42 });
  const token = await weft.callbacks.waitFor(id, "approve");
  expect(weft.clock.now() - started).toBeGreaterThanOrEqual(86_400_000);
  await weft.callbacks.complete(token, { by: "grace" });

  const run = await weft.runToEnd(id);
  expect(run.status).toBe("SUCCEEDED");
  expect(run.output).toEqual({ done: { charge: { receipt: "r-o-1" }, approve: { by: "grace" } } });
  expect(run.nodes.charge).toMatchObject({ status: "COMPLETED", attempt: 1 });
  expect(run.history.at(-1)?.type).toBe("ExecutionSucceeded");
});
