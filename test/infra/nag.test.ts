import { App, Stack, Validations } from "aws-cdk-lib";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { AwsSolutionsChecks } from "cdk-nag";
import type { IConstruct } from "constructs";
import { describe, expect, it } from "vitest";
import { WeftFunction } from "../../infra/lib/functions.js";
import { WeftStack } from "../../infra/lib/weft-stack.js";
import { CDK_CONTEXT, type Synth, synthWeft } from "./fixture.js";

const base = synthWeft();
const variant = synthWeft(
  {
    alarmEmail: "ops@example.test",
    weft: {
      authorization: { kind: "jwt", issuer: "https://auth.example.test/", audience: ["weft"] },
      invokableFunctionArns: ["arn:aws:lambda:eu-west-1:123456789012:function:load"],
      extraEventBusArns: ["arn:aws:events:eu-west-1:123456789012:event-bus/partner"],
    },
  },
  "WeftVariant",
);

function nag(synth: Synth) {
  return new AwsSolutionsChecks(synth.app, { verbose: true }).validateScope(synth.app);
}

function acknowledgements(root: IConstruct): Array<{ path: string; scope: IConstruct; id: string; reason: string }> {
  const found: Array<{ path: string; scope: IConstruct; id: string; reason: string }> = [];
  for (const construct of root.node.findAll()) {
    for (const entry of construct.node.metadata) {
      if (entry.type !== Validations.ACKNOWLEDGED_RULES_METADATA_KEY) continue;
      for (const [id, reason] of Object.entries(entry.data as Record<string, string>)) {
        found.push({ path: construct.node.path, scope: construct, id: id.replace(/^annotation::/i, ""), reason });
      }
    }
  }
  return found;
}

describe("cdk-nag AwsSolutions", () => {
  it("reports no unacknowledged error or warning on the default stack", () => {
    const result = nag(base);
    expect(result.violations.map((v) => `${v.severity} ${v.ruleName}: ${v.violatingResources.map((r) => r.constructPath)}`)).toEqual([]);
    expect(result.success).toBe(true);
  });

  it("reports none on the JWT + alarm topic + extra grants variant either", () => {
    expect(nag(variant).violations.map((v) => v.ruleName)).toEqual([]);
  });

  it("passes as a validation plugin during synthesis (the way infra/bin/app.ts runs it)", () => {
    const app = new App({ context: CDK_CONTEXT });
    const stack = new Stack(app, "Plain");
    // A sanity check on the harness: nag does flag a bare queue (no DLQ, no TLS-only policy).
    new sqs.Queue(stack, "Bare");
    const flagged = new AwsSolutionsChecks(app).validateScope(app).violations.map((v) => v.ruleName);
    expect(flagged).toEqual(expect.arrayContaining(["AwsSolutions-SQS3", "AwsSolutions-SQS4"]));
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    expect(() => app.synth()).toThrow();

    const clean = new App({ context: CDK_CONTEXT });
    Validations.of(clean).addPlugins(new AwsSolutionsChecks(clean));
    new WeftStack(clean, "Weft");
    expect(() => clean.synth()).not.toThrow();
  });

  it("acknowledges only three specific findings, each on a weft function and with a reason", () => {
    const acks = acknowledgements(base.app);
    const tableId = base.logicalId(base.stack.weft.table);
    expect([...new Set(acks.map((a) => a.id))].sort()).toEqual(
      ["AwsSolutions-IAM5[Resource::*]", `AwsSolutions-IAM5[Resource::<${tableId}.Arn>/index/*]`, "AwsSolutions-L1"].sort(),
    );
    expect(acks).toHaveLength(3 * 4);
    for (const ack of acks) {
      expect(ack.scope, ack.path).toBeInstanceOf(WeftFunction);
      expect(ack.reason.length, ack.id).toBeGreaterThan(80);
    }
    // No stack- or app-wide acknowledgement that could hide findings elsewhere.
    for (const ack of acks) expect(ack.scope).not.toBeInstanceOf(Stack);
  });
});
