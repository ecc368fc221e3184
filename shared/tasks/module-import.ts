/**
 * Importing a project's task modules, TypeScript ones included, from compiled JavaScript (the `weft`
 * binary runs dist/, not tsx), and importing them afresh when they change (`weft dev`).
 *
 * - TypeScript: tsx's loader is registered on the first `.ts` module, in this process only.
 * - Reloading: ES modules are cached by URL, so a module is imported again under a new URL, its
 *   `?weft-reload=N` query. A resolve hook gives every file the module imports the same query
 *   (dependencies under node_modules aside), so a helper beside the task is reloaded with it.
 */
import { register } from "node:module";
import { pathToFileURL } from "node:url";

const RELOAD_PARAM = "weft-reload";

// Runs in Node's loader thread, so it is plain JavaScript handed over as a data: URL.
const RELOAD_HOOK = `
const tagOf = (url) => { try { return new URL(url).searchParams.get(${JSON.stringify(RELOAD_PARAM)}); } catch { return null; } };
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  if (!result.url.startsWith("file:") || result.url.includes("/node_modules/")) return result;
  const tag = tagOf(specifier) ?? (context.parentURL === undefined ? null : tagOf(context.parentURL));
  if (tag === null) return result;
  const url = new URL(result.url);
  url.searchParams.set(${JSON.stringify(RELOAD_PARAM)}, tag);
  return { ...result, url: url.href };
}`;

let typescript: Promise<void> | undefined;
let reloadHook = false;

const TYPESCRIPT_FILE = /\.[mc]?ts$/;

/**
 * Imports a module file. `generation` > 0 imports it (and the project files it imports) afresh,
 * as generation N; the same N twice gives the same module instance.
 */
export async function importModuleFile(file: string, generation = 0): Promise<Record<string, unknown>> {
  if (TYPESCRIPT_FILE.test(file)) {
    typescript ??= import("tsx/esm/api").then(({ register: registerTsx }) => {
      registerTsx();
    });
    await typescript;
  }
  const url = pathToFileURL(file);
  if (generation > 0) {
    if (!reloadHook) {
      register(`data:text/javascript,${encodeURIComponent(RELOAD_HOOK)}`);
      reloadHook = true;
    }
    url.searchParams.set(RELOAD_PARAM, String(generation));
  }
  return (await import(url.href)) as Record<string, unknown>;
}
