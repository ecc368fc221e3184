/**
 * weft as a team installs it: `npm pack` makes the package, which is installed into an empty folder;
 * `weft init` makes that folder a project; the project's own `npm test` passes, `cdk synth` bundles
 * its task into the worker, and `weft dev` runs its workflow for the CLI — with a task file edited
 * while it runs. Nothing here reads this repository but the tarball.
 *
 * Packages come from npm's cache (`npm ci` put them there; prefer-offline), as the project pins the
 * versions weft itself is tested with.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "../cli/support.js";
import { PATIENT_TEST_TIMEOUT_MS, waitForProgress } from "../support/progress.js";

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

const npmEnv = (): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    npm_config_prefer_offline: "true",
    npm_config_audit: "false",
    npm_config_fund: "false",
    npm_config_update_notifier: "false",
    NO_COLOR: "1",
  };
  // The project's own tools, not this repository's test settings.
  for (const key of Object.keys(env))
    if (key.startsWith("WEFT_") || key.startsWith("VITEST")) delete env[key];
  delete env.NODE_OPTIONS;
  return env;
};

/** Runs a command to its end; a non-zero exit fails the test with everything it printed. */
function run(command: string, args: readonly string[], cwd: string): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: npmEnv(), stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    child.once("error", reject);
    child.once("close", (code) => {
      if (code === 0) resolve({ code, stdout, stderr });
      else
        reject(
          new Error(`${command} ${args.join(" ")} (in ${cwd}) exited ${code}\n${stdout}\n${stderr}`.trim()),
        );
    });
  });
}

let work: string;
let project: string;
let tarball: string;

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), "weft-pack-"));
  project = path.join(work, "my-app");
  // dist/ is built by the test setup (test/setup/package-build.ts): pack it as it is.
  const packed = await run("npm", ["pack", "--ignore-scripts", "--pack-destination", work], repoRoot);
  const name = packed.stdout.trim().split("\n").pop() ?? "";
  tarball = path.join(work, name);
  expect(existsSync(tarball)).toBe(true);
}, PATIENT_TEST_TIMEOUT_MS);

afterAll(() => {
  rmSync(work, { recursive: true, force: true });
});

describe("the packed package in a project of its own", () => {
  it("holds the compiled code and its types, and nothing of the repository's tests", async () => {
    const listed = await run("tar", ["-tzf", tarball], work);
    const files = listed.stdout.split("\n").filter((line) => line !== "");
    for (const expected of [
      "package/bin/weft.js",
      "package/dist/cli/main.js",
      "package/dist/sdk/index.d.ts",
      "package/dist/sdk/cdk.js",
      "package/dist/sdk/testing.d.ts",
      "package/dist/functions/worker/handler.js",
      "package/dist/console/dist/index.html",
      "package/templates/project/tasks/greet.ts",
    ])
      expect(files).toContain(expected);
    expect(files.some((file) => /^package\/(test|sim|bench|rehearsal)\//.test(file))).toBe(false);
    expect(
      files.some((file) => file.endsWith(".ts") && !file.endsWith(".d.ts") && !file.includes("/templates/")),
    ).toBe(false);
  });

  it(
    "installs into an empty folder, and `weft init` makes a project whose own test and synth pass",
    async () => {
      // An empty folder, the tarball installed into it, then init there.
      rmSync(project, { recursive: true, force: true });
      await run("mkdir", ["-p", project], work);
      await run("npm", ["install", tarball], project);
      const init = await run("npx", ["weft", "init"], project);
      expect(init.stdout).toContain("wrote tasks/greet.ts");
      expect(init.stdout).toContain("weft init: ready");
      const manifest = JSON.parse(readFileSync(path.join(project, "package.json"), "utf8"));
      // The spec it was installed with is kept: the project runs the packed weft.
      expect(manifest.dependencies["weft-orchestrator"]).toMatch(/^file:/);
      expect(manifest.scripts.test).toBe("vitest run");

      // The package's declarations as a project compiles against them: construct, tasks, test runtime.
      await run("npm", ["run", "typecheck"], project);

      // Its own test, on the in-memory runtime with the virtual clock.
      const tested = await run("npm", ["test"], project);
      expect(`${tested.stdout}${tested.stderr}`).toMatch(/3 passed/);

      // Its CDK app: the task is bundled into the worker function's asset.
      await run("npx", ["cdk", "synth", "--quiet"], project);
      const worker = workerAsset(path.join(project, "cdk.out"));
      const bundle = readFileSync(path.join(worker, "index.mjs"), "utf8");
      expect(bundle).toContain('type:"greet"');
    },
    PATIENT_TEST_TIMEOUT_MS,
  );

  it(
    "runs its workflow with `weft dev` and the CLI, and takes an edited task file without a restart",
    async () => {
      const dev = startDev(project);
      try {
        const url = await dev.listening;
        // The web console ships in the package (dist/console/dist) and is served at `/`.
        const page = await fetch(`${url}/`);
        expect(page.status).toBe(200);
        expect(await page.text()).toMatch(/<!doctype html>/i);
        const runHello = async () =>
          JSON.parse(
            (
              await run(
                "npx",
                ["weft", "run", "workflows/hello.json", "--input", '{"name":"Ada"}', "--api", url, "--json"],
                project,
              )
            ).stdout,
          );
        expect(await runHello()).toMatchObject({
          status: "SUCCEEDED",
          output: { both: { english: { message: "Hello, Ada!" }, french: { message: "Bonjour, Ada!" } } },
        });
        const validated = await run("npx", ["weft", "validate", "workflows/hello.json"], project);
        // The project's own task type is known to validate (it exits 0 only when valid, too).
        expect(validated.stdout).toContain('workflows/hello.json: valid — workflow "hello", 3 node(s)');

        // An edit while it runs: the next run takes the new code.
        const taskFile = path.join(project, "tasks", "greet.ts");
        writeFileSync(taskFile, readFileSync(taskFile, "utf8").replace("!`", "!!`"));
        await waitForProgress("the reload of tasks/", async () =>
          dev.output().includes("task types reloaded")
            ? { done: true, value: undefined }
            : { done: false, progress: dev.output().length, state: dev.output() },
        );
        expect(await runHello()).toMatchObject({
          status: "SUCCEEDED",
          output: { both: { english: { message: "Hello, Ada!!" } } },
        });
      } finally {
        // One Ctrl-C: npx and weft both get it, as from a terminal; weft stops gracefully, once.
        await dev.stop();
        expect(dev.output()).toContain("weft: stopped");
        expect(dev.output()).not.toContain("without waiting");
      }
    },
    PATIENT_TEST_TIMEOUT_MS,
  );
});

interface DevProcess {
  /** The API's URL, once it listens. */
  listening: Promise<string>;
  output(): string;
  /** SIGINT to its process group, then its end (npx's own exit code is the signal's, so not returned). */
  stop(): Promise<void>;
}

/** `npx weft dev --port 0` in the project, as a user starts it. */
function startDev(cwd: string): DevProcess {
  const child: ChildProcess = spawn("npx", ["weft", "dev", "--port", "0", "--sweep-interval", "0"], {
    cwd,
    env: npmEnv(),
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  const exited = new Promise<number | null>((resolve) => child.once("close", resolve));
  const listening = new Promise<string>((resolve, reject) => {
    const onData = (chunk: string) => {
      output += chunk;
      const match = /API listening on (http:\/\/[\d.:]+)/.exec(output);
      if (match?.[1]) resolve(match[1]);
    };
    child.stdout?.setEncoding("utf8").on("data", onData);
    child.stderr?.setEncoding("utf8").on("data", onData);
    void exited.then((code) => reject(new Error(`weft dev exited ${code} before listening:\n${output}`)));
  });
  return {
    listening,
    output: () => output,
    async stop() {
      // npx → weft: the whole group gets the signal, as from a terminal's Ctrl-C.
      if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, "SIGINT");
      await exited;
    },
  };
}

/** The asset folder of the worker function in a cloud assembly: the template's S3 key, through the asset manifest. */
function workerAsset(cdkOut: string): string {
  const templateFile = readdirSync(cdkOut).find((name) => name.endsWith(".template.json"));
  if (templateFile === undefined) throw new Error(`no template in ${cdkOut}`);
  const template = JSON.parse(readFileSync(path.join(cdkOut, templateFile), "utf8")) as {
    Resources: Record<string, { Type: string; Properties?: { Code?: { S3Key?: string } } }>;
  };
  const worker = Object.entries(template.Resources).find(
    ([id, resource]) => resource.Type === "AWS::Lambda::Function" && id.includes("WorkerFunction"),
  );
  const key = worker?.[1].Properties?.Code?.S3Key;
  if (key === undefined) throw new Error("no worker function with an S3 key in the template");
  const manifest = JSON.parse(
    readFileSync(path.join(cdkOut, templateFile.replace(".template.json", ".assets.json")), "utf8"),
  ) as {
    files: Record<string, { source: { path: string }; destinations: Record<string, { objectKey: string }> }>;
  };
  for (const file of Object.values(manifest.files)) {
    if (Object.values(file.destinations).some((d) => d.objectKey === key))
      return path.join(cdkOut, file.source.path);
  }
  throw new Error(`no asset with the key ${key}`);
}
