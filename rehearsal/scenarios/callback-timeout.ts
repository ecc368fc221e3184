/**
 * A callback's timeout fires to the second: its node's own task message, delayed by SQS to the
 * deadline, fails it — with the sweeper's schedule held, so no sweep can be what fired it.
 */
import type { Scenario } from "./context.js";
import { check, eventMs, historyOf, nodeOf, register, start, waitForEnd } from "./helpers.js";

const TIMEOUT_SECONDS = 3;
/** Issue 26: a callback's timeout fires within 2 s of its deadline. */
const PRECISION_MS = 2_000;

export const callbackTimeoutScenario: Scenario = {
  name: `a callback's ${TIMEOUT_SECONDS} s timeout fails it within 2 s of its deadline, with no sweep`,
  timeoutMs: 90_000,
  async run(ctx) {
    const name = ctx.unique("callback-timeout");
    await register(ctx, {
      name,
      nodes: [
        {
          id: "approve",
          type: "callback",
          params: { timeoutSeconds: TIMEOUT_SECONDS },
          retry: { maxAttempts: 1 },
        },
      ],
    });
    const resumeSweeps = ctx.pauseSweeps();
    let view: Awaited<ReturnType<typeof waitForEnd>>;
    try {
      const executionId = await start(ctx, { workflow: name });
      view = await waitForEnd(ctx, executionId, 60_000);
    } finally {
      resumeSweeps();
    }
    check(view.status === "FAILED", `ended ${view.status}`);
    const approve = nodeOf(view, "approve");
    check(
      approve.status === "FAILED" && approve.error?.name === "CallbackTimedOut",
      `approve is ${approve.status} (${approve.error?.name})`,
    );
    const events = await historyOf(ctx, view.executionId);
    const waiting = events.find((e) => e.type === "CallbackWaiting" && e.nodeId === "approve");
    const failed = events.find((e) => e.type === "NodeFailed" && e.nodeId === "approve");
    check(waiting && failed, `history has no CallbackWaiting and NodeFailed: ${JSON.stringify(events)}`);
    const lateMs = eventMs(failed) - (eventMs(waiting) + TIMEOUT_SECONDS * 1000);
    check(
      lateMs >= 0 && lateMs <= PRECISION_MS,
      `it failed ${lateMs} ms after its deadline (goal: 0 to ${PRECISION_MS})`,
    );
    return `CallbackTimedOut ${lateMs} ms after its ${TIMEOUT_SECONDS} s deadline, sweeps held`;
  },
};
