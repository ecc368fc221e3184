/**
 * `weft validate` (the compiled CLI) in a project folder checks against exactly the task types
 * `weft dev` / `npm start` load there (shared/tasks/project-tasks.ts): the project's tasks/ without
 * any flag, lambda always, weft.config.json's tasksDir when it points elsewhere, `--config FILE` as
 * `weft dev --config FILE` takes it. And what `weft dev` lists, validate knows.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { PATIENT, waitForProgress } from "../support/progress.js";
import { repoRoot, weft } from "./support.js";

// Inside this repository (in .weft/, which git ignores), so that the tasks' imports (zod) resolve
// from its node_modules as in a project of one's own.
const projectsDir = path.join(repoRoot, ".weft", "test-projects");
const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

const defineTaskModule = path.join(repoRoot, "shared/tasks/task-type.ts").split(path.sep).join("/");
/** A TypeScript task file whose params must be `{ text: string }`. */
const taskFile = (type: string) => `import { z } from "zod";
import { defineTask } from "${defineTaskModule}";

export const task = defineTask({
  type: ${JSON.stringify(type)},
  params: z.object({ text: z.string() }).strict(),
  run: ({ params }) => params.text.toUpperCase(),
});
`;

/** A project folder of these files (and a package.json making its .ts files ES modules). */
function project(files: Record<string, string>): string {
  mkdirSync(projectsDir, { recursive: true });
  const dir = mkdtempSync(path.join(projectsDir, "validate-"));
  made.push(dir);
  for (const [name, text] of Object.entries({ "package.json": '{ "type": "module" }', ...files })) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

const workflow = (nodes: Array<{ type: string; params?: unknown }>) =>
  JSON.stringify({ name: "w", nodes: nodes.map((node, i) => ({ id: `n${i}`, ...node })) });

describe("weft validate in a project", () => {
  it("knows the project's tasks/ and lambda with no flag and no config file", async () => {
    const cwd = project({
      "tasks/shout.ts": taskFile("shout"),
      "good.json": workflow([
        { type: "shout", params: { text: "hi" } },
        { type: "lambda", params: { functionName: "score-lead" } },
      ]),
      "bad.json": workflow([{ type: "shout", params: { text: 1 } }, { type: "nope" }]),
    });
    const good = await weft(["validate", "good.json"], { cwd });
    expect(good.stderr).toBe("");
    expect(good.stdout).toMatch(/^good\.json: valid — workflow "w", 2 node\(s\)/);
    expect(good.code).toBe(0);

    // The folder's own schema checks the params; a type nowhere is still unknown.
    const bad = await weft(["validate", "bad.json"], { cwd });
    expect(bad.code).toBe(1);
    expect(bad.stdout).toMatch(/^ {2}nodes\[0\]\.params\.text +invalid_params /m);
    expect(bad.stdout).toMatch(/^ {2}nodes\[1\]\.type +unknown_task_type /m);
  });

  it("follows weft.config.json's tasksDir, and --config FILE as weft dev --config does", async () => {
    const cwd = project({
      "tasks/shout.ts": taskFile("shout"),
      "src/tasks/whisper.ts": taskFile("whisper"),
      "weft.config.json": JSON.stringify({ tasksDir: "./src/tasks" }),
      "conf/shouting.json": JSON.stringify({ tasksDir: "../tasks" }),
      "whisper.json": workflow([{ type: "whisper", params: { text: "hi" } }]),
      "shout.json": workflow([{ type: "shout", params: { text: "hi" } }]),
    });
    expect((await weft(["validate", "whisper.json"], { cwd })).code).toBe(0);
    const shout = await weft(["validate", "shout.json"], { cwd });
    expect(shout.code).toBe(1);
    expect(shout.stdout).toMatch(/^ {2}nodes\[0\]\.type +unknown_task_type /m);

    expect((await weft(["validate", "shout.json", "--config", "conf/shouting.json"], { cwd })).code).toBe(0);
    expect((await weft(["validate", "whisper.json", "--config", "conf/shouting.json"], { cwd })).code).toBe(
      1,
    );

    const missing = await weft(["validate", "shout.json", "--config", "nowhere.json"], { cwd });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`weft config file ${path.join(cwd, "nowhere.json")} does not exist`);
  });
});

describe("weft validate and weft dev", PATIENT, () => {
  let dev: ChildProcess | undefined;
  afterEach(async () => {
    if (dev !== undefined && dev.exitCode === null && dev.signalCode === null) {
      const exited = new Promise((resolve) => dev?.once("close", resolve));
      dev.kill("SIGKILL");
      await exited;
    }
  });

  it("validate knows every task type weft dev loads in the same folder", async () => {
    const cwd = project({ "tasks/shout.ts": taskFile("shout") });
    dev = spawn(
      process.execPath,
      [path.join(repoRoot, "bin/weft.js"), "dev", "--port", "0", "--sweep-interval", "0"],
      { cwd, env: { ...process.env, NO_COLOR: "1" }, stdio: ["ignore", "pipe", "pipe"] },
    );
    let output = "";
    dev.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      output += chunk;
    });
    dev.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
      output += chunk;
    });
    const loaded = await waitForProgress("weft dev to list its task types", async () => {
      const line = /weft: task types ([\w., -]+?)(?: \(|\n)/.exec(output)?.[1];
      if (line !== undefined) return { done: true, value: line.split(", ") };
      if (dev?.exitCode !== null) throw new Error(`weft dev exited:\n${output}`);
      return { done: false, progress: output.length, state: output };
    });
    expect(loaded).toEqual(expect.arrayContaining(["shout", "lambda", "emit", "http"]));

    // One node of every type it loaded (params aside): none is unknown to validate.
    writeFileSync(
      path.join(cwd, "every.json"),
      workflow([...loaded.map((type) => ({ type })), { type: "not-loaded" }]),
    );
    const result = await weft(["validate", "every.json", "--json"], { cwd });
    const { problems } = JSON.parse(result.stdout) as { problems: Array<{ path: string; code: string }> };
    expect(problems.filter((problem) => problem.code === "unknown_task_type")).toEqual([
      expect.objectContaining({ path: `nodes[${loaded.length}].type` }),
    ]);
  });
});
