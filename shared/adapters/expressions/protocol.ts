/** The messages between the isolated evaluator (isolated.ts) and its threads (thread.ts). */
import type { ExpressionLimits, ExpressionScope } from "../../domain/expressions.js";

/** workerData of a thread started to evaluate: the module it runs checks for it. */
export const THREAD_MARK = "weftExpressionThread";

export interface EvaluationRequest {
  id: number;
  kind: "resolve" | "condition";
  /** resolve: the value holding expressions; condition: the expression. */
  value: unknown;
  path: string;
  scope: ExpressionScope;
  /** The engine's clock, read once by the caller: $now() and $millis() in the thread give it. */
  nowMs: number;
  bindings: Record<string, unknown> | undefined;
  limits: Partial<ExpressionLimits> | undefined;
}

export type EvaluationReply =
  /** The thread has loaded and serves requests (its start never counts against a time bound). */
  | { id: 0; kind: "ready" }
  /** The evaluation of the expression at this index (expressionsIn's order) has started. */
  | { id: number; kind: "at"; index: number }
  | { id: number; kind: "value"; value: unknown }
  /** An ExpressionError: terminal for the node. */
  | { id: number; kind: "expression-error"; message: string; path: string | undefined }
  /** Anything else went wrong in the thread: the caller's error, retried by its policy. */
  | { id: number; kind: "failure"; message: string };
