import { describe, expect, it } from "vitest";
import {
  actionsOn,
  allActions,
  baseSynth,
  KINDS,
  resource,
  resourcesOf,
  resourcesOfType,
  type Synth,
  statementsOf,
  synthWeft,
} from "../fixture.js";

export function iamSuite(): void {
  const base = baseSynth();
  const extra = synthWeft(
    {
      weft: {
        invokableFunctionArns: ["arn:aws:lambda:eu-west-1:123456789012:function:load"],
        extraEventBusArns: ["arn:aws:events:eu-west-1:123456789012:event-bus/partner"],
      },
    },
    "WeftExtra",
  );

  const TABLE_DATA_ACTIONS = [
    "dynamodb:BatchGetItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:ConditionCheckItem",
    "dynamodb:DeleteItem",
    "dynamodb:DescribeTable",
    "dynamodb:GetItem",
    "dynamodb:GetRecords",
    "dynamodb:GetShardIterator",
    "dynamodb:PutItem",
    "dynamodb:Query",
    "dynamodb:Scan",
    "dynamodb:UpdateItem",
  ];
  const SEND = ["sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:SendMessage"];
  const CONSUME = [
    "sqs:ChangeMessageVisibility",
    "sqs:DeleteMessage",
    "sqs:GetQueueAttributes",
    "sqs:GetQueueUrl",
    "sqs:ReceiveMessage",
  ];
  const union = (...lists: string[][]) => [...new Set(lists.flat())].sort();

  function access(synth: Synth, kind: (typeof KINDS)[number]) {
    const statements = statementsOf(synth, synth.stack.weft.functions[kind].function);
    const weft = synth.stack.weft;
    return {
      statements,
      all: [...allActions(statements)].sort(),
      table: [...actionsOn(statements, synth.logicalId(weft.table))].sort(),
      taskQueue: [...actionsOn(statements, synth.logicalId(weft.taskQueue))].sort(),
      dlq: [...actionsOn(statements, synth.logicalId(weft.deadLetterQueue))].sort(),
      bus: [...actionsOn(statements, synth.logicalId(weft.eventBus))].sort(),
      logs: [...actionsOn(statements, synth.logicalId(weft.functions[kind].logGroup))].sort(),
    };
  }

  describe("least privilege per function", () => {
    it.each(KINDS)("%s can only use the table's data plane (no dynamodb:*, no table management)", (kind) => {
      const a = access(base, kind);
      expect(a.table).toEqual(TABLE_DATA_ACTIONS);
      for (const forbidden of [
        "dynamodb:*",
        "dynamodb:DeleteTable",
        "dynamodb:UpdateTable",
        "dynamodb:CreateTable",
        "dynamodb:DeleteBackup",
        "dynamodb:UpdateTimeToLive",
        "dynamodb:UpdateContinuousBackups",
      ]) {
        expect(a.all).not.toContain(forbidden);
      }
      expect(a.all.some((action) => action.endsWith(":*") || action === "*")).toBe(false);
    });

    it.each(KINDS)("%s writes only to its own log group and publishes only to the weft bus", (kind) => {
      const a = access(base, kind);
      expect(a.logs).toEqual(["logs:CreateLogStream", "logs:PutLogEvents"]);
      expect(a.bus).toEqual(["events:PutEvents"]);
      expect(a.all.filter((action) => action.startsWith("logs:"))).toEqual(a.logs);
    });

    it.each(KINDS)(
      "%s uses Resource '*' only for X-Ray (which has no resource-level permissions)",
      (kind) => {
        const { statements } = access(base, kind);
        const wildcard = statements.filter((s) => resourcesOf(s).includes("*"));
        expect(wildcard.flatMap((s) => s.Action).sort()).toEqual([
          "xray:PutTelemetryRecords",
          "xray:PutTraceSegments",
        ]);
      },
    );

    it("api: sends tasks (redrive), and never touches the DLQ: dead letters are read from the table", () => {
      const a = access(base, "api");
      expect(a.taskQueue).toEqual(SEND);
      expect(a.dlq).toEqual([]);
      expect(a.all).not.toContain("sqs:ReceiveMessage");
    });

    it("worker: consumes and sends tasks, and cannot touch the DLQ (terminal errors are recorded in the table)", () => {
      const a = access(base, "worker");
      expect(a.taskQueue).toEqual(union(SEND, CONSUME));
      expect(a.dlq).toEqual([]);
    });

    it("sweeper: sends tasks and cannot touch the DLQ at all", () => {
      const a = access(base, "sweeper");
      expect(a.taskQueue).toEqual(SEND);
      expect(a.dlq).toEqual([]);
      expect(a.all).not.toContain("sqs:ReceiveMessage");
      expect(a.all).not.toContain("sqs:DeleteMessage");
    });

    it("dlq consumer: consumes the DLQ, sends tasks, cannot consume the task queue", () => {
      const a = access(base, "dlq");
      expect(a.dlq).toEqual(CONSUME);
      expect(a.taskQueue).toEqual(SEND);
    });

    it.each(KINDS)("%s has the exact action set it needs and nothing else", (kind) => {
      const expected: Record<(typeof KINDS)[number], string[]> = {
        api: union(TABLE_DATA_ACTIONS, SEND, ["events:PutEvents"]),
        worker: union(TABLE_DATA_ACTIONS, SEND, CONSUME, ["events:PutEvents"]),
        sweeper: union(TABLE_DATA_ACTIONS, SEND, ["events:PutEvents"]),
        dlq: union(TABLE_DATA_ACTIONS, SEND, CONSUME, ["events:PutEvents"]),
      };
      const xrayAndLogs = [
        "logs:CreateLogStream",
        "logs:PutLogEvents",
        "xray:PutTelemetryRecords",
        "xray:PutTraceSegments",
      ];
      expect(access(base, kind).all).toEqual(union(expected[kind], xrayAndLogs));
      expect(access(base, kind).all).not.toContain("lambda:InvokeFunction");
    });

    it.each(KINDS)("%s has its own role, assumable only by Lambda, with no managed policies", (kind) => {
      const roleId = base.logicalId(base.stack.weft.functions[kind].role);
      const role = resource(base.json, roleId);
      expect(role.Properties?.ManagedPolicyArns).toBeUndefined();
      expect(role.Properties?.AssumeRolePolicyDocument).toEqual({
        Version: "2012-10-17",
        Statement: [
          { Action: "sts:AssumeRole", Effect: "Allow", Principal: { Service: "lambda.amazonaws.com" } },
        ],
      });
      expect(resource(base.json, base.functionId(kind)).Properties?.Role).toEqual({
        "Fn::GetAtt": [roleId, "Arn"],
      });
    });

    it("has no IAM users, groups or inline role policies anywhere", () => {
      expect(resourcesOfType(base.json, "AWS::IAM::User")).toHaveLength(0);
      expect(resourcesOfType(base.json, "AWS::IAM::Group")).toHaveLength(0);
      for (const [, role] of resourcesOfType(base.json, "AWS::IAM::Role")) {
        expect(role.Properties?.Policies).toBeUndefined();
      }
    });
  });

  describe("extra grants for user task types", () => {
    it("lets only the worker invoke the listed functions and put events on the listed buses", () => {
      const worker = access(extra, "worker").statements;
      const invoke = worker.filter((s) => s.Action.includes("lambda:InvokeFunction"));
      expect(invoke.flatMap(resourcesOf)).toEqual(["arn:aws:lambda:eu-west-1:123456789012:function:load"]);
      const partner = worker.filter((s) =>
        resourcesOf(s).includes("arn:aws:events:eu-west-1:123456789012:event-bus/partner"),
      );
      expect(partner.flatMap((s) => s.Action)).toEqual(["events:PutEvents"]);

      for (const kind of ["api", "sweeper", "dlq"] as const) {
        const a = access(extra, kind);
        expect(a.all).not.toContain("lambda:InvokeFunction");
        expect(JSON.stringify(a.statements)).not.toContain("event-bus/partner");
      }
    });
  });
}
