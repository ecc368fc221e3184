/** The built-in task types. Each is an ordinary `defineTask`, exactly as a user's would be. */

import { callbackParamsSchema } from "../domain/callback.js";
import { childWorkflowParamsSchema } from "../domain/child.js";
import { ExpressionError } from "../domain/expressions.js";
import { loopParamsSchema } from "../domain/loop.js";
import { mapParamsSchema } from "../domain/map.js";
import * as z from "../domain/zod.js";
import { metricsAggregateTask } from "./aggregate.js";
import { RetryableError, TerminalError } from "./errors.js";
import { defineTask, TaskRegistry, type TaskType } from "./task-type.js";
import { varsTask } from "./vars.js";

const MAX_SLEEP_MS = 15 * 60 * 1000;

export const noopTask = defineTask({
  type: "noop",
  params: z.optional(z.strictObject({})),
  expectedMs: () => 0,
  run: () => null,
});

export const passTask = defineTask({
  type: "pass",
  params: z.optional(z.strictObject({ value: z.optional(z.unknown()) })),
  expectedMs: () => 0,
  run: ({ params, input }) => (params !== undefined && "value" in params ? params.value : input),
});

/** Holds the worker for `ms` (a Lambda invocation lasts at most 15 minutes); stops when aborted. */
export const sleepTask = defineTask({
  type: "sleep",
  params: z.strictObject({ ms: z.number().check(z.int(), z.gte(0), z.lte(MAX_SLEEP_MS)) }),
  expectedMs: (params) => params.ms,
  run: async ({ params, context }) => {
    await context.sleep(params.ms);
    return { sleptMs: params.ms };
  },
});

/** Fails its first `times` attempts (every attempt when `times` is absent), then passes. */
export const failTask = defineTask({
  type: "fail",
  params: z.optional(
    z.strictObject({
      message: z.optional(z.string().check(z.maxLength(2000))),
      retryable: z.optional(z.boolean()),
      times: z.optional(z.number().check(z.int(), z.gte(0))),
    }),
  ),
  expectedMs: () => 0,
  run: ({ params, context }) => {
    const times = params?.times;
    if (times === undefined || context.attempt <= times) {
      const message = params?.message ?? `fail task failed on attempt ${context.attempt}`;
      throw params?.retryable === false ? new TerminalError(message) : new RetryableError(message);
    }
    return { attempt: context.attempt };
  },
});

const MAX_WAIT_SECONDS = 366 * 24 * 3600;

const waitParams = z
  .strictObject({
    seconds: z.optional(z.number().check(z.gte(0), z.lte(MAX_WAIT_SECONDS))),
    until: z.optional(z.iso.datetime({ offset: true })),
  })
  .check(
    z.refine((params) => (params.seconds === undefined) !== (params.until === undefined), {
      message: "give exactly one of seconds and until",
    }),
  );

/**
 * A durable timer: the node becomes runnable `seconds` after it is ready, or at `until`, holding no
 * worker meanwhile. Both may be expressions: the engine evaluates them when it queues the node
 * (engine/deferral.ts). A time already past runs at once; `until` further than MAX_WAIT_SECONDS
 * from now is refused (an ExpressionError naming `params.until`).
 */
export const waitTask = defineTask({
  type: "wait",
  params: waitParams,
  defer: (params, { now }) => {
    if (params.seconds !== undefined) return params.seconds * 1000;
    const delayMs = Date.parse(params.until!) - now;
    if (delayMs > MAX_WAIT_SECONDS * 1000)
      throw new ExpressionError(`params.until is more than ${MAX_WAIT_SECONDS} seconds away`, {
        path: "params.until",
      });
    return delayMs;
  },
  run: ({ params, context }) => {
    if (params.seconds !== undefined) return { waitedSeconds: params.seconds };
    // Deferral refused it (too far) and queued it at once: the run says so, never that it waited.
    if (Date.parse(params.until!) - context.now() > MAX_WAIT_SECONDS * 1000)
      throw new ExpressionError(`params.until is more than ${MAX_WAIT_SECONDS} seconds away`, {
        path: "params.until",
      });
    return { waitedUntil: params.until! };
  },
});

/**
 * Runs inside the engine with no queue hop: the outputs of the dependencies that had completed.
 * The engine composes it from their stored outputs (large ones by reference); `run` says the same.
 */
export const mergeTask = defineTask({
  type: "merge",
  params: z.optional(z.strictObject({})),
  inline: true,
  outputsDeps: true,
  run: ({ deps }) => ({ ...deps }),
});

/**
 * Runs a task once per item of a list known at run time (domain/map.ts, engine/map.ts). The engine
 * runs it; it holds no worker while its items run.
 */
export const mapTask = defineTask({
  type: "map",
  params: mapParamsSchema,
  composite: "map",
  run: () => {
    throw new TerminalError("a map node is run by the engine, never as a handler");
  },
});

/**
 * Runs another workflow as a child execution and completes with its output (domain/child.ts,
 * engine/children.ts). The engine runs it; it holds no worker while the child runs.
 */
export const workflowTask = defineTask({
  type: "workflow",
  params: childWorkflowParamsSchema,
  composite: "workflow",
  run: () => {
    throw new TerminalError("a workflow node is run by the engine, never as a handler");
  },
});

/**
 * Runs another workflow as a child execution per iteration while its `while` holds (domain/loop.ts,
 * engine/loop.ts). The engine runs it; it holds no worker while its iterations run or it pauses.
 */
export const loopTask = defineTask({
  type: "loop",
  params: loopParamsSchema,
  composite: "loop",
  run: () => {
    throw new TerminalError("a loop node is run by the engine, never as a handler");
  },
});

/**
 * Waits, holding no worker, until someone settles it with its token — POST /callbacks/complete or
 * /callbacks/fail — or its timeout passes (domain/callback.ts, engine/callbacks.ts).
 */
export const callbackTask = defineTask({
  type: "callback",
  params: callbackParamsSchema,
  composite: "callback",
  run: () => {
    throw new TerminalError("a callback node is run by the engine, never as a handler");
  },
});

export const builtinTasks: TaskType<unknown>[] = [
  mapTask,
  workflowTask,
  loopTask,
  callbackTask,
  noopTask,
  passTask,
  sleepTask,
  failTask,
  mergeTask,
  waitTask,
  varsTask,
  metricsAggregateTask,
];

export function createTaskRegistry(extra: Iterable<TaskType<unknown>> = []): TaskRegistry {
  return new TaskRegistry([...builtinTasks, ...extra]);
}
