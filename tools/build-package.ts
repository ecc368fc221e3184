/**
 * `npm run build`: the package as it is published. TypeScript compiles what the package ships to
 * dist/ (JavaScript, declarations, source maps: tsconfig.build.json), and the web console's built
 * files go beside the compiled console module (dist/console/dist), where the local runtime looks for
 * them. dist/ is made afresh, so no file of a deleted source lingers in the package.
 */
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, rmSync, writeFileSync } from "node:fs";
import { stat } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { CONSOLE_DIST, CONSOLE_ROOT, ensureConsoleBuilt, newestChange } from "../console/build.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const DIST = path.join(ROOT, "dist");
/** Written last: dist/ is complete when it exists, and as new as its time. */
const STAMP = path.join(DIST, ".built");

/** What dist/ is made of (tsconfig.build.json's sources, the console's, the build's own settings). */
const SOURCES = [
  ...["shared", "functions", "local", "infra/lib", "cli", "sdk", "testkit"].map((dir) =>
    path.join(ROOT, dir),
  ),
  path.join(CONSOLE_ROOT, "build.ts"),
  path.join(CONSOLE_ROOT, "src"),
  path.join(CONSOLE_ROOT, "index.html"),
  path.join(CONSOLE_ROOT, "public"),
  path.join(ROOT, "tsconfig.build.json"),
  path.join(ROOT, "tsconfig.json"),
];

/** True when dist/ is complete and newer than every source. */
export async function packageBuildIsFresh(): Promise<boolean> {
  const built = await stat(STAMP).catch(() => undefined);
  if (built === undefined) return false;
  const sources = await Promise.all(SOURCES.map(newestChange));
  return Math.max(...sources) <= built.mtimeMs;
}

/** Builds dist/ afresh (see the top of this file). */
export async function buildPackage(log: (line: string) => void = console.log): Promise<void> {
  rmSync(DIST, { recursive: true, force: true });
  // typescript exports only its package.json and API: its bin is found beside that.
  const typescript = path.dirname(createRequire(import.meta.url).resolve("typescript/package.json"));
  const compiled = spawnSync(
    process.execPath,
    [path.join(typescript, "bin", "tsc"), "-p", path.join(ROOT, "tsconfig.build.json")],
    { stdio: "inherit" },
  );
  if (compiled.status !== 0) throw new Error("weft build: tsc failed");
  if ((await ensureConsoleBuilt((message) => log(`weft build: ${message}`))) === "unavailable")
    throw new Error("weft build: the web console could not be built");
  cpSync(CONSOLE_DIST, path.join(DIST, "console", "dist"), { recursive: true });
  writeFileSync(STAMP, `${new Date().toISOString()}\n`);
  log(`weft build: ${path.relative(ROOT, DIST)}/ ready`);
}

/** Builds dist/ unless it is fresh: the tests and the benchmark run the built CLI. */
export async function ensurePackageBuilt(log: (line: string) => void = () => {}): Promise<void> {
  if (!existsSync(STAMP) || !(await packageBuildIsFresh())) await buildPackage(log);
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await buildPackage().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
