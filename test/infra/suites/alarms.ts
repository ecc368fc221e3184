import { Match } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { baseSynth, type CfnResource, resource, resourcesOfType, synthWeft } from "../fixture.js";

export function alarmsSuite(): void {
  const base = baseSynth();
  const topicArn = "arn:aws:sns:eu-west-1:123456789012:ops-alarms";
  const withTopic = synthWeft({ alarmTopicArn: topicArn }, "WeftTopic");
  const withEmail = synthWeft({ alarmEmail: "ops@example.test" }, "WeftEmail");

  const alarms = (synth: typeof base): Array<[string, CfnResource]> =>
    resourcesOfType(synth.json, "AWS::CloudWatch::Alarm");

  /** The alarm watching `metricName` in `namespace` with the given dimension value. */
  function alarmOn(synth: typeof base, namespace: string, metricName: string, dimension: unknown) {
    const found = alarms(synth).filter(
      ([, a]) =>
        a.Properties?.Namespace === namespace &&
        a.Properties?.MetricName === metricName &&
        JSON.stringify(a.Properties?.Dimensions).includes(JSON.stringify(dimension)),
    );
    expect(found, `${namespace} ${metricName}`).toHaveLength(1);
    return found[0]![1].Properties as Record<string, unknown>;
  }

  describe("CloudWatch alarms", () => {
    const weft = base.stack.weft;
    const queueName = (q: typeof weft.taskQueue) => ({ "Fn::GetAtt": [base.logicalId(q), "QueueName"] });
    const fnName = (kind: "api" | "worker" | "sweeper" | "dlq") => ({ Ref: base.functionId(kind) });

    it("alarms as soon as the DLQ holds a message", () => {
      expect(
        alarmOn(base, "AWS/SQS", "ApproximateNumberOfMessagesVisible", queueName(weft.deadLetterQueue)),
      ).toMatchObject({
        Statistic: "Maximum",
        Threshold: 0,
        ComparisonOperator: "GreaterThanThreshold",
        EvaluationPeriods: 1,
        Dimensions: [{ Name: "QueueName", Value: queueName(weft.deadLetterQueue) }],
      });
    });

    it("alarms on the age of the oldest task message", () => {
      expect(
        alarmOn(base, "AWS/SQS", "ApproximateAgeOfOldestMessage", queueName(weft.taskQueue)),
      ).toMatchObject({
        Statistic: "Maximum",
        Threshold: 900,
        ComparisonOperator: "GreaterThanThreshold",
      });
    });

    it("alarms on worker errors and throttles", () => {
      expect(alarmOn(base, "AWS/Lambda", "Errors", fnName("worker"))).toMatchObject({
        Statistic: "Sum",
        Threshold: 1,
        ComparisonOperator: "GreaterThanOrEqualToThreshold",
        Dimensions: [{ Name: "FunctionName", Value: fnName("worker") }],
      });
      expect(alarmOn(base, "AWS/Lambda", "Throttles", fnName("worker"))).toMatchObject({
        Statistic: "Sum",
        Threshold: 1,
        ComparisonOperator: "GreaterThanOrEqualToThreshold",
      });
    });

    it("alarms on sweeper failures and on the sweeper not running", () => {
      expect(alarmOn(base, "AWS/Lambda", "Errors", fnName("sweeper"))).toMatchObject({
        Statistic: "Sum",
        EvaluationPeriods: 5,
        DatapointsToAlarm: 3,
      });
      expect(alarmOn(base, "AWS/Lambda", "Invocations", fnName("sweeper"))).toMatchObject({
        ComparisonOperator: "LessThanThreshold",
        Threshold: 1,
        TreatMissingData: "breaching",
      });
    });

    it("alarms on api and DLQ consumer errors", () => {
      alarmOn(base, "AWS/Lambda", "Errors", fnName("api"));
      alarmOn(base, "AWS/Lambda", "Errors", fnName("dlq"));
    });

    it("has no actions when no topic is given", () => {
      expect(alarms(base)).toHaveLength(8);
      for (const [, alarm] of alarms(base)) {
        expect(alarm.Properties?.AlarmActions).toBeUndefined();
        expect(alarm.Properties?.AlarmDescription).toMatch(/^weft: /);
      }
    });

    it("notifies the given topic on ALARM and OK", () => {
      expect(alarms(withTopic)).toHaveLength(8);
      for (const [, alarm] of alarms(withTopic)) {
        expect(alarm.Properties?.AlarmActions).toEqual([topicArn]);
        expect(alarm.Properties?.OKActions).toEqual([topicArn]);
      }
    });

    it("can create an encrypted, TLS-only topic with an email subscription", () => {
      const [topicId, topic] = resourcesOfType(withEmail.json, "AWS::SNS::Topic")[0]!;
      const [keyId, key] = resourcesOfType(withEmail.json, "AWS::KMS::Key")[0]!;
      expect(topic.Properties?.KmsMasterKeyId).toEqual({ "Fn::GetAtt": [keyId, "Arn"] });
      // CloudWatch must be able to use the key, or alarm notifications are silently dropped.
      expect(key.Properties?.EnableKeyRotation).toBe(true);
      expect(key.Properties?.KeyPolicy).toMatchObject({
        Statement: expect.arrayContaining([
          expect.objectContaining({
            Effect: "Allow",
            Principal: { Service: "cloudwatch.amazonaws.com" },
            Action: ["kms:Decrypt", "kms:GenerateDataKey*"],
          }),
        ]),
      });
      withEmail.template.hasResourceProperties("AWS::SNS::Subscription", {
        Protocol: "email",
        Endpoint: "ops@example.test",
        TopicArn: { Ref: topicId },
      });
      withEmail.template.hasResourceProperties("AWS::SNS::TopicPolicy", {
        Topics: [{ Ref: topicId }],
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({ Effect: "Deny", Condition: { Bool: { "aws:SecureTransport": "false" } } }),
          ]),
        },
      });
      for (const [, alarm] of alarms(withEmail)) {
        expect(alarm.Properties?.AlarmActions).toEqual([{ Ref: topicId }]);
      }
    });
  });

  describe("dashboard", () => {
    it("shows the alarms, the queues and every function", () => {
      const dashboards = resourcesOfType(base.json, "AWS::CloudWatch::Dashboard");
      expect(dashboards).toHaveLength(1);
      const body = JSON.stringify(resource(base.json, dashboards[0]![0]).Properties?.DashboardBody);
      for (const text of [
        "ApproximateAgeOfOldestMessage",
        "ApproximateNumberOfMessagesVisible",
        "Throttles",
        "Errors",
      ]) {
        expect(body).toContain(text);
      }
      for (const kind of ["api", "worker", "sweeper", "dlq"] as const) {
        expect(body).toContain(base.functionId(kind));
      }
    });
  });
}
