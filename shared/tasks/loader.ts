/**
 * Custom task types: every module in one folder is imported and each export that is a task type
 * (as `defineTask` makes them) is registered, so adding a task type is adding one file. Also builds
 * the registry a worker or the local runtime runs with: built-ins, http, lambda, emit and custom.
 */
import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import { createTaskRegistry } from "./builtins.js";
import { type EventSender, emitTask } from "./emit.js";
import { type HttpTaskOptions, httpTask } from "./http.js";
import { type LambdaInvoker, lambdaTask } from "./lambda.js";
import { importModuleFile } from "./module-import.js";
import { isTaskModuleFile } from "./task-files.js";
import { addCustomTasks, collectTaskTypes, type TaskModule } from "./task-modules.js";
import type { TaskRegistry, TaskType } from "./task-type.js";

// What a bundled function needs of custom task modules lives apart (task-modules.ts): no folder reading, no http runtime.
export { collectTaskTypes, isTaskType, type TaskModule } from "./task-modules.js";

/**
 * Imports every task module directly in `dir` (`*.ts`, `*.mts`, `*.js`, `*.mjs`; not declarations or
 * tests: task-files.ts; sorted by name, sub-folders left alone) and returns the task types they
 * export. `generation` > 0 imports them afresh (module-import.ts), as `weft dev` does on a change.
 * The same task object exported twice (say, by name and as default, or re-exported by an index
 * file) counts once; two different tasks with one type are an error naming both files.
 */
export async function loadTaskModules(dir: string, generation = 0): Promise<TaskType[]> {
  const folder = path.resolve(dir);
  let names: string[];
  try {
    if (!(await stat(folder)).isDirectory()) throw new Error("not a directory");
    names = await readdir(folder);
  } catch (error) {
    throw new Error(`custom tasks folder ${folder} cannot be read: ${reason(error)}`);
  }
  const files = names.filter(isTaskModuleFile).sort();

  const modules: TaskModule[] = [];
  for (const name of files) {
    const file = path.join(folder, name);
    try {
      modules.push({
        source: file,
        exports: await importModuleFile(file, generation),
      });
    } catch (error) {
      throw new Error(`custom task module ${file} failed to load: ${reason(error)}`);
    }
  }
  return collectTaskTypes(modules);
}

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

/** Built-ins + http + lambda (with an invoker) + emit (with a sender) + the custom task types. */
export async function buildTaskRegistry(options: TaskRegistryOptions = {}): Promise<TaskRegistry> {
  const { customTasksDir, reloadGeneration, ...rest } = options;
  const fromDir = customTasksDir === undefined ? [] : await loadTaskModules(customTasksDir, reloadGeneration);
  return assembleTaskRegistry(rest, fromDir, `the folder ${path.resolve(customTasksDir ?? ".")}`);
}

/** buildTaskRegistry without a folder to read: synchronous, for a Lambda bundle's static imports. */
export function createFullTaskRegistry(
  options: Omit<TaskRegistryOptions, "customTasksDir" | "reloadGeneration"> = {},
): TaskRegistry {
  return assembleTaskRegistry(options, [], "");
}

function assembleTaskRegistry(
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

function reason(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
