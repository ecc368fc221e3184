/**
 * Building the web console (a Vite single-page app, console/src) into console/dist, which the local
 * runtime serves at `/` and `weft console` serves beside its signing proxy.
 *
 *   npm run build:console      build it (always)
 *
 * `npm start`, `weft console` and the test setup call ensureConsoleBuilt(): a build when
 * console/dist is missing or older than the console's sources, nothing otherwise. The build runs
 * Vite in a child process (`vite build console`), so nothing of it stays in the caller.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const CONSOLE_ROOT = path.dirname(fileURLToPath(import.meta.url));
export const CONSOLE_DIST = path.join(CONSOLE_ROOT, "dist");
const INDEX = path.join(CONSOLE_DIST, "index.html");

/** What the bundle is made of: a change to any of them makes a build stale. */
const SOURCES = [
  path.join(CONSOLE_ROOT, "index.html"),
  path.join(CONSOLE_ROOT, "vite.config.ts"),
  path.join(CONSOLE_ROOT, "src"),
  // Copied as they are (the favicon: a file, as the console's Content-Security-Policy wants).
  path.join(CONSOLE_ROOT, "public"),
  // The console calls the API by the contract's route names (bundled from here).
  path.join(CONSOLE_ROOT, "..", "shared", "http", "contract.ts"),
];

/** The latest modification time under `entry` (a file, or a folder walked whole); 0 when missing. */
export async function newestChange(entry: string): Promise<number> {
  const info = await stat(entry).catch(() => undefined);
  if (info === undefined) return 0;
  if (!info.isDirectory()) return info.mtimeMs;
  const children = await readdir(entry);
  const times = await Promise.all(children.map((child) => newestChange(path.join(entry, child))));
  return Math.max(info.mtimeMs, ...times);
}

export type ConsoleBuildState = "missing" | "stale" | "fresh";

export async function consoleBuildState(): Promise<ConsoleBuildState> {
  const built = await stat(INDEX).catch(() => undefined);
  if (built === undefined) return "missing";
  const sources = await Promise.all(SOURCES.map(newestChange));
  return Math.max(...sources) > built.mtimeMs ? "stale" : "fresh";
}

/** `vite build console`, in a child process; rejects with Vite's output when it fails. */
export function buildConsole(options: { quiet?: boolean } = {}): Promise<void> {
  const require = createRequire(import.meta.url);
  const viteBin = path.join(path.dirname(require.resolve("vite/package.json")), "bin", "vite.js");
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [viteBin, "build", CONSOLE_ROOT, "--config", path.join(CONSOLE_ROOT, "vite.config.ts")],
      { cwd: CONSOLE_ROOT, stdio: options.quiet ? ["ignore", "pipe", "pipe"] : "inherit" },
    );
    let output = "";
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      output += chunk;
    });
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
      output += chunk;
    });
    child.once("error", reject);
    child.once("close", (code) => {
      if (code === 0) resolve();
      else reject(new Error(`the console's build (vite build) failed with exit code ${code}\n${output}`));
    });
  });
}

/**
 * Builds the console when console/dist is missing or stale. "unavailable": it could not be built
 * (Vite not installed, e.g. after `npm ci --omit=dev`); `onNote` says why, and the API still runs.
 */
export async function ensureConsoleBuilt(
  onNote: (message: string) => void = () => {},
): Promise<"fresh" | "built" | "unavailable"> {
  const state = await consoleBuildState();
  if (state === "fresh") return "fresh";
  onNote(
    state === "missing"
      ? "building the web console (console/dist is missing)…"
      : "rebuilding the web console (its sources changed)…",
  );
  try {
    await buildConsole({ quiet: true });
    return "built";
  } catch (error) {
    onNote(`the web console could not be built: ${error instanceof Error ? error.message : String(error)}`);
    return existsSync(INDEX) ? "fresh" : "unavailable";
  }
}

const isEntry =
  process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isEntry) {
  await buildConsole();
}
