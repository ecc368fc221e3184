/** Policy checks on the synthesized stacks: cdk-nag's AwsSolutions pack and cfn-lint. */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { RemovalPolicy, Stack, Validations } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import * as s3 from "aws-cdk-lib/aws-s3";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { AwsSolutionsChecks } from "cdk-nag";
import type { IConstruct } from "constructs";
import { afterAll, describe, expect, it } from "vitest";
import { WeftFunction } from "../../../infra/lib/functions.js";
import { WeftStack } from "../../../infra/lib/weft-stack.js";
import { baseSynth, newApp, type Synth, synthWeft } from "../fixture.js";

export function checksSuite(): void {
  const base = baseSynth();
  const jwtVariant = synthWeft(
    {
      alarmEmail: "ops@example.test",
      weft: {
        authorization: { kind: "jwt", issuer: "https://auth.example.test/", audience: ["weft"] },
        invokableFunctionArns: ["arn:aws:lambda:eu-west-1:123456789012:function:load"],
        extraEventBusArns: ["arn:aws:events:eu-west-1:123456789012:event-bus/partner"],
      },
    },
    "WeftJwt",
  );
  const topicVariant = synthWeft({ alarmTopicArn: "arn:aws:sns:eu-west-1:123456789012:ops" }, "WeftTopic");
  // The throwaway development stack of docs/deploy.md: the bucket gets an auto-delete custom resource.
  const destroyVariant = synthWeft(
    { weft: { removalPolicy: RemovalPolicy.DESTROY, tableDeletionProtection: false } },
    "WeftDestroy",
  );

  const lintDir = mkdtempSync(path.join(tmpdir(), "weft-cfn-lint-"));
  afterAll(() => rmSync(lintDir, { recursive: true, force: true }));

  function nag(synth: Synth): string[] {
    return new AwsSolutionsChecks(synth.app, { verbose: true })
      .validateScope(synth.app)
      .violations.map(
        (v) => `${v.severity} ${v.ruleName}: ${v.violatingResources.map((r) => r.constructPath).join(", ")}`,
      );
  }

  function acknowledgements(
    root: IConstruct,
  ): Array<{ path: string; scope: IConstruct; id: string; reason: string }> {
    const found: Array<{ path: string; scope: IConstruct; id: string; reason: string }> = [];
    for (const construct of root.node.findAll()) {
      for (const entry of construct.node.metadata) {
        if (entry.type !== Validations.ACKNOWLEDGED_RULES_METADATA_KEY) continue;
        for (const [id, reason] of Object.entries(entry.data as Record<string, string>)) {
          found.push({
            path: construct.node.path,
            scope: construct,
            id: id.replace(/^annotation::/i, ""),
            reason,
          });
        }
      }
    }
    return found;
  }

  /** cfn-lint exit code is a bit mask: 2 errors, 4 warnings, 8 informational. We allow none. */
  function cfnLint(synths: Record<string, Synth>) {
    const files = Object.entries(synths).map(([name, synth]) => {
      const file = path.join(lintDir, `${name}.template.json`);
      writeFileSync(file, JSON.stringify(synth.json, null, 1));
      return file;
    });
    const run = spawnSync("cfn-lint", ["--format", "parseable", "--", ...files], {
      encoding: "utf8",
      timeout: 120_000,
    });
    if (run.error) throw run.error;
    return run;
  }

  describe("cdk-nag AwsSolutions", () => {
    it("reports no unacknowledged error or warning on the default stack", () => {
      expect(nag(base)).toEqual([]);
    });

    it("reports none on the JWT + alarm email + extra grants variant, nor with an alarm topic ARN", () => {
      expect(nag(jwtVariant)).toEqual([]);
      expect(nag(topicVariant)).toEqual([]);
    });

    it("reports none on the removable development stack (auto-deleted payload bucket)", () => {
      expect(nag(destroyVariant)).toEqual([]);
    });

    it("does flag a non-compliant resource (the harness is live) and fails synthesis as a plugin", () => {
      const app = newApp();
      new sqs.Queue(new Stack(app, "Plain"), "Bare");
      const flagged = new AwsSolutionsChecks(app).validateScope(app).violations.map((v) => v.ruleName);
      expect(flagged).toEqual(expect.arrayContaining(["AwsSolutions-SQS3", "AwsSolutions-SQS4"]));
      Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
      expect(() => app.synth()).toThrow();
    });

    it("lets the weft stack synthesize with the plugin registered, as infra/bin/app.ts does", () => {
      const app = newApp();
      new WeftStack(app, "WeftPlugin");
      Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
      expect(() => app.synth()).not.toThrow();
    });

    it("acknowledges only specific findings, each on the one construct it concerns, each with a reason", () => {
      const acks = acknowledgements(base.app);
      const weft = base.stack.weft;
      const bucketId = base.logicalId(weft.payloadBucket);
      const executionBlobs = `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/ex/*]`;
      const uploads = `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/up/*]`;
      const everyFunction = ["AwsSolutions-IAM5[Resource::*]", "AwsSolutions-L1"];
      const expected = new Map<IConstruct, string[]>([
        [weft.functions.api, [...everyFunction, executionBlobs, uploads]],
        [weft.functions.worker, [...everyFunction, executionBlobs]],
        [weft.functions.sweeper, [...everyFunction, executionBlobs]],
        [weft.functions.dlq, everyFunction],
        [weft.payloadBucket, ["AwsSolutions-S1"]],
      ]);
      const sorted = (ids: string[]) => [...ids].sort();
      for (const [scope, ids] of expected) {
        expect(sorted(acks.filter((a) => a.scope === scope).map((a) => a.id)), scope.node.path).toEqual(
          sorted(ids),
        );
      }
      expect(acks).toHaveLength([...expected.values()].flat().length);
      for (const ack of acks) {
        // Never on a stack or app, where it would hide findings on other resources.
        expect(ack.scope instanceof WeftFunction || ack.scope instanceof s3.Bucket, ack.path).toBe(true);
        expect(ack.reason.length, ack.id).toBeGreaterThan(80);
      }
    });

    it("still flags a payload bucket grant wider than its prefix (the acknowledgements are exact)", () => {
      const app = newApp();
      const stack = new WeftStack(app, "WeftWide");
      const bucket = stack.weft.payloadBucket;
      stack.weft.functions.dlq.role.addToPrincipalPolicy(
        new iam.PolicyStatement({ actions: ["s3:GetObject"], resources: [bucket.arnForObjects("*")] }),
      );
      const flagged = new AwsSolutionsChecks(app).validateScope(app).violations.map((v) => v.ruleName);
      expect(flagged).toEqual([
        `AwsSolutions-IAM5[Resource::<${stack.resolve(stack.getLogicalId(bucket.node.defaultChild as s3.CfnBucket))}.Arn>/*]`,
      ]);
    });
  });

  describe("cfn-lint", () => {
    it("passes on the default stack and both variants with no finding at all", () => {
      const run = cfnLint({ base, jwt: jwtVariant, topic: topicVariant });
      expect(run.stdout + run.stderr).toBe("");
      expect(run.status).toBe(0);
    });

    it("finds nothing of weft's on the removable development stack, only W3005 on CDK's auto-delete provider", () => {
      // aws-cdk-lib's singleton provider for autoDeleteObjects both GetAtts its role and DependsOn it;
      // it is CDK's resource (shared with any other auto-deleted bucket in the stack), left as is.
      const run = cfnLint({ destroy: destroyVariant });
      const findings = (run.stdout + run.stderr).split("\n").filter(Boolean);
      expect(findings).toHaveLength(1);
      expect(findings[0]).toMatch(
        /:W3005:'CustomS3AutoDeleteObjectsCustomResourceProviderRole[0-9A-F]{8}' dependency already enforced by a 'GetAtt' at 'Resources\/CustomS3AutoDeleteObjectsCustomResourceProviderHandler[0-9A-F]{8}\/Properties\/Role'$/,
      );
      expect(run.status).toBe(4);
    });
  });
}
