/** Policy checks on the synthesized stacks: cdk-nag's AwsSolutions pack and cfn-lint. */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Stack, Validations } from "aws-cdk-lib";
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

    it("acknowledges only three specific findings, each on a weft function, each with a reason", () => {
      const acks = acknowledgements(base.app);
      const tableId = base.logicalId(base.stack.weft.table);
      expect([...new Set(acks.map((a) => a.id))].sort()).toEqual(
        [
          "AwsSolutions-IAM5[Resource::*]",
          `AwsSolutions-IAM5[Resource::<${tableId}.Arn>/index/*]`,
          "AwsSolutions-L1",
        ].sort(),
      );
      expect(acks).toHaveLength(3 * 4);
      for (const ack of acks) {
        // Never on a stack or app, where it would hide findings on other resources.
        expect(ack.scope, ack.path).toBeInstanceOf(WeftFunction);
        expect(ack.reason.length, ack.id).toBeGreaterThan(80);
      }
    });
  });

  describe("cfn-lint", () => {
    it("passes on the default stack and both variants with no finding at all", () => {
      const run = cfnLint({ base, jwt: jwtVariant, topic: topicVariant });
      expect(run.stdout + run.stderr).toBe("");
      expect(run.status).toBe(0);
    });
  });
}
