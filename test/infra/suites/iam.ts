import { describe, expect, it } from "vitest";
import { EXECUTION_BLOB_PREFIX, UPLOAD_PREFIX } from "../../../shared/domain/payload.js";
import {
  actionsOn,
  allActions,
  baseSynth,
  KINDS,
  refersTo,
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
        tracing: true,
      },
    },
    "WeftExtra",
  );

  /** The table's data plane, per function: exactly the calls its code makes (infra/lib/grants.ts). */
  const READ_WRITE = [
    "dynamodb:BatchGetItem",
    "dynamodb:ConditionCheckItem",
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:Query",
    "dynamodb:UpdateItem",
  ];
  const TABLE_ACTIONS: Record<(typeof KINDS)[number], string[]> = {
    api: [...READ_WRITE, "dynamodb:DeleteItem"].sort(),
    // A map's fan-out reservation is given back by a transaction's Delete.
    worker: [...READ_WRITE, "dynamodb:DeleteItem"].sort(),
    sweeper: [...READ_WRITE, "dynamodb:DeleteItem"].sort(),
    dlq: READ_WRITE,
  };
  /** Nobody describes the table, reads its streams, scans it or writes in batches. */
  const NEVER_CALLED = [
    "dynamodb:DescribeTable",
    "dynamodb:GetRecords",
    "dynamodb:GetShardIterator",
    "dynamodb:Scan",
    "dynamodb:BatchWriteItem",
    "sqs:GetQueueUrl",
    "sqs:ChangeMessageVisibility",
  ];
  const SEND = ["sqs:SendMessage"];
  /** What the SQS event source mapping calls with the consumer's role. */
  const CONSUME = ["sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"];
  const union = (...lists: string[][]) => [...new Set(lists.flat())].sort();
  const OBJECT_RW = ["s3:GetObject", "s3:PutObject"];

  /**
   * A role's S3 access, by what each statement names: `bucket` for the bucket itself, or the object
   * pattern (`ex/*`) for `<bucket ARN>/<pattern>`; with each statement's condition. Anything else an
   * S3 action is granted on (another bucket, `*`) shows up under its own JSON, so exact equality
   * catches it.
   */
  function s3Access(synth: Synth, kind: (typeof KINDS)[number]) {
    const bucketId = synth.logicalId(synth.stack.weft.payloadBucket);
    const arn = { "Fn::GetAtt": [bucketId, "Arn"] };
    const grants: Array<{ resource: string; actions: string[]; condition?: unknown }> = [];
    for (const statement of statementsOf(synth, synth.stack.weft.functions[kind].function)) {
      if (statement.Effect !== "Allow") continue;
      const resources = resourcesOf(statement);
      const s3Actions = statement.Action.filter((action) => action.startsWith("s3:"));
      const onBucket = resources.filter((r) => refersTo(r, bucketId));
      // Nothing but S3 on the bucket, and S3 on nothing but the bucket.
      expect(onBucket.length === 0 || s3Actions.length === statement.Action.length, kind).toBe(true);
      if (s3Actions.length === 0) continue;
      for (const r of resources) {
        const join = (r as { "Fn::Join"?: [string, unknown[]] })["Fn::Join"];
        const resource =
          JSON.stringify(r) === JSON.stringify(arn)
            ? "bucket"
            : join &&
                join[0] === "" &&
                join[1].length === 2 &&
                JSON.stringify(join[1][0]) === JSON.stringify(arn)
              ? String(join[1][1]).replace(/^\//, "")
              : JSON.stringify(r);
        grants.push({
          resource,
          actions: [...s3Actions].sort(),
          ...(statement.Condition === undefined ? {} : { condition: statement.Condition }),
        });
      }
    }
    return grants.sort((a, b) => a.resource.localeCompare(b.resource));
  }

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
      expect(a.table).toEqual(TABLE_ACTIONS[kind]);
      for (const never of NEVER_CALLED) expect(a.all, kind).not.toContain(never);
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

    it.each(KINDS)("%s queries only the indexes it reads, each by name (no index/* wildcard)", (kind) => {
      const tableId = base.logicalId(base.stack.weft.table);
      const arn = { "Fn::GetAtt": [tableId, "Arn"] };
      const indexGrants = access(base, kind)
        .statements.filter((s) => s.Effect === "Allow")
        .flatMap((s) =>
          resourcesOf(s)
            .filter((r) => refersTo(r, tableId) && JSON.stringify(r) !== JSON.stringify(arn))
            .map((r) => ({ actions: [...s.Action].sort(), resource: r })),
        );
      const index = (name: string) => ({
        actions: ["dynamodb:Query"],
        resource: { "Fn::Join": ["", [arn, `/index/${name}`]] },
      });
      const expected: Record<(typeof KINDS)[number], unknown[]> = {
        api: [index("gsi1")],
        worker: [],
        sweeper: [index("gsi2")],
        dlq: [],
      };
      expect(indexGrants).toEqual(expected[kind]);
    });

    it.each(KINDS)("%s writes only to its own log group and publishes only to the weft bus", (kind) => {
      const a = access(base, kind);
      expect(a.logs).toEqual(["logs:CreateLogStream", "logs:PutLogEvents"]);
      expect(a.bus).toEqual(["events:PutEvents"]);
      expect(a.all.filter((action) => action.startsWith("logs:"))).toEqual(a.logs);
    });

    it.each(KINDS)(
      "%s uses Resource '*' only for X-Ray (which has no resource-level permissions), and only with `tracing`",
      (kind) => {
        const wildcardActions = (synth: typeof base) =>
          access(synth, kind)
            .statements.filter((s) => resourcesOf(s).includes("*"))
            .flatMap((s) => s.Action)
            .sort();
        expect(wildcardActions(base)).toEqual([]);
        expect(wildcardActions(extra)).toEqual(["xray:PutTelemetryRecords", "xray:PutTraceSegments"]);
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

    it("dlq consumer: consumes the DLQ, sends tasks (a dead-lettered item's lane goes on), and cannot consume the task queue", () => {
      const a = access(base, "dlq");
      expect(a.dlq).toEqual(CONSUME);
      expect(a.taskQueue).toEqual(SEND);
    });

    const executionBlobs = `${EXECUTION_BLOB_PREFIX}*`;
    const uploads = `${UPLOAD_PREFIX}*`;

    it("api: reads and writes execution values and uploads, lists only uploads (404 for a missing one)", () => {
      expect(s3Access(base, "api")).toEqual([
        {
          resource: "bucket",
          actions: ["s3:ListBucket"],
          condition: { StringLike: { "s3:prefix": [UPLOAD_PREFIX, `${UPLOAD_PREFIX}*`] } },
        },
        { resource: executionBlobs, actions: OBJECT_RW },
        { resource: uploads, actions: OBJECT_RW },
      ]);
    });

    it.each(["worker", "sweeper"] as const)(
      "%s: reads and writes execution values only (no uploads, no listing)",
      (kind) => {
        expect(s3Access(base, kind)).toEqual([{ resource: executionBlobs, actions: OBJECT_RW }]);
      },
    );

    it("dlq consumer: no access to the payload bucket (a poison message only fails and cancels)", () => {
      expect(s3Access(base, "dlq")).toEqual([]);
      expect([...allActions(access(base, "dlq").statements)].some((a) => a.startsWith("s3:"))).toBe(false);
    });

    it.each(KINDS)("%s can never delete payloads or change the bucket", (kind) => {
      const s3 = [...allActions(access(base, kind).statements)].filter((a) => a.startsWith("s3:"));
      expect(
        s3.every((a) => ["s3:GetObject", "s3:PutObject", "s3:ListBucket"].includes(a)),
        kind,
      ).toBe(true);
    });

    it.each(KINDS)("%s has the exact action set it needs and nothing else", (kind) => {
      const expected: Record<(typeof KINDS)[number], string[]> = {
        api: union(TABLE_ACTIONS.api, SEND, ["events:PutEvents"], OBJECT_RW, ["s3:ListBucket"]),
        worker: union(TABLE_ACTIONS.worker, SEND, CONSUME, ["events:PutEvents"], OBJECT_RW),
        sweeper: union(TABLE_ACTIONS.sweeper, SEND, ["events:PutEvents"], OBJECT_RW),
        dlq: union(TABLE_ACTIONS.dlq, SEND, CONSUME, ["events:PutEvents"]),
      };
      // X-Ray's are granted only with `tracing` (the test above).
      const logs = ["logs:CreateLogStream", "logs:PutLogEvents"];
      expect(access(base, kind).all).toEqual(union(expected[kind], logs));
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
