/**
 * The `loop` built-in type: a node that runs a workflow as a child execution per iteration, the
 * previous iteration's output bound as `$previous` (and its number as `$iteration`), until its
 * `while` condition, evaluated on each iteration's output, is false — or its `maxIterations` are
 * used up, which fails it with `LoopLimitExceeded`. Between iterations it waits `intervalSeconds`
 * holding no worker (engine/loop.ts). Step Functions says this with a Choice state looping back
 * through a Wait; Temporal with a `while` around an activity.
 */
import { childWorkflowParamsSchema } from "./child.js";
import * as z from "./zod.js";

export const LOOP_LIMITS = {
  /** Iterations one attempt of a loop may run (each is a child execution, counted by the fan-out budget). */
  maxIterations: 10_000,
  /** The longest pause between two iterations: a day. */
  maxIntervalSeconds: 86_400,
} as const;

const expression = z.string().check(z.regex(/^\{%[\s\S]*%\}$/));

export const loopParamsSchema = z.strictObject({
  /** What each iteration runs: a workflow's name, version and input, as a `workflow` node's params. */
  workflow: childWorkflowParamsSchema,
  /** Evaluated on each iteration's output (`$previous`): true runs another iteration. */
  while: z.union([expression, z.boolean()]),
  /** Past this many iterations with `while` still true, the node fails with LoopLimitExceeded. */
  maxIterations: z.number().check(z.int(), z.gte(1), z.lte(LOOP_LIMITS.maxIterations)),
  /** The pause before each iteration after the first (an expression may read `$previous`). */
  intervalSeconds: z.optional(
    z.union([z.number().check(z.gte(0), z.lte(LOOP_LIMITS.maxIntervalSeconds)), expression]),
  ),
});

export type LoopParams = z.output<typeof loopParamsSchema>;

/** The child's idempotency key: one child per iteration of one attempt of the loop's node. */
export function iterationKey(parentExecutionId: string, nodeId: string, attempt: number, iteration: number) {
  return `loop:${parentExecutionId}:${nodeId}:${attempt}:${iteration}`;
}

/** The interval an expression gave, checked like a literal one. */
export function intervalOf(value: unknown): number | undefined {
  if (typeof value !== "number" || !Number.isFinite(value)) return undefined;
  if (value < 0 || value > LOOP_LIMITS.maxIntervalSeconds) return undefined;
  return value;
}
