// biome-ignore-all lint/suspicious/noTemplateCurlyInString: Fn::Sub strings are CloudFormation syntax, not template literals
/** Intrinsic functions resolved against the physical resources the rehearsal stood up. */
import { describe, expect, it } from "vitest";
import {
  type PhysicalResource,
  type ResolveScope,
  referencedIds,
  resolveIntrinsics,
  resolveString,
  UnresolvableError,
} from "../../rehearsal/cfn/intrinsics.js";

const scope: ResolveScope = {
  resources: new Map<string, PhysicalResource>([
    [
      "Table",
      {
        ref: "Weft-Table-ABC",
        attributes: { Arn: "arn:aws:dynamodb:us-east-1:123456789012:table/Weft-Table-ABC" },
      },
    ],
    [
      "Queue",
      {
        ref: "http://127.0.0.1:5000/123456789012/Weft-Queue-XYZ",
        attributes: { Arn: "arn:aws:sqs:us-east-1:123456789012:Weft-Queue-XYZ", QueueName: "Weft-Queue-XYZ" },
      },
    ],
    ["Bucket", { ref: "weft-bucket-abc", attributes: { Arn: "arn:aws:s3:::weft-bucket-abc" } }],
  ]),
  pseudo: {
    "AWS::Region": "us-east-1",
    "AWS::AccountId": "123456789012",
    "AWS::Partition": "aws",
    "AWS::URLSuffix": "amazonaws.com",
  },
};

describe("resolveIntrinsics", () => {
  it("resolves Ref (resources and pseudo parameters) and Fn::GetAtt (both spellings)", () => {
    expect(resolveIntrinsics({ Ref: "Table" }, scope)).toBe("Weft-Table-ABC");
    expect(resolveIntrinsics({ Ref: "AWS::Region" }, scope)).toBe("us-east-1");
    expect(resolveIntrinsics({ "Fn::GetAtt": ["Queue", "Arn"] }, scope)).toBe(
      "arn:aws:sqs:us-east-1:123456789012:Weft-Queue-XYZ",
    );
    expect(resolveIntrinsics({ "Fn::GetAtt": "Queue.QueueName" }, scope)).toBe("Weft-Queue-XYZ");
  });

  it("resolves Fn::Join of nested intrinsics (a bucket prefix, an index ARN)", () => {
    expect(
      resolveIntrinsics({ "Fn::Join": ["", [{ "Fn::GetAtt": ["Bucket", "Arn"] }, "/ex/*"]] }, scope),
    ).toBe("arn:aws:s3:::weft-bucket-abc/ex/*");
    expect(
      resolveIntrinsics({ "Fn::Join": ["", [{ "Fn::GetAtt": ["Table", "Arn"] }, "/index/gsi1"]] }, scope),
    ).toBe("arn:aws:dynamodb:us-east-1:123456789012:table/Weft-Table-ABC/index/gsi1");
  });

  it("resolves Fn::Sub with pseudo parameters, attributes, local variables and ${!literal}", () => {
    expect(resolveIntrinsics({ "Fn::Sub": "cdk-assets-${AWS::AccountId}-${AWS::Region}" }, scope)).toBe(
      "cdk-assets-123456789012-us-east-1",
    );
    expect(resolveIntrinsics({ "Fn::Sub": "${Table.Arn}/stream/${!Literal}" }, scope)).toBe(
      "arn:aws:dynamodb:us-east-1:123456789012:table/Weft-Table-ABC/stream/${Literal}",
    );
    expect(resolveIntrinsics({ "Fn::Sub": ["${Name}-${Bucket}", { Name: { Ref: "Table" } }] }, scope)).toBe(
      "Weft-Table-ABC-weft-bucket-abc",
    );
  });

  it("resolves Fn::Select and Fn::Split", () => {
    expect(
      resolveIntrinsics(
        { "Fn::Select": [5, { "Fn::Split": [":", { "Fn::GetAtt": ["Queue", "Arn"] }] }] },
        scope,
      ),
    ).toBe("Weft-Queue-XYZ");
  });

  it("resolves inside objects and lists, leaving plain values alone", () => {
    expect(
      resolveIntrinsics(
        {
          Variables: { WEFT_TABLE_NAME: { Ref: "Table" }, WEFT_LEASE_SECONDS: "5" },
          List: [{ Ref: "Bucket" }, 3, true, null],
        },
        scope,
      ),
    ).toEqual({
      Variables: { WEFT_TABLE_NAME: "Weft-Table-ABC", WEFT_LEASE_SECONDS: "5" },
      List: ["weft-bucket-abc", 3, true, null],
    });
  });

  it("refuses what it cannot resolve, by name", () => {
    expect(() => resolveIntrinsics({ Ref: "Missing" }, scope)).toThrow(UnresolvableError);
    expect(() => resolveIntrinsics({ "Fn::GetAtt": ["Table", "StreamArn"] }, scope)).toThrow(/StreamArn/);
    expect(() => resolveIntrinsics({ "Fn::If": ["Cond", "a", "b"] }, scope)).toThrow(/Fn::If/);
    expect(() => resolveIntrinsics({ Ref: "AWS::NotificationARNs" }, scope)).toThrow(/pseudo/);
    expect(() => resolveString({ "Fn::Split": [",", "a,b"] }, scope, "X")).toThrow(/expected a string/);
  });
});

describe("referencedIds", () => {
  it("finds the logical ids of Ref, Fn::GetAtt and Fn::Sub, not pseudo parameters", () => {
    const ids = referencedIds({
      A: { Ref: "Table" },
      B: { "Fn::GetAtt": ["Queue", "Arn"] },
      C: { "Fn::Sub": "${Bucket.Arn}-${AWS::Region}-${!Skip}" },
      D: { Ref: "AWS::AccountId" },
    });
    expect([...ids].sort()).toEqual(["Bucket", "Queue", "Table"]);
  });
});
