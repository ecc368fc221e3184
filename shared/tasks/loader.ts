/**
 * Custom task types: every module in one folder is imported and each export that is a task type
 * (as `defineTask` makes them) is registered, so adding a task type is adding one file. Also builds
 * the registry a worker or the local runtime runs with: built-ins, http, lambda, emit and custom.
 */
import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import { assembleTaskRegistry, type TaskRegistryOptions } from "./full-registry.js";
import { importModuleFile } from "./module-import.js";
import { isTaskModuleFile } from "./task-files.js";
import { collectTaskTypes, type TaskModule } from "./task-modules.js";
import type { TaskRegistry, TaskType } from "./task-type.js";

// The registry from task types already imported lives apart too (full-registry.ts): a bundle
// that reaches this module's importModuleFile gets tsx and esbuild as chunks it never loads.
export { createFullTaskRegistry, type TaskRegistryOptions } from "./full-registry.js";
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

/** Built-ins + http + lambda (with an invoker) + emit (with a sender) + the custom task types. */
export async function buildTaskRegistry(options: TaskRegistryOptions = {}): Promise<TaskRegistry> {
  const { customTasksDir, reloadGeneration, ...rest } = options;
  const fromDir = customTasksDir === undefined ? [] : await loadTaskModules(customTasksDir, reloadGeneration);
  return assembleTaskRegistry(rest, fromDir, `the folder ${path.resolve(customTasksDir ?? ".")}`);
}

function reason(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
