/** The messages between the isolated evaluator (isolated.ts) and its threads (thread.ts). */
import { containsExact, parseExact } from "../../domain/exact-numbers.js";
import type { ExpressionLimits, ExpressionScope } from "../../domain/expressions.js";
import { encodeJson } from "../../domain/json.js";

/** workerData of a thread started to evaluate: the module it runs checks for it. */
export const THREAD_MARK = "weftExpressionThread";

export interface EvaluationRequest {
  id: number;
  kind: "resolve" | "condition";
  path: string;
  /** The engine's clock, read once by the caller: $now() and $millis() in the thread give it. */
  nowMs: number;
  limits: Partial<ExpressionLimits> | undefined;
  /** The data, as it is, or as its JSON text when it holds an exact number (see `crossing`). */
  data: EvaluationData | { exactJson: string };
}

/** What an evaluation reads. */
export interface EvaluationData {
  /** resolve: the value holding expressions; condition: the expression. */
  value: unknown;
  scope: ExpressionScope;
  bindings: Record<string, unknown> | undefined;
}

/**
 * What crosses postMessage when a value holds exact numbers (exact-numbers.ts): structured cloning
 * copies a LosslessNumber as a plain object `{value, isLosslessNumber}`, which would then be written
 * as an object. The value crosses as its exact JSON text instead, parsed with parseExact on the
 * other side; a value without them crosses as it is (no cost for ordinary values).
 */
export function crossing(value: unknown): string | undefined {
  if (!containsExact(value)) return undefined;
  return encodeJson(value, CROSSING_LIMITS);
}

export function uncross(text: string): unknown {
  return parseExact(text);
}

/** Nothing is refused on the way: what crosses was already bounded where it was made. */
const CROSSING_LIMITS = {
  maxBytes: Number.POSITIVE_INFINITY,
  maxDepth: Number.POSITIVE_INFINITY,
  what: "a value crossing to the expression thread",
};

export type EvaluationReply =
  /** The thread has loaded and serves requests (its start never counts against a time bound). */
  | { id: 0; kind: "ready" }
  /** The evaluation of the expression at this index (expressionsIn's order) has started. */
  | { id: number; kind: "at"; index: number }
  | { id: number; kind: "value"; value: unknown }
  /** A value holding exact numbers, as its JSON text (`crossing`). */
  | { id: number; kind: "exact-value"; json: string }
  /** An ExpressionError: terminal for the node. */
  | { id: number; kind: "expression-error"; message: string; path: string | undefined }
  /** Anything else went wrong in the thread: the caller's error, retried by its policy. */
  | { id: number; kind: "failure"; message: string };
