/**
 * Synthesizes the sample app in-process, as `cdk synth` does: cdk.json's context (plus the
 * rehearsal's compressed timings as `weft:*` context), the sample stack from its own context reader,
 * cdk-nag as a validation plugin, the handlers bundled by the local esbuild. Reads back the
 * template and, from the cloud assembly's asset manifest, each function's asset directory.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { App, Validations } from "aws-cdk-lib";
import { AssetManifestArtifact } from "aws-cdk-lib/cx-api";
import { AwsSolutionsChecks } from "cdk-nag";
import { weftStackPropsFromContext } from "../../infra/lib/context.js";
import { REPO_ROOT } from "../../infra/lib/functions.js";
import { WeftStack } from "../../infra/lib/weft-stack.js";
import type { CfnTemplate } from "./template.js";

export interface SynthResult {
  stackName: string;
  template: CfnTemplate;
  /** Asset directories by the S3 object key the template's Lambda `Code` names. */
  assetDirs: ReadonlyMap<string, string>;
}

export function synthesize(outdir: string, context: Record<string, string>): SynthResult {
  const cdkJson = JSON.parse(readFileSync(path.join(REPO_ROOT, "cdk.json"), "utf8")) as {
    context?: Record<string, unknown>;
  };
  const app = new App({ outdir, context: { ...cdkJson.context, ...context } });
  // What infra/bin/app.ts does (it synthesizes on import, so it is repeated here).
  const { stackName, ...props } = weftStackPropsFromContext((key) => app.node.tryGetContext(key));
  const stack = new WeftStack(app, stackName, props);
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
  const assembly = app.synth();
  const artifact = assembly.getStackArtifact(stack.artifactId);
  const assetDirs = new Map<string, string>();
  for (const dependency of artifact.dependencies) {
    if (!AssetManifestArtifact.isAssetManifestArtifact(dependency)) continue;
    const manifestDir = path.dirname(dependency.file);
    for (const file of Object.values(dependency.contents.files ?? {})) {
      for (const destination of Object.values(file.destinations)) {
        assetDirs.set(destination.objectKey, path.resolve(manifestDir, file.source.path ?? ""));
      }
    }
  }
  return { stackName, template: artifact.template as CfnTemplate, assetDirs };
}
