/** `weft init [DIR]`: scaffolds a project (cli/init.ts), then installs its dependencies with npm. */
import { spawn } from "node:child_process";
import path from "node:path";
import { parseArgs } from "node:util";
import { planInit, writeInit } from "./init.js";
import type { CliIo } from "./main.js";

export const INIT_USAGE = `usage: weft init [DIR] [--no-install]

Makes DIR (default: the current folder) a project that uses weft:
  infra/app.ts        a CDK app with the WeftOrchestrator construct (npx cdk synth / deploy)
  tasks/greet.ts      a custom task type (defineTask)
  workflows/hello.json a workflow that uses it
  test/hello.test.ts  a test on the in-memory runtime with a virtual clock (npm test)
  weft.config.json    what \`weft dev\` and \`weft validate\` load
  README.md, package.json, tsconfig.json, cdk.json, .gitignore

An existing package.json is kept and completed (scripts and dependencies it lacks); any other file
that exists already stops init before it writes anything.

  --no-install   do not run \`npm install\` afterwards`;

export async function runInitCommand(argv: string[], io: CliIo): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    io.stderr.write(`weft init: ${error instanceof Error ? error.message : String(error)}\n${INIT_USAGE}\n`);
    return 2;
  }
  if (parsed.values.help) {
    io.stdout.write(`${INIT_USAGE}\n`);
    return 0;
  }
  const [dir = ".", ...extra] = parsed.positionals;
  if (extra.length > 0) {
    io.stderr.write(`weft init: one folder at most, got ${parsed.positionals.length}\n${INIT_USAGE}\n`);
    return 2;
  }
  const plan = planInit(dir);
  if (plan.conflicts.length > 0) {
    io.stderr.write(
      `weft init: ${plan.dir} already has ${plan.conflicts.join(", ")}; nothing was written (move them away, or init another folder)\n`,
    );
    return 1;
  }
  writeInit(plan);
  for (const file of [...plan.files.keys()].sort()) io.stdout.write(`  wrote ${file}\n`);
  if (!parsed.values["no-install"]) {
    io.stdout.write("weft init: npm install\n");
    const code = await npmInstall(plan.dir);
    if (code !== 0) {
      io.stderr.write(`weft init: npm install failed (exit ${code}); run it in ${plan.dir} when you can\n`);
      return 1;
    }
  }
  const cd = path.relative(process.cwd(), plan.dir);
  io.stdout.write(
    [
      "",
      `weft init: ready${cd === "" ? "" : ` in ${cd}`}. Next:`,
      ...(cd === "" ? [] : [`  cd ${cd}`]),
      ...(parsed.values["no-install"] ? ["  npm install"] : []),
      "  npm test                                  the workflow's test, in memory",
      "  npx weft dev                              the local runtime and console on http://127.0.0.1:3000",
      '  npx weft run workflows/hello.json --input \'{"name":"Ada"}\'',
      "  npx cdk synth                             the stack, your tasks bundled in",
      "",
    ].join("\n"),
  );
  return 0;
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    options: { "no-install": { type: "boolean" }, help: { type: "boolean", short: "h" } },
    strict: true,
    allowPositionals: true,
  });
}

function npmInstall(cwd: string): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(
      process.platform === "win32" ? "npm.cmd" : "npm",
      ["install", "--no-fund", "--no-audit"],
      {
        cwd,
        stdio: "inherit",
        shell: process.platform === "win32",
      },
    );
    child.once("error", () => resolve(127));
    child.once("close", (code) => resolve(code ?? 1));
  });
}
