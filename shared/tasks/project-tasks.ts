/**
 * A project's task types, found one way: `npm start` / `weft dev` load them and `weft validate`
 * checks definitions against them through this one function, so a definition valid for one is
 * valid for the other.
 *
 * - `configFile` given (`--config FILE`, relative to `cwd`): that file, which must exist;
 * - else `weft.config.json` in `cwd` when there is one;
 * - else the `tasks/` folder of `cwd` when there is one;
 * - else the built-in task types alone.
 *
 * The `lambda` task type is there in every case; a function that no `lambdaModules` entry maps
 * fails its node at run time saying where to map it (local-config.ts).
 */
import { existsSync, statSync } from "node:fs";
import path from "node:path";
import {
  DEFAULT_LOCAL_CONFIG_FILE,
  type LocalConfig,
  type LocalTaskOptions,
  loadLocalConfig,
  localTaskOptions,
} from "./local-config.js";

/** The custom task folder a project without a config file has, when it exists. */
export const DEFAULT_TASKS_DIR = "tasks";

export interface ProjectTaskQuery {
  /** The project's folder (where `npm start` / `weft dev` / `weft validate` run). */
  cwd: string;
  /** `--config FILE`: this file instead of the default lookup. */
  configFile?: string;
  /** Where WEFT_HTTP_ALLOW is read (the `http` task's egress policy). Default process.env. */
  env?: Record<string, string | undefined>;
}

/** The config file the lookup settles on (absolute), or undefined when the project has none. */
export function projectConfigFile(query: Pick<ProjectTaskQuery, "cwd" | "configFile">): string | undefined {
  if (query.configFile !== undefined) return path.resolve(query.cwd, query.configFile);
  const fallback = path.resolve(query.cwd, DEFAULT_LOCAL_CONFIG_FILE);
  return existsSync(fallback) ? fallback : undefined;
}

/**
 * The task registry options of the project in `cwd` (see the top of this file). Rejects with a
 * message naming the file when the config file is missing (when given), unreadable or invalid.
 */
export async function projectTaskOptions(query: ProjectTaskQuery): Promise<LocalTaskOptions> {
  const file = projectConfigFile(query);
  return localTaskOptions(
    file === undefined ? configWithoutFile(query.cwd) : await loadLocalConfig(file),
    query.env,
  );
}

/** What a project without weft.config.json is configured as: its tasks/ folder, no Lambda mapped. */
function configWithoutFile(cwd: string): LocalConfig {
  const baseDir = path.resolve(cwd);
  const tasksDir = path.join(baseDir, DEFAULT_TASKS_DIR);
  return {
    baseDir,
    file: path.join(baseDir, DEFAULT_LOCAL_CONFIG_FILE),
    ...(isDirectory(tasksDir) ? { tasksDir } : {}),
  };
}

function isDirectory(dir: string): boolean {
  try {
    return statSync(dir).isDirectory();
  } catch {
    return false;
  }
}
