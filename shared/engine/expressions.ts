/**
 * The evaluator an engine uses when its ports name none: the domain's, in the caller's thread.
 * Deployed functions, the local runtime and the test runtime pass an isolated one
 * (adapters/expressions/isolated.ts) through their wiring; this default keeps an engine built from
 * bare ports (the simulation, unit tests) deterministic and free of threads.
 */
import { evaluateCondition, resolveExpressions } from "../domain/expressions.js";
import type { ExpressionEvaluator } from "../ports.js";

export const IN_THREAD_EXPRESSIONS: ExpressionEvaluator = {
  resolve: resolveExpressions,
  condition: evaluateCondition,
};
