/**
 * `weft dev` as a process (the compiled CLI, bin/weft.js) in a project folder of TypeScript task
 * files: it loads them without tsx on the command line, and a change to the folder — to a task or to
 * a helper module it imports — is what the next run executes. A folder that fails to load keeps the
 * previous task types.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PATIENT_TEST_TIMEOUT_MS, waitForProgress } from "../support/progress.js";
import { apiClient } from "../support/runtime.js";
import { repoRoot } from "./support.js";

let project: string;
let dev: ChildProcess;
let output = "";
let url: string;

const shoutTask = `import { z } from "zod";
import { defineTask } from "${path.join(repoRoot, "shared/tasks/task-type.ts").split(path.sep).join("/")}";
import { decorate } from "./decorate.js";

export const shout = defineTask({
  type: "shout",
  params: z.object({}).strict().optional(),
  run: ({ input }) => ({ text: decorate(String((input as { text?: unknown }).text).toUpperCase()) }),
});
`;
const decorate = (suffix: string) =>
  `export const decorate = (text: string): string => text + ${JSON.stringify(suffix)};\n`;

/** Waits until `weft dev` has printed `text` `times` times in all. */
function printed(text: string, times = 1): Promise<void> {
  return waitForProgress(`weft dev to print "${text}"`, async () => {
    if (output.split(text).length - 1 >= times) return { done: true, value: undefined };
    if (dev.exitCode !== null) throw new Error(`weft dev exited ${dev.exitCode}:\n${output}`);
    return { done: false, progress: output.length, state: output };
  });
}

async function shoutOnce(text: string): Promise<unknown> {
  const api = apiClient(url);
  const started = await api.call("POST", "/executions", { workflow: "shouting", input: { text } });
  expect(started.status).toBe(202);
  const ended = await api.waitForEnd(started.body.executionId);
  expect(ended.status).toBe("SUCCEEDED");
  return ended.output;
}

beforeAll(async () => {
  // Inside this repository (in .weft/, which git ignores), so that the task's imports (zod) resolve
  // from its node_modules as in a project of one's own.
  const projects = path.join(repoRoot, ".weft", "test-projects");
  mkdirSync(projects, { recursive: true });
  project = mkdtempSync(path.join(projects, "dev-"));
  mkdirSync(path.join(project, "tasks"));
  writeFileSync(path.join(project, "package.json"), JSON.stringify({ type: "module" }));
  writeFileSync(path.join(project, "tasks", "shout.ts"), shoutTask);
  writeFileSync(path.join(project, "tasks", "decorate.ts"), decorate("!"));
  dev = spawn(
    process.execPath,
    [path.join(repoRoot, "bin/weft.js"), "dev", "--port", "0", "--sweep-interval", "0"],
    {
      cwd: project,
      env: { ...process.env, NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  dev.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    output += chunk;
  });
  dev.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    output += chunk;
  });
  await printed("API listening on");
  url = /API listening on (http:\/\/[\d.:]+)/.exec(output)?.[1] ?? "";
  const registered = await apiClient(url).call("POST", "/workflows", {
    name: "shouting",
    nodes: [{ id: "shout", type: "shout" }],
  });
  expect(registered.status).toBe(201);
}, PATIENT_TEST_TIMEOUT_MS);

afterAll(async () => {
  if (dev.exitCode === null) {
    const exited = new Promise((resolve) => dev.once("close", resolve));
    dev.kill("SIGKILL");
    await exited;
  }
  rmSync(project, { recursive: true, force: true });
});

describe("weft dev", () => {
  it(
    "runs the project's TypeScript tasks, and reloads the folder when a file in it changes",
    async () => {
      expect(output).toContain("shout");
      expect(await shoutOnce("hi")).toEqual({ shout: { text: "HI!" } });

      // A helper the task imports changes: the reload imports it afresh too.
      writeFileSync(path.join(project, "tasks", "decorate.ts"), decorate("?!"));
      await printed("task types reloaded");
      expect(await shoutOnce("hi")).toEqual({ shout: { text: "HI?!" } });

      // A broken file: the previous task types stay, and it says why.
      writeFileSync(path.join(project, "tasks", "decorate.ts"), "export const decorate = (;\n");
      await printed("did not reload");
      expect(await shoutOnce("still")).toEqual({ shout: { text: "STILL?!" } });

      // Fixed again: back to reloading.
      writeFileSync(path.join(project, "tasks", "decorate.ts"), decorate("."));
      await printed("task types reloaded", 2);
      expect(await shoutOnce("done")).toEqual({ shout: { text: "DONE." } });
    },
    PATIENT_TEST_TIMEOUT_MS,
  );

  it(
    "stops on SIGINT, exit 0",
    async () => {
      const exited = new Promise<number | null>((resolve) => dev.once("close", resolve));
      dev.kill("SIGINT");
      expect(await exited).toBe(0);
      expect(output).toContain("weft: stopped");
    },
    PATIENT_TEST_TIMEOUT_MS,
  );
});
