/** A terminal error fails the execution at once, cancels the rest, and keeps the task as a dead letter. */
import type { Scenario } from "./context.js";
import { check, expectStatus, nodeOf, register, start, waitForEnd } from "./helpers.js";

interface DeadLetter {
  id: string;
  executionId: string;
  nodeId: string;
  reason: string;
  receiveCount?: number;
}

export async function deadLettersOf(
  ctx: Parameters<Scenario["run"]>[0],
  executionId: string,
): Promise<DeadLetter[]> {
  const found: DeadLetter[] = [];
  let next: string | undefined;
  do {
    const page = expectStatus(
      await ctx.api.get<{ deadLetters: DeadLetter[]; next?: string }>("/dlq", { limit: "100", next }),
      200,
      "GET /dlq",
    );
    found.push(...page.deadLetters.filter((letter) => letter.executionId === executionId));
    next = page.next;
  } while (next);
  return found;
}

export const terminalFailureScenario: Scenario = {
  name: "terminal failure (→ FAILED at once, rest cancelled, dead letter at GET /dlq)",
  timeoutMs: 60_000,
  async run(ctx) {
    const name = ctx.unique("declined");
    await register(ctx, {
      name,
      nodes: [
        { id: "charge", type: "fail", params: { message: "card declined", retryable: false } },
        { id: "ship", type: "noop", dependsOn: ["charge"] },
      ],
    });
    const executionId = await start(ctx, { workflow: name });
    const view = await waitForEnd(ctx, executionId);
    check(view.status === "FAILED", `ended ${view.status}`);
    check(
      nodeOf(view, "charge").status === "FAILED" && nodeOf(view, "charge").attempt === 1,
      "charge failed on attempt 1",
    );
    check(nodeOf(view, "ship").status === "CANCELLED", `ship is ${nodeOf(view, "ship").status}`);
    const letters = await deadLettersOf(ctx, executionId);
    check(
      letters.length === 1 && letters[0]?.reason === "terminal" && letters[0].nodeId === "charge",
      `dead letters ${JSON.stringify(letters)}`,
    );
    return "FAILED; GET /dlq lists charge (terminal)";
  },
};
