/**
 * projectTaskOptions: the one lookup of a project's task types that `npm start` / `weft dev` and
 * `weft validate` share — weft.config.json (or `--config FILE`), else ./tasks — with the `lambda`
 * task type always there, failing a node whose function no module plays with a message that says
 * where to map it.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { TerminalError } from "../../shared/tasks/errors.js";
import { buildTaskRegistry } from "../../shared/tasks/loader.js";
import { projectConfigFile, projectTaskOptions } from "../../shared/tasks/project-tasks.js";

const lambdaFixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../fixtures/lambdas");

let scratch: string | undefined;
afterEach(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
  scratch = undefined;
});

/** A project folder of the given files (plain ES modules: a stand-in zod schema keeps them import-free). */
async function project(files: Record<string, string>): Promise<string> {
  scratch = await mkdtemp(path.join(tmpdir(), "weft-project-"));
  for (const [name, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(scratch, name)), { recursive: true });
    await writeFile(path.join(scratch, name), text);
  }
  return scratch;
}
const taskSource = (type: string) =>
  `export const task = { type: ${JSON.stringify(type)}, params: { parse: (v) => v, safeParse: (v) => ({ success: true, data: v }) }, run: () => ${JSON.stringify(type)} };\n`;

async function registryOf(cwd: string, configFile?: string) {
  return buildTaskRegistry(
    await projectTaskOptions({ cwd, env: {}, ...(configFile === undefined ? {} : { configFile }) }),
  );
}

const never = new AbortController().signal;

describe("projectTaskOptions", () => {
  it("without a config file: the tasks/ folder, and lambda with no function mapped", async () => {
    const cwd = await project({ "tasks/shout.mjs": taskSource("shout") });
    const options = await projectTaskOptions({ cwd, env: {} });
    expect(options.customTasksDir).toBe(path.join(cwd, "tasks"));
    const registry = await buildTaskRegistry(options);
    expect(registry.names()).toEqual(expect.arrayContaining(["shout", "lambda", "http", "sleep"]));

    const call = options.lambda?.invoke("score-lead", undefined, {}, never);
    await expect(call).rejects.toBeInstanceOf(TerminalError);
    await expect(call).rejects.toThrow(
      `no local module is mapped for Lambda function "score-lead": locally a module plays each function — add it to "lambdaModules" in ${path.join(cwd, "weft.config.json")}`,
    );
  });

  it("without a config file or a tasks/ folder: the built-in task types, lambda among them", async () => {
    const cwd = await project({ "tasks.txt": "not a folder" });
    const options = await projectTaskOptions({ cwd, env: {} });
    expect(options.customTasksDir).toBeUndefined();
    expect((await buildTaskRegistry(options)).has("lambda")).toBe(true);
  });

  it("weft.config.json decides where the custom tasks are, and maps the functions", async () => {
    const cwd = await project({
      "tasks/shout.mjs": taskSource("shout"),
      "src/tasks/whisper.mjs": taskSource("whisper"),
      "weft.config.json": JSON.stringify({
        tasksDir: "./src/tasks",
        lambdaModules: { echo: `${path.join(lambdaFixtures, "handlers.ts")}#echo` },
      }),
    });
    expect(projectConfigFile({ cwd })).toBe(path.join(cwd, "weft.config.json"));
    const options = await projectTaskOptions({ cwd, env: {} });
    const registry = await buildTaskRegistry(options);
    expect(registry.has("whisper")).toBe(true);
    expect(registry.has("shout")).toBe(false);
    const echoed = await options.lambda?.invoke("echo", undefined, { hello: 1 }, never);
    expect(echoed?.payload).toMatchObject({ received: { hello: 1 }, functionName: "echo" });
    await expect(options.lambda?.invoke("other", undefined, {}, never)).rejects.toThrow(
      /add it to "lambdaModules" in .*weft\.config\.json, e\.g\. "lambdaModules": \{"other":"\.\/lambdas\/other\.ts#handler"\} \(it maps "echo"\)/,
    );
  });

  it("--config FILE (relative to the project) wins over weft.config.json", async () => {
    const cwd = await project({
      "weft.config.json": JSON.stringify({ tasksDir: "./tasks" }),
      "tasks/shout.mjs": taskSource("shout"),
      "conf/other.json": JSON.stringify({ tasksDir: "../src/tasks" }),
      "src/tasks/whisper.mjs": taskSource("whisper"),
    });
    const registry = await registryOf(cwd, "conf/other.json");
    expect(registry.has("whisper")).toBe(true);
    expect(registry.has("shout")).toBe(false);
    expect((await registryOf(cwd)).has("shout")).toBe(true);
  });

  it("a --config FILE that does not exist is an error naming it", async () => {
    const cwd = await project({ "tasks/shout.mjs": taskSource("shout") });
    await expect(projectTaskOptions({ cwd, configFile: "missing.json" })).rejects.toThrow(
      `weft config file ${path.join(cwd, "missing.json")} does not exist`,
    );
  });
});
