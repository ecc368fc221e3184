/**
 * The evaluator an engine uses when its ports name none: the domain's, in the caller's thread.
 * Deployed functions, the local runtime and the test runtime pass an isolated one
 * (adapters/expressions/isolated.ts) through their wiring; this default keeps an engine built from
 * bare ports (the simulation, unit tests) deterministic and free of threads.
 *
 * The evaluation module (and jsonata with it) is imported on the first expression, not with the
 * engine: a bundle keeps it in a chunk of its own.
 */
import type { ExpressionEvaluator } from "../ports.js";

type Evaluation = typeof import("../domain/expression-evaluation.js");

let evaluation: Evaluation | undefined;

/**
 * Loads the evaluation module (once per process). Awaited only until it is loaded, so that later
 * evaluations take no extra turn of the event loop; the simulation loads it before a world starts,
 * so that a seed replays the same alone as in a campaign.
 */
export async function loadInThreadExpressions(): Promise<Evaluation> {
  evaluation ??= await import("../domain/expression-evaluation.js");
  return evaluation;
}

export const IN_THREAD_EXPRESSIONS: ExpressionEvaluator = {
  resolve: async (value, scope, options, path) =>
    (evaluation ?? (await loadInThreadExpressions())).resolveExpressions(value, scope, options, path),
  condition: async (expression, scope, options) =>
    (evaluation ?? (await loadInThreadExpressions())).evaluateCondition(expression, scope, options),
};
