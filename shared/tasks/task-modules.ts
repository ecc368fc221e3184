/**
 * Custom task modules as values: which exports are task types, and how they join a registry. Used
 * on a folder's modules (loader.ts) and on the modules a function bundle imports
 * (infra/lib/function-entry.ts); nothing here reads files or pulls in a task type's runtime.
 */
import type { TaskRegistry, TaskType } from "./task-type.js";

/** The definition schema's limit for a node's `type`. */
const MAX_TYPE_LENGTH = 64;

/** True for what `defineTask` returns: a string `type`, a zod schema as `params` and a `run` function. */
export function isTaskType(value: unknown): value is TaskType<unknown> {
  if (typeof value !== "object" || value === null) return false;
  const candidate = value as Record<string, unknown>;
  return (
    typeof candidate.type === "string" &&
    candidate.type !== "" &&
    isZodSchema(candidate.params) &&
    typeof candidate.run === "function" &&
    (candidate.inline === undefined || typeof candidate.inline === "boolean") &&
    (candidate.defer === undefined || typeof candidate.defer === "function")
  );
}

/** Duck-typed, so a task built against another copy of zod (e.g. in a user's package) still counts. */
function isZodSchema(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return false;
  const schema = value as Record<string, unknown>;
  return typeof schema.safeParse === "function" && typeof schema.parse === "function";
}

/** A module's exports and where they came from (for error messages). */
export interface TaskModule {
  source: string;
  exports: Record<string, unknown>;
}

/**
 * The task types among the modules' exports, in module order. The same task object exported twice
 * counts once; two different tasks with one type are an error naming both sources. Used on folders
 * (loadTaskModules) and on the modules a function bundle imports (infra/lib/function-entry.ts).
 */
export function collectTaskTypes(modules: readonly TaskModule[]): TaskType[] {
  const found = new Map<string, { task: TaskType; source: string }>();
  for (const { source, exports } of modules) {
    for (const [exportName, value] of Object.entries(exports)) {
      if (!isTaskType(value)) continue;
      if (value.type.length > MAX_TYPE_LENGTH)
        throw new Error(
          `custom task module ${source}: export "${exportName}" has a type longer than ${MAX_TYPE_LENGTH} characters`,
        );
      const seen = found.get(value.type);
      if (seen?.task === value) continue;
      if (seen)
        throw new Error(
          `task type "${value.type}" is defined twice: in ${seen.source} and in ${source} (export "${exportName}")`,
        );
      found.set(value.type, { task: value, source });
    }
  }
  return [...found.values()].map(({ task }) => task);
}

/**
 * Registers custom task types (each with where it came from, for the error) on top of a registry's
 * own: the same task object again is skipped; another task with a type already registered is an error.
 */
export function addCustomTasks(
  registry: TaskRegistry,
  custom: ReadonlyArray<{ task: TaskType<unknown>; from: string }>,
): TaskRegistry {
  for (const { task, from } of custom) {
    if (registry.get(task.type) === task) continue;
    if (registry.has(task.type))
      throw new Error(
        `custom task type "${task.type}" (from ${from}) clashes with a task type of the same name that is already registered`,
      );
    registry.register(task);
  }
  return registry;
}
