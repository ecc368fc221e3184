/**
 * The construct's `tasks` folder: the entry each function is bundled from imports every task module
 * of the folder — the same files the local runtime loads — so the folder is the one list of task
 * types (a file added is deployed at the next synth, with nothing to regenerate).
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { App, Stack } from "aws-cdk-lib";
import { afterAll, describe, expect, it } from "vitest";
import {
  assertEsbuildInstalled,
  findProjectRoot,
  handlerFactory,
  renderFunctionEntry,
  taskModuleFilesOf,
  writeFunctionEntry,
} from "../../infra/lib/function-entry.js";
import { REPO_ROOT } from "../../infra/lib/functions.js";
import { WeftOrchestrator } from "../../infra/lib/weft-orchestrator.js";
import { loadTaskModules } from "../../shared/tasks/loader.js";

const scratch = mkdtempSync(path.join(tmpdir(), "weft-entry-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("the functions' generated entries", () => {
  it("import every task module of the folder that the local runtime loads, and nothing else", async () => {
    const tasksDir = path.join(REPO_ROOT, "tasks");
    const files = taskModuleFilesOf(tasksDir);
    expect(files.length).toBeGreaterThan(0);
    // The local runtime loads the same folder: its task types are what the bundle gets.
    expect((await loadTaskModules(tasksDir)).length).toBeGreaterThan(0);
    const entry = renderFunctionEntry("worker", files);
    for (const file of files) expect(entry).toContain(JSON.stringify(file.split(path.sep).join("/")));
    expect(entry).toContain(JSON.stringify(handlerFactory("worker").split(path.sep).join("/")));
    expect(existsSync(handlerFactory("worker"))).toBe(true);
  });

  it("follow the folder: a new file is in the next entry; tests and declarations never are", () => {
    const dir = path.join(scratch, "tasks");
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, "a.ts"), "export {};\n");
    expect(taskModuleFilesOf(dir).map((file) => path.basename(file))).toEqual(["a.ts"]);
    for (const name of ["b.mjs", "a.test.ts", "a.spec.js", "types.d.ts", ".hidden.ts", "notes.md"])
      writeFileSync(path.join(dir, name), "export {};\n");
    expect(taskModuleFilesOf(dir).map((file) => path.basename(file))).toEqual(["a.ts", "b.mjs"]);
  });

  it("are written under the project's node_modules/.cache, one folder per construct", () => {
    const project = path.join(scratch, "project");
    mkdirSync(project, { recursive: true });
    writeFileSync(path.join(project, "package-lock.json"), "{}");
    const nested = path.join(project, "src", "infra");
    mkdirSync(nested, { recursive: true });
    const found = findProjectRoot(nested);
    expect(found).toEqual({ projectRoot: project, lockFile: path.join(project, "package-lock.json") });
    const one = writeFunctionEntry({ kind: "api", projectRoot: project, scopePath: "S/Weft", taskFiles: [] });
    const two = writeFunctionEntry({
      kind: "api",
      projectRoot: project,
      scopePath: "S/Other",
      taskFiles: [],
    });
    expect(one.startsWith(path.join(project, "node_modules", ".cache", "weft"))).toBe(true);
    expect(path.dirname(one)).not.toBe(path.dirname(two));
    expect(readFileSync(one, "utf8")).toContain("export const handler = lambdaHandler([])");
    expect(readdirSync(path.dirname(one))).toEqual(["api.mjs"]);
  });

  it("refuse a tasks folder that does not exist, naming it, before anything is bundled", () => {
    const stack = new Stack(new App(), "Missing");
    const missing = path.join(scratch, "no-such-folder");
    expect(() => new WeftOrchestrator(stack, "Weft", { tasks: missing })).toThrow(missing);
  });

  it("refuse a project without esbuild, saying to install it (rather than falling back to Docker)", () => {
    const project = path.join(scratch, "no-esbuild");
    mkdirSync(project, { recursive: true });
    writeFileSync(path.join(project, "package-lock.json"), "{}");
    writeFileSync(path.join(project, "package.json"), "{}");
    expect(() => assertEsbuildInstalled(project)).toThrow(/npm install --save-dev esbuild/);
    expect(() => assertEsbuildInstalled(REPO_ROOT)).not.toThrow();
  });

  it("refuse a project without a lock file, saying to install first", () => {
    const bare = path.join(scratch, "bare");
    mkdirSync(bare, { recursive: true });
    // Only a folder with no lock file above it at all can show this; tmpdir() has none.
    expect(() => findProjectRoot(bare)).toThrow(/no lock file/);
  });
});
