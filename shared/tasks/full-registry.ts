/**
 * The registry a worker or the local runtime runs with, from task types already imported: built-ins,
 * http, lambda, emit and custom. Apart from loader.ts (which reads folders and imports module files
 * through tsx) so that a Lambda bundle, which imports its task modules statically, reaches neither.
 */
import { createTaskRegistry } from "./builtins.js";
import { type EventSender, emitTask } from "./emit.js";
import { type HttpTaskOptions, httpTask } from "./http.js";
import { type LambdaInvoker, lambdaTask } from "./lambda.js";
import { addCustomTasks } from "./task-modules.js";
import type { TaskRegistry, TaskType } from "./task-type.js";

export interface TaskRegistryOptions {
  /** A folder of custom task modules (see loadTaskModules). */
  customTasksDir?: string;
  /** > 0: import the folder's modules afresh, as this generation (loadTaskModules). */
  reloadGeneration?: number;
  /** Custom task types given directly (e.g. imported by a bundled function). */
  customTasks?: readonly TaskType<unknown>[];
  /** Enables the `lambda` task type. */
  lambda?: LambdaInvoker;
  /** Enables the `emit` task type; needs `lifecycleBusName`, its default bus. */
  events?: EventSender;
  lifecycleBusName?: string;
  /**
   * The `http` task type's options: response limit, egress policy (default: public addresses only;
   * the local runtime passes its own), host resolver, and the store of secret references.
   */
  http?: HttpTaskOptions;
}

/** buildTaskRegistry without a folder to read: synchronous, for a Lambda bundle's static imports. */
export function createFullTaskRegistry(
  options: Omit<TaskRegistryOptions, "customTasksDir" | "reloadGeneration"> = {},
): TaskRegistry {
  return assembleTaskRegistry(options, [], "");
}

export function assembleTaskRegistry(
  options: Omit<TaskRegistryOptions, "customTasksDir" | "reloadGeneration">,
  fromDir: readonly TaskType[],
  dirLabel: string,
): TaskRegistry {
  const standard: TaskType<unknown>[] = [httpTask(options.http)];
  if (options.lambda) standard.push(lambdaTask(options.lambda));
  if (options.events) {
    if (!options.lifecycleBusName)
      throw new Error("the emit task type needs lifecycleBusName, the bus it emits to by default");
    standard.push(emitTask(options.events, options.lifecycleBusName));
  }
  return addCustomTasks(createTaskRegistry(standard), [
    ...fromDir.map((task) => ({ task, from: dirLabel })),
    ...(options.customTasks ?? []).map((task) => ({ task, from: "customTasks" })),
  ]);
}
