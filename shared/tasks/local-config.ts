/**
 * `weft.config.json`, the local runtime's configuration of task types: where custom tasks live,
 * which local module plays each Lambda function, and the values of the secrets `http` headers refer
 * to. Relative paths are resolved against the file's folder.
 *
 *   { "tasksDir": "./tasks", "lambdaModules": { "load": "./lambdas/load.ts#handler" },
 *     "secrets": { "ssm:/weft/api-token": "Bearer local-token" } }
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { localEgressPolicy } from "../config/egress.js";
import * as z from "../domain/zod.js";
import { LocalModuleInvoker } from "./lambda-local.js";
import type { TaskRegistryOptions } from "./loader.js";
import { MapSecretStore } from "./secrets.js";

export const DEFAULT_LOCAL_CONFIG_FILE = "weft.config.json";

export const localConfigSchema = z.strictObject({
  /** Folder of custom task modules. */
  tasksDir: z.optional(z.string().check(z.minLength(1, "tasksDir must not be empty"))),
  /** Lambda function name → `path/to/module.ts#exportName` (export defaults to `handler`). */
  lambdaModules: z.optional(
    z.record(
      z.string().check(z.minLength(1, "a function name must not be empty")),
      z
        .string()
        .check(
          z.regex(
            /^[^#]+(#[A-Za-z_$][\w$]*)?$/,
            'must be "path/to/module.ts" or "path/to/module.ts#exportName"',
          ),
        ),
    ),
  ),
  /**
   * Secret name (as a header's `{"secret": …}` names it) → its value, for `npm start`. Names not
   * listed are read from Secrets Manager / SSM when the runtime has an AWS endpoint (moto, LocalStack).
   */
  secrets: z.optional(
    z.record(z.string().check(z.minLength(1, "a secret name must not be empty")), z.string()),
  ),
});

export type LocalConfigFile = z.output<typeof localConfigSchema>;

export interface LocalConfig extends LocalConfigFile {
  /** The config file, absolute (messages name it). */
  file?: string;
  /** The folder holding the config file; relative paths in it are resolved against this. */
  baseDir: string;
  /** `tasksDir` made absolute. */
  tasksDir?: string;
}

/** Reads and validates a config file; every error names the file and lists every problem. */
export async function loadLocalConfig(file: string): Promise<LocalConfig> {
  const absolute = path.resolve(file);
  let text: string;
  try {
    text = await readFile(absolute, "utf8");
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    throw new Error(
      code === "ENOENT"
        ? `weft config file ${absolute} does not exist`
        : `weft config file ${absolute} cannot be read: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new Error(
      `weft config file ${absolute} is not valid JSON: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  const parsed = localConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const where = issue.path.length > 0 ? issue.path.map(String).join(".") : "(top level)";
      const message =
        issue.code === "unrecognized_keys" ? `unknown field(s) ${issue.keys.join(", ")}` : issue.message;
      return `${where}: ${message}`;
    });
    throw new Error(`weft config file ${absolute} is invalid: ${problems.join("; ")}`);
  }
  const baseDir = path.dirname(absolute);
  const { tasksDir, ...rest } = parsed.data;
  return {
    ...rest,
    file: absolute,
    baseDir,
    ...(tasksDir === undefined ? {} : { tasksDir: path.resolve(baseDir, tasksDir) }),
  };
}

/** Where the local runtime's `http` nodes look for secrets first. */
export const LOCAL_SECRETS_DESCRIPTION = "weft.config.json secrets";

/** The task registry options of the local runtime's configuration. */
export type LocalTaskOptions = Pick<TaskRegistryOptions, "customTasksDir" | "lambda" | "http">;

/**
 * The task registry options the local runtime builds from its config: custom tasks, local Lambdas
 * (always: a function the config does not map fails its node saying so, rather than the `lambda`
 * type being unknown), and for `http` the local egress policy (loopback allowed unless
 * WEFT_HTTP_ALLOW in `env` says otherwise) and the config's secrets.
 */
export function localTaskOptions(
  config: LocalConfig,
  env: Record<string, string | undefined> = process.env,
): LocalTaskOptions {
  return {
    ...(config.tasksDir === undefined ? {} : { customTasksDir: config.tasksDir }),
    lambda: new LocalModuleInvoker(
      config.lambdaModules ?? {},
      config.baseDir,
      config.file ?? path.join(config.baseDir, DEFAULT_LOCAL_CONFIG_FILE),
    ),
    http: {
      egress: localEgressPolicy(env),
      ...(config.secrets === undefined
        ? {}
        : { secrets: new MapSecretStore(config.secrets, LOCAL_SECRETS_DESCRIPTION) }),
    },
  };
}
