/**
 * The task types as the functions that never run a task see them (the api, the sweeper, the DLQ
 * consumer): the same types with the same params and registration rules as the worker's
 * (createDeployedTaskRegistry in shared/config/wiring.ts), so definitions are checked alike, but
 * without the runtimes of `http` (undici, the secret stores) and `lambda` (the Lambda client). Those
 * two are never inline, so only the worker runs them; here their run throws, naming the task type.
 * `emit` and the built-ins cost nothing extra and are the real ones; custom task types are the
 * bundle's own, whole (an inline one runs wherever its node becomes ready).
 */
import { createTaskRegistry } from "./builtins.js";
import type { EgressPolicy } from "./egress.js";
import { type EventSender, emitTask } from "./emit.js";
import { httpParamsSchema, httpRegistrationParams } from "./http-params.js";
import { type LambdaInvoker, lambdaTask } from "./lambda.js";
import { addCustomTasks } from "./task-modules.js";
import { defineTask, type TaskRegistry, type TaskType } from "./task-type.js";

export interface DeclaredTaskOptions {
  /** The egress policy the worker applies, which `http`'s registration rules check URLs against. */
  egress: EgressPolicy;
  /** `emit`'s sender and its default bus. */
  events: EventSender;
  lifecycleBusName: string;
  /** The custom task types of the function's bundle. */
  customTasks?: readonly TaskType<unknown>[];
}

function runsInTheWorker(type: string): never {
  throw new Error(`the ${type} task type runs in the worker function, not in this one`);
}

const NO_LAMBDA_INVOKER: LambdaInvoker = { invoke: () => runsInTheWorker("lambda") };

export function declaredTaskRegistry(options: DeclaredTaskOptions): TaskRegistry {
  const http = defineTask({
    type: "http",
    params: httpParamsSchema,
    registrationParams: httpRegistrationParams(options.egress),
    run: () => runsInTheWorker("http"),
  });
  const standard: TaskType<unknown>[] = [
    http,
    lambdaTask(NO_LAMBDA_INVOKER),
    emitTask(options.events, options.lifecycleBusName),
  ];
  return addCustomTasks(
    createTaskRegistry(standard),
    (options.customTasks ?? []).map((task) => ({ task, from: "customTasks" })),
  );
}
