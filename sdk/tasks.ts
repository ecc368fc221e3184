/**
 * `weft-orchestrator/tasks`: what a custom task type is written with. One file per task type in
 * your tasks folder, each exporting what `defineTask` returns:
 *
 *   import * as z from "zod"; // not `import { z }`: that bundles every zod locale into each function
 *   import { defineTask, TerminalError } from "weft-orchestrator/tasks";
 *   export const greet = defineTask({
 *     type: "greet",
 *     params: z.object({ greeting: z.string().default("Hello") }),
 *     run: ({ params, input }) => ({ message: `${params.greeting}, ${String(input)}` }),
 *   });
 *
 * Throw `TerminalError` to fail the node at once, `RetryableError` (or anything else) to let its
 * retry policy decide.
 *
 * Exact numbers: a number in the input or params that a double cannot hold digit for digit (most
 * integers beyond 2^53, a decimal with more digits than a double keeps) arrives as a
 * `LosslessNumber`; `isExactNumber(v)` tells, `v.value` is its digits, and returning it (or a new
 * `LosslessNumber("…")`) outputs those digits unchanged. Every other number is a plain number.
 */
import type { z } from "zod";
import { defineTask as defineAnyTask, type TaskInput, type TaskType } from "../shared/tasks/task-type.js";

export { type ExactNumber, isExactNumber, LosslessNumber } from "../shared/domain/exact-numbers.js";
export * from "../shared/tasks/errors.js";
export type { TaskContext, TaskInput, TaskType } from "../shared/tasks/task-type.js";

/** A custom task type: what a user's task module declares. */
export interface CustomTaskDefinition<S extends z.ZodType> {
  /** The name nodes use as their `type` (at most 64 characters; not a built-in's). */
  type: string;
  /** The node's `params`: checked when the workflow is registered, parsed again at every run. */
  params: S;
  /** How long a run usually takes, in ms: a hint for running it in the same worker invocation. */
  expectedMs?(params: z.output<S>): number;
  /** The work: gets the execution's input, the params, the dependencies' outputs and the context. */
  run(input: TaskInput<z.output<S>>): Promise<unknown> | unknown;
}

/**
 * Declares a custom task type. (The engine's own task types use more options — inline, deferred and
 * composite nodes — that are not part of the task API.)
 */
export function defineTask<S extends z.ZodType>(task: CustomTaskDefinition<S>): TaskType<z.output<S>> {
  return defineAnyTask(task);
}
