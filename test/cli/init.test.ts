/**
 * `weft init`: what it writes, what it keeps, and that it never overwrites. (The project it makes
 * passing its own test and synth is test/package/pack.test.ts.)
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { planInit, projectCdkJson } from "../../cli/init.js";
import { runInitCommand } from "../../cli/init-command.js";
import type { CliIo } from "../../cli/main.js";
import { repoRoot } from "./support.js";

const own = JSON.parse(readFileSync(path.join(repoRoot, "package.json"), "utf8"));
const folders: string[] = [];
afterEach(() => {
  for (const dir of folders.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function folder(name = "my-app"): string {
  const parent = mkdtempSync(path.join(tmpdir(), "weft-init-"));
  folders.push(parent);
  return path.join(parent, name);
}

function io(): { io: CliIo; out: () => string; err: () => string } {
  const out: string[] = [];
  const err: string[] = [];
  const stream = (into: string[]) => ({ write: (chunk: string) => into.push(chunk) > 0 });
  return {
    io: { stdout: stream(out), stderr: stream(err), env: {} } as unknown as CliIo,
    out: () => out.join(""),
    err: () => err.join(""),
  };
}

describe("weft init", () => {
  it("writes the project: CDK app, task, workflow, test, config, README, with weft's own versions", async () => {
    const dir = folder();
    const cli = io();
    expect(await runInitCommand([dir, "--no-install"], cli.io)).toBe(0);
    for (const file of [
      "infra/app.ts",
      "tasks/greet.ts",
      "workflows/hello.json",
      "test/hello.test.ts",
      "weft.config.json",
      "README.md",
      "package.json",
      "tsconfig.json",
      "cdk.json",
      ".gitignore",
    ])
      expect(existsSync(path.join(dir, file)), file).toBe(true);
    const manifest = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8"));
    expect(manifest.name).toBe("my-app");
    expect(manifest.type).toBe("module");
    expect(manifest.dependencies["weft-orchestrator"]).toBe(`^${own.version}`);
    // One fact: the versions are weft's own pins, not a second list.
    expect(manifest.dependencies.zod).toBe(own.dependencies.zod);
    for (const tool of ["aws-cdk-lib", "constructs", "esbuild", "vitest", "aws-cdk"])
      expect(manifest.devDependencies[tool]).toBe(own.devDependencies[tool] ?? own.dependencies[tool]);
    expect(manifest.engines.node).toBe(own.engines.node);
    // The stack is named after the folder, and the README after the project.
    expect(readFileSync(path.join(dir, "infra/app.ts"), "utf8")).toContain(
      'new WorkflowsStack(app, "MyApp")',
    );
    expect(readFileSync(path.join(dir, "README.md"), "utf8")).toMatch(/^# my-app/);
    expect(cli.out()).toContain("npx weft dev");
  });

  it("takes cdk.json's feature flags from weft's own, without weft's settings", () => {
    const cdk = projectCdkJson();
    const ownCdk = JSON.parse(readFileSync(path.join(repoRoot, "cdk.json"), "utf8"));
    const flags = Object.keys(ownCdk.context).filter((key) => !key.startsWith("weft:"));
    expect(Object.keys(cdk.context as object).sort()).toEqual(flags.sort());
    expect(cdk.app).toBe("npx tsx infra/app.ts");
  });

  it("completes an existing package.json, keeping its name, scripts and the spec weft was installed with", async () => {
    const dir = folder("existing");
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      path.join(dir, "package.json"),
      JSON.stringify({
        name: "@team/flows",
        scripts: { test: "jest" },
        dependencies: { "weft-orchestrator": "file:../weft-orchestrator-0.1.0.tgz", zod: "^4.0.0" },
      }),
    );
    expect(await runInitCommand([dir, "--no-install"], io().io)).toBe(0);
    const manifest = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8"));
    expect(manifest.name).toBe("@team/flows");
    expect(manifest.scripts.test).toBe("jest");
    expect(manifest.scripts.dev).toBe("weft dev");
    expect(manifest.dependencies["weft-orchestrator"]).toBe("file:../weft-orchestrator-0.1.0.tgz");
    expect(manifest.dependencies.zod).toBe("^4.0.0");
  });

  it("writes nothing when a file it would write exists, and names it", async () => {
    const dir = folder();
    await runInitCommand([dir, "--no-install"], io().io);
    const readme = path.join(dir, "README.md");
    writeFileSync(readme, "mine");
    rmSync(path.join(dir, "tasks"), { recursive: true });
    const cli = io();
    expect(await runInitCommand([dir, "--no-install"], cli.io)).toBe(1);
    expect(cli.err()).toContain("README.md");
    expect(cli.err()).toContain("nothing was written");
    expect(readFileSync(readme, "utf8")).toBe("mine");
    expect(existsSync(path.join(dir, "tasks"))).toBe(false);
    expect(planInit(dir).conflicts).toContain("README.md");
  });

  it("answers usage errors with 2", async () => {
    const cli = io();
    expect(await runInitCommand(["a", "b"], cli.io)).toBe(2);
    expect(await runInitCommand(["--nope"], cli.io)).toBe(2);
    expect(cli.err()).toContain("usage: weft init");
    const help = io();
    expect(await runInitCommand(["--help"], help.io)).toBe(0);
    expect(help.out()).toContain("--no-install");
  });
});
