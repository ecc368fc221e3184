/**
 * The sample app end to end: run infra/bin/app.ts the way the CDK CLI does (cdk.json's context in
 * CDK_CONTEXT_JSON, an output directory in CDK_OUTDIR), with no AWS credentials, cdk-nag enforcing
 * as a validation plugin; then cfn-lint the templates.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../../infra/lib/functions.js";
import { CDK_CONTEXT, type CfnTemplate } from "./fixture.js";

const outdir = mkdtempSync(path.join(tmpdir(), "weft-cdk-out-"));
let appRun: ReturnType<typeof spawnSync>;

/** Environment without AWS credentials or region: synthesis must not need them. */
function offlineEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith("AWS_") && !key.startsWith("CDK_")) env[key] = value;
  }
  return {
    ...env,
    AWS_EC2_METADATA_DISABLED: "true",
    CDK_OUTDIR: outdir,
    CDK_CONTEXT_JSON: JSON.stringify({ ...CDK_CONTEXT, "weft:stackName": "WeftSample" }),
  };
}

function cfnLint(templates: string[]) {
  const run = spawnSync("cfn-lint", ["--format", "parseable", "--", ...templates], {
    encoding: "utf8",
    timeout: 120_000,
  });
  if (run.error) throw run.error;
  return run;
}

beforeAll(() => {
  appRun = spawnSync(process.execPath, ["--import", "tsx", path.join(REPO_ROOT, "infra/bin/app.ts")], {
    cwd: REPO_ROOT,
    env: offlineEnv(),
    encoding: "utf8",
    timeout: 180_000,
  });
}, 200_000);

afterAll(() => rmSync(outdir, { recursive: true, force: true }));

describe("sample app (infra/bin/app.ts)", () => {
  it("synthesizes offline, with cdk-nag enforcing, and writes one stack", () => {
    expect(appRun.error).toBeUndefined();
    expect(appRun.status, String(appRun.stderr)).toBe(0);
    const manifest = JSON.parse(readFileSync(path.join(outdir, "manifest.json"), "utf8"));
    const stacks = Object.entries(
      manifest.artifacts as Record<string, { type: string; environment: string }>,
    ).filter(([, a]) => a.type === "aws:cloudformation:stack");
    expect(stacks.map(([name]) => name)).toEqual(["WeftSample"]);
    // Environment-agnostic: no account or region baked in, no lookups.
    expect(stacks[0]![1].environment).toBe("aws://unknown-account/unknown-region");
    expect(manifest.missing).toBeUndefined();
  });

  it("exports the outputs a caller needs", () => {
    const template = JSON.parse(
      readFileSync(path.join(outdir, "WeftSample.template.json"), "utf8"),
    ) as CfnTemplate;
    expect(Object.keys(template.Outputs ?? {}).sort()).toEqual([
      "ApiUrl",
      "DeadLetterQueueUrl",
      "EventBusName",
      "TableName",
      "TaskQueueUrl",
    ]);
  });

  it("bundles each handler as minified ESM with the createRequire banner and a source map", () => {
    const assets = JSON.parse(readFileSync(path.join(outdir, "WeftSample.assets.json"), "utf8"))
      .files as Record<string, { source: { path: string; packaging?: string } }>;
    const bundles = Object.values(assets).filter((a) => a.source.packaging === "zip");
    expect(bundles).toHaveLength(4);
    for (const bundle of bundles) {
      const dir = path.join(outdir, bundle.source.path);
      const code = readFileSync(path.join(dir, "index.mjs"), "utf8");
      // Booleans, not the code itself: a failure should not print a megabyte of bundle.
      expect(code.startsWith("import { createRequire as __weftCreateRequire } from 'node:module';")).toBe(
        true,
      );
      expect(/export\s*\{[^}]*\bas handler\b[^}]*\}|export\s*\{[^}]*\bhandler\b/.test(code)).toBe(true);
      expect(code.trimEnd().endsWith("//# sourceMappingURL=index.mjs.map")).toBe(true);
      const map = JSON.parse(readFileSync(path.join(dir, "index.mjs.map"), "utf8"));
      expect(map.version).toBe(3);
      expect(map.sourcesContent).toBeUndefined();
      // Split (infra/lib/bundle-options.ts): what the function loads on first use sits in chunks.
      expect(readdirSync(path.join(dir, "chunks")).some((file) => file.endsWith(".mjs"))).toBe(true);
    }
  });

  it("passes cfn-lint with no finding at all (errors, warnings or informational)", () => {
    const run = cfnLint([path.join(outdir, "WeftSample.template.json")]);
    expect(run.stdout + run.stderr).toBe("");
    expect(run.status).toBe(0);
  });
});
