/** Runs the real `weft` binary as a child process, and a local runtime with every example's task types. */
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type LocalRuntime, type LocalRuntimeOptions, startLocalRuntime } from "../../local/runtime.js";
import { buildTaskRegistry } from "../../shared/tasks/loader.js";
import { loadLocalConfig, localTaskOptions } from "../../shared/tasks/local-config.js";

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const examplesDir = path.join(repoRoot, "examples");

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface WeftOptions {
  env?: Record<string, string>;
  /** Sees the standard output so far each time more arrives. */
  onStdout?: (stdout: string) => void;
  /** Where it runs (default the repository root). */
  cwd?: string;
}

/** `node bin/weft.js ARGS` from the repository root, never on a TTY, with a clean weft environment. */
export function weft(args: string[], options: WeftOptions = {}): Promise<CliResult> {
  return spawnWeft(args, options).result;
}

/** A `weft` process still running: what it printed so far, and how it ended once it has. */
export interface WeftProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  result: Promise<CliResult>;
}

/** weft(), with the process in hand (to send it signals). */
export function spawnWeft(args: string[], options: WeftOptions = {}): WeftProcess {
  const env: Record<string, string | undefined> = { ...process.env, ...options.env };
  delete env.WEFT_API_URL;
  env.NO_COLOR ??= "1";
  const child = spawn(process.execPath, [path.join(repoRoot, "bin/weft.js"), ...args], {
    cwd: options.cwd ?? repoRoot,
    env,
    stdio: ["ignore", "pipe", "pipe"],
    timeout: 30_000,
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
    options.onStdout?.(stdout);
  });
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  const result = new Promise<CliResult>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
  return { child, stdout: () => stdout, stderr: () => stderr, result };
}

/**
 * The in-memory local runtime with the built-ins, http, and the example's local Lambda modules
 * (`options` for more, e.g. `wrapPorts` to watch the engine's calls).
 */
export async function startExampleRuntime(
  options: Pick<LocalRuntimeOptions, "wrapPorts"> = {},
): Promise<LocalRuntime> {
  const config = await loadLocalConfig(path.join(examplesDir, "http-and-lambda/weft.config.json"));
  const tasks = await buildTaskRegistry(localTaskOptions(config));
  return startLocalRuntime({
    backend: "memory",
    port: 0,
    waitSeconds: 0,
    onError: () => {},
    env: {},
    tasks,
    ...options,
  });
}
