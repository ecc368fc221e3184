import { Duration } from "aws-cdk-lib";
import { Match } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { METRIC, METRICS_NAMESPACE, METRICS_SERVICE } from "../../../shared/engine/metrics.js";
import { baseSynth, type CfnResource, resource, resourcesOfType, synthWeft } from "../fixture.js";

export function alarmsSuite(): void {
  const base = baseSynth();
  const topicArn = "arn:aws:sns:eu-west-1:123456789012:ops-alarms";
  const withTopic = synthWeft({ alarmTopicArn: topicArn }, "WeftTopic");
  const withEmail = synthWeft({ alarmEmail: "ops@example.test" }, "WeftEmail");
  const tuned = synthWeft(
    {
      weft: {
        alarmThresholds: {
          queueDepthWarning: 40,
          queueDepthCritical: 400,
          nodeFailureRatePercent: 25,
          nodeWaitTimeP90: Duration.seconds(30),
          poolTaskWait: Duration.minutes(20),
        },
      },
    },
    "WeftTuned",
  );
  const ALARM_COUNT = 14;

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

    const service = [{ Name: "service", Value: METRICS_SERVICE }];
    /** The alarm on weft's own metric `metricName` (namespace Weft, dimension service). */
    const weftAlarm = (synth: typeof base, metricName: string) =>
      alarmOn(synth, METRICS_NAMESPACE, metricName, service[0]);
    /** Alarms on SQS's visible messages of the task queue, lowest threshold first. */
    const queueDepthAlarms = (synth: typeof base) =>
      alarms(synth)
        .map(([, a]) => a.Properties as Record<string, unknown>)
        .filter(
          (a) =>
            a.MetricName === "ApproximateNumberOfMessagesVisible" &&
            JSON.stringify(a.Dimensions).includes(JSON.stringify(queueName(weft.taskQueue))),
        )
        .sort((a, b) => (a.Threshold as number) - (b.Threshold as number));
    /** The metric-math alarm on the node failure rate, and its metrics by id. */
    const failureRate = (synth: typeof base) => {
      const found = alarms(synth)
        .map(([, a]) => a.Properties as Record<string, unknown>)
        .filter((a) => JSON.stringify(a.Metrics ?? []).includes(METRIC.nodesFailed));
      expect(found).toHaveLength(1);
      const alarm = found[0]!;
      const metrics = alarm.Metrics as Array<{
        Id: string;
        Expression?: string;
        ReturnData?: boolean;
        MetricStat?: {
          Metric: { Namespace: string; MetricName: string; Dimensions: unknown };
          Stat: string;
          Period: number;
        };
      }>;
      return { alarm, metrics };
    };

    it("alarms on the task queue's depth: a warning above 100 and a critical alarm above 500", () => {
      const [warning, critical] = queueDepthAlarms(base);
      expect(queueDepthAlarms(base)).toHaveLength(2);
      for (const [alarm, threshold] of [
        [warning, 100],
        [critical, 500],
      ] as const) {
        expect(alarm).toMatchObject({
          Namespace: "AWS/SQS",
          Statistic: "Maximum",
          Threshold: threshold,
          ComparisonOperator: "GreaterThanThreshold",
          Period: 60,
          EvaluationPeriods: 5,
          DatapointsToAlarm: 3,
        });
        expect(alarm?.AlarmDescription).toContain(`more than ${threshold} task messages`);
      }
      expect(warning?.AlarmDescription).toMatch(/warning/);
      expect(critical?.AlarmDescription).toMatch(/critical/);
    });

    it("alarms on a node failure rate above 10% over 5 minutes: failed / (completed + failed)", () => {
      const { alarm, metrics } = failureRate(base);
      expect(alarm).toMatchObject({
        Threshold: 10,
        ComparisonOperator: "GreaterThanThreshold",
        EvaluationPeriods: 1,
      });
      const expression = metrics.find((m) => m.Expression !== undefined);
      expect(expression?.ReturnData).not.toBe(false);
      const byName = Object.fromEntries(
        metrics.filter((m) => m.MetricStat).map((m) => [m.MetricStat!.Metric.MetricName, m]),
      );
      for (const name of [METRIC.nodesCompleted, METRIC.nodesFailed]) {
        expect(byName[name]?.MetricStat).toMatchObject({
          Metric: { Namespace: METRICS_NAMESPACE, MetricName: name, Dimensions: service },
          Stat: "Sum",
          Period: 300,
        });
      }
      const completed = byName[METRIC.nodesCompleted]!.Id;
      const failed = byName[METRIC.nodesFailed]!.Id;
      expect(expression?.Expression).toBe(
        `IF(FILL(${completed}, 0) + FILL(${failed}, 0) > 0, 100 * FILL(${failed}, 0) / (FILL(${completed}, 0) + FILL(${failed}, 0)), 0)`,
      );
    });

    it("alarms on node wait time p90 above 60 s", () => {
      expect(weftAlarm(base, METRIC.nodeWaitTime)).toMatchObject({
        ExtendedStatistic: "p90",
        Threshold: 60_000,
        ComparisonOperator: "GreaterThanThreshold",
        EvaluationPeriods: 5,
        DatapointsToAlarm: 3,
      });
    });

    it("alarms on any dead letter the engine records, instead of on the drained DLQ", () => {
      expect(weftAlarm(base, METRIC.deadLetters)).toMatchObject({
        Statistic: "Sum",
        Threshold: 0,
        ComparisonOperator: "GreaterThanThreshold",
        EvaluationPeriods: 1,
        TreatMissingData: "notBreaching",
      });
      const onDlq = alarms(base).filter(([, a]) =>
        JSON.stringify(a.Properties?.Dimensions ?? []).includes(
          JSON.stringify(queueName(weft.deadLetterQueue)),
        ),
      );
      expect(onDlq).toEqual([]);
    });

    it("alarms on an external worker pool with ready tasks and no healthy worker", () => {
      expect(weftAlarm(base, METRIC.poolsStarved)).toMatchObject({
        Statistic: "Maximum",
        Threshold: 0,
        ComparisonOperator: "GreaterThanThreshold",
        EvaluationPeriods: 3,
      });
    });

    it("alarms on a task waiting in an external worker pool over 5 minutes", () => {
      expect(weftAlarm(base, METRIC.poolOldestTaskAge)).toMatchObject({
        Statistic: "Maximum",
        Threshold: 300_000,
        ComparisonOperator: "GreaterThanThreshold",
        EvaluationPeriods: 1,
      });
    });

    it("takes every threshold from the alarmThresholds prop", () => {
      expect(queueDepthAlarms(tuned).map((a) => a.Threshold)).toEqual([40, 400]);
      expect(failureRate(tuned).alarm.Threshold).toBe(25);
      expect(weftAlarm(tuned, METRIC.nodeWaitTime).Threshold).toBe(30_000);
      expect(weftAlarm(tuned, METRIC.poolOldestTaskAge).Threshold).toBe(1_200_000);
      expect(weftAlarm(tuned, METRIC.poolOldestTaskAge).AlarmDescription).toContain("20 minutes");
    });

    it("tells in each alarm's description what to do", () => {
      const says = (metricName: string, text: string) =>
        expect(weftAlarm(base, metricName).AlarmDescription as string).toContain(text);
      says(METRIC.deadLetters, "weft dlq list");
      says(METRIC.deadLetters, "weft dlq redrive");
      says(METRIC.poolsStarved, "weft workers");
      says(METRIC.poolOldestTaskAge, "weft workers");
      says(METRIC.sweeps, "schedule");
      expect(failureRate(base).alarm.AlarmDescription).toContain("weft dlq list");
      for (const alarm of queueDepthAlarms(base))
        expect(alarm.AlarmDescription).toContain("workerMaxConcurrency");
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
      // Not running: no sweep finished (the engine's count), whether not invoked, failing or skipped.
      expect(weftAlarm(base, METRIC.sweeps)).toMatchObject({
        Statistic: "Sum",
        Period: 60,
        EvaluationPeriods: 5,
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
      expect(alarms(base)).toHaveLength(ALARM_COUNT);
      for (const [, alarm] of alarms(base)) {
        expect(alarm.Properties?.AlarmActions).toBeUndefined();
        expect(alarm.Properties?.AlarmDescription).toMatch(/^weft: /);
      }
    });

    it("notifies the given topic on ALARM and OK", () => {
      expect(alarms(withTopic)).toHaveLength(ALARM_COUNT);
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
        ...Object.values(METRIC),
      ]) {
        expect(body).toContain(text);
      }
      for (const kind of ["api", "worker", "sweeper", "dlq"] as const) {
        expect(body).toContain(base.functionId(kind));
      }
    });
  });
}
