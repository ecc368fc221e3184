/** The options of `createTestRuntime`, checked at the edge: a mistake is named before anything starts. */
import { z } from "zod";
import { isTaskType } from "../shared/tasks/loader.js";
import type { TaskType } from "../shared/tasks/task-type.js";
import type { LambdaHandler } from "./lambda.js";

export interface TestRuntimeOptions {
  /** Custom task types, as `defineTask` returns them (e.g. `[greet]`). */
  tasks?: readonly TaskType<unknown>[];
  /**
   * A folder of task modules, loaded as `weft dev` and the deployed worker load `tasks/`: every
   * `.ts`/`.js` module directly in it, each export that is a task type registered. With `tasks`
   * too, both are registered.
   */
  tasksDir?: string;
  /**
   * The `lambda` task type's functions: function name → a JavaScript function standing in for it
   * (the event in, the result out, through JSON as with Lambda). A `lambda` node naming a function
   * not given here fails (terminal) saying so.
   */
  lambda?: Readonly<Record<string, LambdaHandler>>;
  /** Attempts of a node whose definition names none (WEFT_DEFAULT_MAX_ATTEMPTS; default 3). */
  defaultMaxAttempts?: number;
  /** A claimed node's lease; heartbeats renew it every third of it (WEFT_LEASE_SECONDS; default 60). */
  leaseSeconds?: number;
  /** The worker function's timeout, as deployed (WEFT_WORKER_TIMEOUT_SECONDS; default 300). */
  workerTimeoutSeconds?: number;
  /** Where virtual time starts (epoch ms or a Date). Default: the real time when the runtime is created. */
  startAt?: number | Date;
  /** Seed of retry jitter: the same seed, the same backoffs (default a fixed one). */
  seed?: number;
}

const optionsSchema = z
  .object({
    tasks: z
      .array(
        z.custom<TaskType<unknown>>(
          isTaskType,
          "must be a task type as defineTask returns it ({ type, params, run })",
        ),
      )
      .optional(),
    tasksDir: z.string().min(1).optional(),
    lambda: z
      .record(
        z.string().min(1),
        z.custom<LambdaHandler>((value) => typeof value === "function", "must be a function"),
      )
      .optional(),
    defaultMaxAttempts: z.number().int().min(1).max(100).optional(),
    leaseSeconds: z.number().int().min(1).optional(),
    // The range is the engine's (checkWorkerTimeout), which names it in its own error.
    workerTimeoutSeconds: z.number().optional(),
    startAt: z.union([z.number().int().min(0), z.date()]).optional(),
    seed: z.number().int().optional(),
  })
  .strict();

export type ParsedOptions = z.output<typeof optionsSchema>;

export function parseOptions(options: unknown): ParsedOptions {
  const parsed = optionsSchema.safeParse(options ?? {});
  if (!parsed.success)
    throw new TypeError(`createTestRuntime: invalid options\n${z.prettifyError(parsed.error)}`);
  return parsed.data;
}
