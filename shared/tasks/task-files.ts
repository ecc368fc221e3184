/**
 * Which files of a custom tasks folder are task modules: one rule for the local runtime (which
 * imports the folder, loader.ts) and the construct (which bundles it, infra/lib/function-entry.ts),
 * so a task that runs locally is the task that is deployed.
 */

/** TypeScript and JavaScript modules directly in the folder. */
const MODULE_FILE = /\.(ts|mts|js|mjs)$/;
/** Declarations, and tests kept beside their task, are not task modules. */
const NOT_A_MODULE = /(\.d\.[mc]?ts|\.(test|spec)\.[mc]?[jt]s)$/;

export function isTaskModuleFile(name: string): boolean {
  return MODULE_FILE.test(name) && !NOT_A_MODULE.test(name) && !name.startsWith(".");
}
