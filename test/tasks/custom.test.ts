/**
 * Custom task types: one file in the `tasks/` folder, loaded by loadTaskModules, run by the real
 * engine, and its params schema checked at submit. The folder may hold any task files (a user adds
 * them as the README says): the tests check that what the functions bundle follows the folder, not a list.
 */
import { cp, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { renderFunctionEntry, taskModuleFilesOf } from "../../infra/lib/function-entry.js";
import { WeftError } from "../../shared/domain/errors.js";
import {
  buildTaskRegistry,
  collectTaskTypes,
  createFullTaskRegistry,
  isTaskType,
  loadTaskModules,
} from "../../shared/tasks/loader.js";
import { isTaskModuleFile } from "../../shared/tasks/task-files.js";
import { defineTask } from "../../shared/tasks/task-type.js";
import { type Backend, createBackend } from "../support/backends.js";
import { runWorkflow } from "./helpers.js";

const tasksDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../tasks");

let backend: Backend | undefined;
let scratch: string | undefined;
afterEach(async () => {
  await backend?.cleanup();
  backend = undefined;
  if (scratch) await rm(scratch, { recursive: true, force: true });
  scratch = undefined;
});

/** A folder of plain ES modules (a stand-in zod schema keeps them free of imports). */
async function folder(files: Record<string, string>): Promise<string> {
  scratch = await mkdtemp(path.join(tmpdir(), "weft-tasks-"));
  for (const [name, text] of Object.entries(files)) await writeFile(path.join(scratch, name), text);
  return scratch;
}
const taskSource = (type: string, name = "task") =>
  `export const ${name} = { type: ${JSON.stringify(type)}, params: { parse: (v) => v, safeParse: (v) => ({ success: true, data: v }) }, run: () => ${JSON.stringify(type)} };\n`;

describe("custom task types from the tasks/ folder", () => {
  it("loads the example task from its file and runs it in a workflow", async () => {
    const tasks = await loadTaskModules(tasksDir);
    // Not a fixed list: adding a task file, as the README says, must not break this test.
    expect(tasks.map((t) => t.type)).toContain("uppercase");

    backend = await createBackend("memory", { tasks });
    const run = await runWorkflow(
      backend,
      {
        name: "custom-run",
        nodes: [
          { id: "given", type: "uppercase", params: { text: "weft", suffix: "!" } },
          { id: "from-input", type: "uppercase", params: {} },
        ],
      },
      { text: "from input" },
    );
    expect(run.view.status).toBe("SUCCEEDED");
    expect(run.view.output).toEqual({ given: { text: "WEFT!" }, "from-input": { text: "FROM INPUT" } });
  });

  it("checks its params against its schema at submit", async () => {
    backend = await createBackend("memory", { tasks: await loadTaskModules(tasksDir) });
    const error = await backend.engine
      .registerWorkflow({
        name: "custom-bad",
        nodes: [
          { id: "a", type: "uppercase", params: { text: 42 } },
          { id: "b", type: "uppercase", params: { text: "ok", loud: true } },
        ],
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WeftError);
    expect(error).toMatchObject({ code: "InvalidDefinition" });
    const details = (error as WeftError).details;
    expect(details).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ code: "invalid_params", path: "nodes[0].params.text" }),
        expect.objectContaining({ code: "invalid_params", path: "nodes[1].params.loud" }),
      ]),
    );
    // Nothing was stored.
    await expect(backend.engine.getWorkflow("custom-bad")).rejects.toMatchObject({ code: "NotFound" });
  });

  it("builds the registry: built-ins, http, and the custom folder (lambda and emit only when configured)", async () => {
    const registry = await buildTaskRegistry({ customTasksDir: tasksDir });
    expect(registry.names()).toEqual(
      expect.arrayContaining(["noop", "pass", "sleep", "fail", "merge", "wait", "http", "uppercase"]),
    );
    expect(registry.has("lambda")).toBe(false);
    expect(registry.has("emit")).toBe(false);

    const extra = defineTask({ type: "extra", params: z.object({}).strict(), run: () => 1 });
    expect((await buildTaskRegistry({ customTasks: [extra] })).get("extra")).toBe(extra);
    await expect(
      buildTaskRegistry({ customTasks: [defineTask({ type: "http", params: z.unknown(), run: () => 1 })] }),
    ).rejects.toThrow(/custom task type "http" \(from customTasks\) clashes/);
    await expect(buildTaskRegistry({ events: { send: async () => undefined } })).rejects.toThrow(
      /lifecycleBusName/,
    );
  });
});

describe("what the deployed functions bundle from tasks/ (the construct's generated entry)", () => {
  it("imports every task module of the folder, whatever files it holds: no list to keep up to date", async () => {
    const files = (await readdir(tasksDir)).filter(isTaskModuleFile).sort();
    const entry = renderFunctionEntry("worker", taskModuleFilesOf(tasksDir));
    for (const name of files) expect(entry).toContain(`${JSON.stringify(name)}`);
    expect(entry.match(/^import \* as m\d+ from/gm)).toHaveLength(files.length);
  });

  it("takes a file added to the folder at the next synth, with nothing to regenerate", async () => {
    scratch = await mkdtemp(path.join(tmpdir(), "weft-task-entry-"));
    const copy = path.join(scratch, "tasks");
    await cp(tasksDir, copy, { recursive: true });
    await writeFile(path.join(copy, "zz-added.ts"), taskSource("added"));
    const entry = renderFunctionEntry("api", taskModuleFilesOf(copy));
    for (const name of [...(await readdir(tasksDir)).filter(isTaskModuleFile), "zz-added.ts"])
      expect(entry).toContain(JSON.stringify(path.join(copy, name).split(path.sep).join("/")));
    // The local runtime, reading a folder by the same rule, knows it too.
    await rm(path.join(copy, "uppercase.ts"));
    expect((await loadTaskModules(copy)).map((t) => t.type)).toEqual(["added"]);
  });

  it("yields the same task types as reading the folder", async () => {
    const modules = await Promise.all(
      taskModuleFilesOf(tasksDir).map(async (file) => ({
        source: path.basename(file),
        exports: (await import(file)) as Record<string, unknown>,
      })),
    );
    const bundled = collectTaskTypes(modules);
    expect(bundled.map((t) => t.type)).toEqual((await loadTaskModules(tasksDir)).map((t) => t.type));
    const registry = createFullTaskRegistry({ customTasks: bundled });
    expect(registry.has("uppercase")).toBe(true);
    expect(registry.has("http")).toBe(true);
  });
});

describe("loadTaskModules", () => {
  it("reads *.ts, *.js and *.mjs files in name order, ignoring others and counting a re-exported task once", async () => {
    const dir = await folder({
      "b.mjs": taskSource("bee"),
      "a.js": `${taskSource("ay")}export default task;\nexport const notATask = { type: "x" };\n`,
      "index.mjs": `export { task as bee } from "./b.mjs";\n`,
      "readme.md": "not code",
      "types.d.ts": "export {};",
    });
    const tasks = await loadTaskModules(dir);
    expect(tasks.map((t) => t.type)).toEqual(["ay", "bee"]);
  });

  it("names the file when a module fails to import", async () => {
    const dir = await folder({
      "ok.mjs": taskSource("ok"),
      "broken.mjs": "throw new Error('boom at load');\n",
    });
    await expect(loadTaskModules(dir)).rejects.toThrow(
      `custom task module ${path.join(dir, "broken.mjs")} failed to load: boom at load`,
    );
  });

  it("names both files when two tasks share a type", async () => {
    const dir = await folder({ "one.mjs": taskSource("same"), "two.mjs": taskSource("same", "other") });
    await expect(loadTaskModules(dir)).rejects.toThrow(
      `task type "same" is defined twice: in ${path.join(dir, "one.mjs")} and in ${path.join(dir, "two.mjs")} (export "other")`,
    );
  });

  it("names a folder that cannot be read", async () => {
    await expect(loadTaskModules("/nonexistent/tasks")).rejects.toThrow(
      /custom tasks folder \/nonexistent\/tasks cannot be read/,
    );
  });

  it("recognises task types by shape", () => {
    const task = defineTask({ type: "t", params: z.object({}), run: () => null });
    expect(isTaskType(task)).toBe(true);
    expect(isTaskType({ type: "t", params: {}, run: () => null })).toBe(false);
    expect(isTaskType({ type: "", params: z.object({}), run: () => null })).toBe(false);
    expect(isTaskType({ type: "t", params: z.object({}), run: "no" })).toBe(false);
    expect(isTaskType(null)).toBe(false);
  });
});
