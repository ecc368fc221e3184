/**
 * Hostile expressions on the deployed stack: each of these used to kill the worker function on
 * every delivery (V8's "invalid size" abort) or hold it for minutes (a backtracking regex). In the
 * bundled worker, the isolated evaluator's thread (the bundle run again as a thread) stops them:
 * the node fails with ExpressionError naming the bound, the worker function never crashes, and an
 * execution started meanwhile succeeds.
 */
import type { Scenario } from "./context.js";
import { check, nodeOf, register, start, waitForEnd } from "./helpers.js";

export const hostileScenario: Scenario = {
  name: "hostile expressions fail their node, never the worker function",
  timeoutMs: 180_000,
  async run(ctx) {
    const bombs = [
      {
        id: "pad",
        node: { params: { value: "{% $length($pad('', 500000000, 'a')) %}" } },
        says: "made a string of more than",
      },
      {
        id: "regex",
        node: { when: "{% $contains($pad('', 33, 'a') & 'b', /^(a+)+$/) %}" },
        says: "ran for more than",
      },
    ];
    const calm = ctx.unique("calm");
    for (const bomb of bombs)
      await register(ctx, {
        name: ctx.unique(`bomb-${bomb.id}`),
        nodes: [{ id: bomb.id, type: "pass", ...bomb.node }],
      });
    await register(ctx, {
      name: calm,
      nodes: [{ id: "double", type: "pass", params: { value: "{% input.n * 2 %}" } }],
    });
    const crashesBefore = ctx.functions.worker.stats.crashes;
    const started = await Promise.all([
      ...bombs.map((bomb) => start(ctx, { workflow: ctx.unique(`bomb-${bomb.id}`) })),
      start(ctx, { workflow: calm, input: { n: 21 } }),
    ]);
    const views = await Promise.all(started.map((id) => waitForEnd(ctx, id, 150_000)));
    const calmView = views[bombs.length]!;
    check(calmView.status === "SUCCEEDED", `the calm execution ended ${calmView.status}`);
    check(
      nodeOf(calmView, "double").output === 42,
      `double gave ${JSON.stringify(nodeOf(calmView, "double").output)}`,
    );
    bombs.forEach((bomb, i) => {
      const node = nodeOf(views[i]!, bomb.id);
      check(
        node.status === "FAILED" && node.error?.name === "ExpressionError",
        `${bomb.id}: ${node.status} ${node.error?.name}`,
      );
      check(
        (node.error?.message ?? "").includes(`was stopped: it ${bomb.says}`),
        `${bomb.id}: ${node.error?.message}`,
      );
    });
    const crashes = ctx.functions.worker.stats.crashes - crashesBefore;
    check(crashes === 0, `the worker function crashed ${crashes} time(s)`);
    return "pad and regex failed with ExpressionError naming the bound; 0 worker crashes; the calm execution succeeded";
  },
};
