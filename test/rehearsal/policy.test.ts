/** The rehearsal's IAM evaluator: action and resource wildcards, Deny, NotAction/NotResource, conditions, grants. */
import { describe, expect, it } from "vitest";
import { evaluate, grantsOf, type LabeledStatement, wildcardMatch } from "../../rehearsal/iam/policy.js";

const TABLE = "arn:aws:dynamodb:us-east-1:123456789012:table/Weft-Table-ABC";
const BUCKET = "arn:aws:s3:::weft-payloads";

const statements: LabeledStatement[] = [
  {
    id: "P[0]",
    statement: { Effect: "Allow", Action: ["dynamodb:GetItem", "dynamodb:Query"], Resource: TABLE },
  },
  { id: "P[1]", statement: { Effect: "Allow", Action: "dynamodb:Query", Resource: `${TABLE}/index/gsi1` } },
  {
    id: "P[2]",
    statement: { Effect: "Allow", Action: ["s3:GetObject", "s3:PutObject"], Resource: `${BUCKET}/ex/*` },
  },
  {
    id: "P[3]",
    statement: {
      Effect: "Allow",
      Action: "s3:ListBucket",
      Resource: BUCKET,
      Condition: { StringLike: { "s3:prefix": ["up/", "up/*"] } },
    },
  },
  { id: "P[4]", statement: { Effect: "Allow", Action: "xray:Put*", Resource: "*" } },
];

describe("wildcardMatch", () => {
  it("matches * and ? and nothing else as a wildcard", () => {
    expect(wildcardMatch("s3:Get*", "s3:GetObject")).toBe(true);
    expect(wildcardMatch("s3:Get?bject", "s3:GetObject")).toBe(true);
    expect(wildcardMatch("arn:aws:s3:::b/ex/*", "arn:aws:s3:::b/ex/a/b.json")).toBe(true);
    expect(wildcardMatch("arn:aws:s3:::b/ex/*", "arn:aws:s3:::b/up/a")).toBe(false);
    expect(wildcardMatch("a.b", "axb")).toBe(false);
    expect(wildcardMatch("table/(x)+", "table/(x)+")).toBe(true);
  });

  it("is case-insensitive only when asked (actions), case-sensitive for resources", () => {
    expect(wildcardMatch("dynamodb:getitem", "dynamodb:GetItem", true)).toBe(true);
    expect(wildcardMatch("arn:aws:s3:::B/*", "arn:aws:s3:::b/x")).toBe(false);
  });
});

describe("evaluate", () => {
  it("allows what a statement names, and says which grants the call used", () => {
    const decision = evaluate(statements, { action: "dynamodb:GetItem", resource: TABLE });
    expect(decision).toEqual({
      allowed: true,
      grants: [{ statementId: "P[0]", action: "dynamodb:GetItem", resource: TABLE }],
    });
  });

  it("refuses an action granted on another resource: an index is not its table", () => {
    expect(evaluate(statements, { action: "dynamodb:Query", resource: `${TABLE}/index/gsi2` })).toEqual({
      allowed: false,
      reason: "no-allow",
    });
    expect(
      evaluate(statements, { action: "dynamodb:GetItem", resource: `${TABLE}/index/gsi1` }).allowed,
    ).toBe(false);
    expect(evaluate(statements, { action: "dynamodb:Query", resource: `${TABLE}/index/gsi1` }).allowed).toBe(
      true,
    );
  });

  it("refuses actions nobody granted, and matches object prefixes", () => {
    expect(evaluate(statements, { action: "dynamodb:DescribeTable", resource: TABLE }).allowed).toBe(false);
    expect(
      evaluate(statements, { action: "s3:GetObject", resource: `${BUCKET}/ex/e1/abc.json` }).allowed,
    ).toBe(true);
    expect(evaluate(statements, { action: "s3:GetObject", resource: `${BUCKET}/up/t1` }).allowed).toBe(false);
    expect(
      evaluate(statements, { action: "s3:DeleteObject", resource: `${BUCKET}/ex/e1/abc.json` }).allowed,
    ).toBe(false);
  });

  it("evaluates conditions: StringLike on s3:prefix, absent keys fail a positive operator", () => {
    const list = (prefix?: string) =>
      evaluate(statements, { action: "s3:ListBucket", resource: BUCKET, context: { "s3:prefix": prefix } })
        .allowed;
    expect(list("up/abc")).toBe(true);
    expect(list("up/")).toBe(true);
    expect(list("ex/abc")).toBe(false);
    expect(list(undefined)).toBe(false);
  });

  it("lets an explicit Deny win over any Allow, before or after it", () => {
    const deny: LabeledStatement = {
      id: "BucketPolicy[0]",
      statement: {
        Effect: "Deny",
        Action: "s3:*",
        Resource: [BUCKET, `${BUCKET}/*`],
        Condition: { Bool: { "aws:SecureTransport": "false" } },
      },
    };
    const request = { action: "s3:GetObject", resource: `${BUCKET}/ex/k` };
    expect(
      evaluate([deny, ...statements], { ...request, context: { "aws:SecureTransport": "false" } }),
    ).toEqual({
      allowed: false,
      reason: "explicit-deny",
      deniedBy: "BucketPolicy[0]",
    });
    expect(
      evaluate([...statements, deny], { ...request, context: { "aws:SecureTransport": "false" } }).allowed,
    ).toBe(false);
    expect(
      evaluate([...statements, deny], { ...request, context: { "aws:SecureTransport": "true" } }).allowed,
    ).toBe(true);
  });

  it("honours NotAction and NotResource, and the negated and IfExists operators", () => {
    const s: LabeledStatement[] = [
      { id: "A", statement: { Effect: "Allow", NotAction: "sqs:Delete*", Resource: "arn:aws:sqs:*:*:q" } },
      {
        id: "B",
        statement: {
          Effect: "Allow",
          Action: "events:PutEvents",
          NotResource: "arn:aws:events:*:*:event-bus/default",
        },
      },
      {
        id: "C",
        statement: {
          Effect: "Allow",
          Action: "kms:Decrypt",
          Resource: "*",
          Condition: { StringNotEqualsIfExists: { "kms:ViaService": "s3.amazonaws.com" } },
        },
      },
    ];
    expect(evaluate(s, { action: "sqs:SendMessage", resource: "arn:aws:sqs:us-east-1:1:q" }).allowed).toBe(
      true,
    );
    expect(evaluate(s, { action: "sqs:DeleteMessage", resource: "arn:aws:sqs:us-east-1:1:q" }).allowed).toBe(
      false,
    );
    expect(
      evaluate(s, { action: "events:PutEvents", resource: "arn:aws:events:us-east-1:1:event-bus/weft" })
        .allowed,
    ).toBe(true);
    expect(
      evaluate(s, { action: "events:PutEvents", resource: "arn:aws:events:us-east-1:1:event-bus/default" })
        .allowed,
    ).toBe(false);
    expect(evaluate(s, { action: "kms:Decrypt", resource: "k" }).allowed).toBe(true);
    expect(
      evaluate(s, { action: "kms:Decrypt", resource: "k", context: { "kms:ViaService": "s3.amazonaws.com" } })
        .allowed,
    ).toBe(false);
  });

  it("treats an unknown condition operator as not matching (an Allow does not apply)", () => {
    const s: LabeledStatement[] = [
      {
        id: "A",
        statement: {
          Effect: "Allow",
          Action: "s3:GetObject",
          Resource: "*",
          Condition: { DateLessThan: { "aws:CurrentTime": "2030-01-01" } },
        },
      },
    ];
    expect(
      evaluate(s, { action: "s3:GetObject", resource: "x", context: { "aws:CurrentTime": "2026-01-01" } })
        .allowed,
    ).toBe(false);
  });

  it("counts every grant a call matches: two statements granting the same pair are both used", () => {
    const twice: LabeledStatement[] = [
      { id: "A", statement: { Effect: "Allow", Action: "sqs:SendMessage", Resource: "arn:q" } },
      {
        id: "B",
        statement: { Effect: "Allow", Action: ["sqs:Send*", "sqs:SendMessage"], Resource: "arn:*" },
      },
    ];
    const decision = evaluate(twice, { action: "sqs:SendMessage", resource: "arn:q" });
    expect(
      decision.allowed && decision.grants.map((g) => `${g.statementId} ${g.action} ${g.resource}`),
    ).toEqual(["A sqs:SendMessage arn:q", "B sqs:Send* arn:*", "B sqs:SendMessage arn:*"]);
  });
});

describe("grantsOf", () => {
  it("lists each action with each resource of the Allow statements only", () => {
    const grants = grantsOf([
      ...statements.slice(0, 2),
      { id: "D", statement: { Effect: "Deny", Action: "dynamodb:DeleteTable", Resource: "*" } },
    ]);
    expect(grants).toEqual([
      { statementId: "P[0]", action: "dynamodb:GetItem", resource: TABLE },
      { statementId: "P[0]", action: "dynamodb:Query", resource: TABLE },
      { statementId: "P[1]", action: "dynamodb:Query", resource: `${TABLE}/index/gsi1` },
    ]);
  });
});
