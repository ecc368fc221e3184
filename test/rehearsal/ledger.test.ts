/** The unused-grants ledger: which grants calls used, by whom; platform grants exempt. */
import { describe, expect, it } from "vitest";
import { GrantLedger } from "../../rehearsal/iam/ledger.js";
import { evaluate, type LabeledStatement } from "../../rehearsal/iam/policy.js";

const QUEUE = "arn:aws:sqs:us-east-1:123456789012:tasks";
const statements: LabeledStatement[] = [
  {
    id: "P[0]",
    statement: {
      Effect: "Allow",
      Action: ["logs:CreateLogStream", "logs:PutLogEvents"],
      Resource: "arn:aws:logs:*",
    },
  },
  { id: "P[1]", statement: { Effect: "Allow", Action: ["xray:PutTraceSegments"], Resource: "*" } },
  {
    id: "P[2]",
    statement: {
      Effect: "Allow",
      Action: ["sqs:ReceiveMessage", "sqs:SendMessage", "sqs:GetQueueUrl"],
      Resource: QUEUE,
    },
  },
];

function use(ledger: GrantLedger, caller: string, action: string): void {
  const decision = evaluate(statements, { action, resource: QUEUE });
  if (!decision.allowed) throw new Error("denied");
  ledger.recordAllowed("worker", caller, action, decision.grants);
}

describe("GrantLedger", () => {
  it("reports the grants no call used, never the Lambda platform's (logs, xray)", () => {
    const ledger = new GrantLedger();
    ledger.register("worker", statements);
    use(ledger, "handler", "sqs:SendMessage");
    use(ledger, "event source mapping", "sqs:ReceiveMessage");
    expect(ledger.unused()).toEqual([
      { principal: "worker", statementId: "P[2]", action: "sqs:GetQueueUrl", resource: QUEUE },
    ]);
  });

  it("says how often a grant was used and by whom, and counts the calls by action", () => {
    const ledger = new GrantLedger();
    ledger.register("worker", statements);
    use(ledger, "event source mapping", "sqs:ReceiveMessage");
    use(ledger, "event source mapping", "sqs:ReceiveMessage");
    const receive = ledger.grantsOf("worker").find((g) => g.action === "sqs:ReceiveMessage");
    expect(receive && ledger.useOf("worker", receive)).toEqual({
      calls: 2,
      callers: ["event source mapping"],
    });
    expect(ledger.calls("worker", "sqs:ReceiveMessage")).toBe(2);
    expect(ledger.calls("worker", "sqs:SendMessage")).toBe(0);
  });

  it("keeps the denials it is told of", () => {
    const ledger = new GrantLedger();
    ledger.register("api", []);
    const denial = {
      principal: "api",
      caller: "handler",
      operation: "DescribeTable",
      action: "dynamodb:DescribeTable",
      resource: "t",
      reason: "no",
    };
    ledger.recordDenied(denial);
    expect(ledger.denials()).toEqual([denial]);
  });
});
