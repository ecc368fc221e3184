import { Duration, RemovalPolicy } from "aws-cdk-lib";
import { RetentionDays } from "aws-cdk-lib/aws-logs";
import { describe, expect, it } from "vitest";
import { weftStackPropsFromContext } from "../../infra/lib/context.js";

const read = (values: Record<string, unknown>) => (key: string) => values[key];

describe("weftStackPropsFromContext", () => {
  it("gives safe defaults with no context at all", () => {
    const props = weftStackPropsFromContext(read({}));
    expect(props.stackName).toBe("Weft");
    expect(props.weft).toEqual({ authorization: { kind: "iam" } });
    expect(props.alarmTopicArn).toBeUndefined();
    expect(props.alarmEmail).toBeUndefined();
  });

  it("parses string values the CLI passes with -c", () => {
    const props = weftStackPropsFromContext(
      read({
        "weft:stackName": "WeftDev",
        "weft:leaseSeconds": "120",
        "weft:workerTimeoutSeconds": "600",
        "weft:defaultMaxAttempts": "5",
        "weft:sweepFirstCheckSeconds": "30",
        "weft:sweepGraceSeconds": "45",
        "weft:retentionDays": "7",
        "weft:workerMaxConcurrency": "20",
        "weft:logLevel": "debug",
        "weft:logRetentionDays": "14",
        "weft:deletionProtection": "false",
        "weft:removalPolicy": "destroy",
        "weft:auth": "jwt",
        "weft:jwtIssuer": "https://auth.example.test/",
        "weft:jwtAudience": "a, b",
        "weft:alarmEmail": "ops@example.test",
        "weft:invokableFunctionArns":
          "arn:aws:lambda:eu-west-1:1:function:f,arn:aws:lambda:eu-west-1:1:function:g",
        "weft:extraEventBusArns": "arn:aws:events:eu-west-1:1:event-bus/x",
      }),
    );
    expect(props.stackName).toBe("WeftDev");
    expect(props.alarmEmail).toBe("ops@example.test");
    const weft = props.weft!;
    expect(weft.leaseDuration?.toSeconds()).toBe(120);
    expect(weft.workerTimeout?.toSeconds()).toBe(600);
    expect(weft.sweep?.firstCheck?.toSeconds()).toBe(30);
    expect(weft.sweep?.idle).toBeUndefined();
    expect(weft.sweep?.grace?.toSeconds()).toBe(45);
    expect(weft).toMatchObject({
      defaultMaxAttempts: 5,
      retentionDays: 7,
      workerMaxConcurrency: 20,
      logLevel: "DEBUG",
      logRetention: RetentionDays.TWO_WEEKS,
      tableDeletionProtection: false,
      removalPolicy: RemovalPolicy.DESTROY,
      authorization: { kind: "jwt", issuer: "https://auth.example.test/", audience: ["a", "b"] },
      invokableFunctionArns: [
        "arn:aws:lambda:eu-west-1:1:function:f",
        "arn:aws:lambda:eu-west-1:1:function:g",
      ],
      extraEventBusArns: ["arn:aws:events:eu-west-1:1:event-bus/x"],
    });
  });

  it("accepts JSON-typed values from cdk.json", () => {
    const props = weftStackPropsFromContext(
      read({
        "weft:leaseSeconds": 30,
        "weft:deletionProtection": true,
        "weft:jwtAudience": ["x"],
        "weft:auth": "iam",
      }),
    );
    expect(props.weft?.leaseDuration?.toSeconds()).toBe(Duration.seconds(30).toSeconds());
    expect(props.weft?.tableDeletionProtection).toBe(true);
  });

  it("refuses malformed values with the key named", () => {
    expect(() => weftStackPropsFromContext(read({ "weft:leaseSeconds": "1.5" }))).toThrow(
      /weft:leaseSeconds/,
    );
    // Settings the functions read are refused at synthesis as the functions would refuse them.
    expect(() => weftStackPropsFromContext(read({ "weft:workerTimeoutSeconds": "901" }))).toThrow(
      /weft:workerTimeoutSeconds: must be at most 900/,
    );
    expect(() => weftStackPropsFromContext(read({ "weft:defaultMaxAttempts": "101" }))).toThrow(
      /weft:defaultMaxAttempts: must be at most 100/,
    );
    expect(() => weftStackPropsFromContext(read({ "weft:deletionProtection": "yes" }))).toThrow(
      /weft:deletionProtection/,
    );
    expect(() => weftStackPropsFromContext(read({ "weft:auth": "none" }))).toThrow(/weft:auth/);
    expect(() => weftStackPropsFromContext(read({ "weft:auth": "jwt" }))).toThrow(/jwtIssuer/);
    expect(() => weftStackPropsFromContext(read({ "weft:logRetentionDays": "8" }))).toThrow(
      /weft:logRetentionDays/,
    );
    expect(() => weftStackPropsFromContext(read({ "weft:removalPolicy": "snapshot" }))).toThrow(
      /weft:removalPolicy/,
    );
  });
});
