import { Duration } from "aws-cdk-lib";
import type * as apigwv2 from "aws-cdk-lib/aws-apigatewayv2";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import { SnsAction } from "aws-cdk-lib/aws-cloudwatch-actions";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import type * as sns from "aws-cdk-lib/aws-sns";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";

export interface WeftAlarmsProps {
  readonly taskQueue: sqs.IQueue;
  readonly deadLetterQueue: sqs.IQueue;
  readonly api: apigwv2.IHttpApi;
  readonly apiFunction: lambda.IFunction;
  readonly workerFunction: lambda.IFunction;
  readonly sweeperFunction: lambda.IFunction;
  readonly dlqFunction: lambda.IFunction;
  readonly oldestTaskAgeThreshold: Duration;
  readonly alarmTopic?: sns.ITopic;
}

/** CloudWatch alarms on the signals that mean work is stuck or failing, and a dashboard. */
export class WeftAlarms extends Construct {
  readonly dlqNotEmpty: cloudwatch.Alarm;
  readonly oldestTaskAge: cloudwatch.Alarm;
  readonly workerErrors: cloudwatch.Alarm;
  readonly workerThrottles: cloudwatch.Alarm;
  readonly sweeperErrors: cloudwatch.Alarm;
  readonly sweeperNotRunning: cloudwatch.Alarm;
  readonly apiErrors: cloudwatch.Alarm;
  readonly dlqConsumerErrors: cloudwatch.Alarm;
  readonly all: readonly cloudwatch.Alarm[];
  readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: WeftAlarmsProps) {
    super(scope, id);
    const oneMinute = Duration.minutes(1);
    const fiveMinutes = Duration.minutes(5);

    this.dlqNotEmpty = new cloudwatch.Alarm(this, "DeadLetterQueueNotEmpty", {
      alarmDescription: "weft: work was dead-lettered (GET /dlq shows it; POST /dlq/redrive retries it)",
      metric: props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
        period: oneMinute,
        statistic: cloudwatch.Stats.MAXIMUM,
      }),
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });

    this.oldestTaskAge = new cloudwatch.Alarm(this, "OldestTaskMessageAge", {
      alarmDescription: `weft: a task has waited in the queue longer than ${props.oldestTaskAgeThreshold.toHumanString()} (workers stuck, throttled or failing)`,
      metric: props.taskQueue.metricApproximateAgeOfOldestMessage({
        period: oneMinute,
        statistic: cloudwatch.Stats.MAXIMUM,
      }),
      threshold: props.oldestTaskAgeThreshold.toSeconds(),
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 5,
      datapointsToAlarm: 3,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });

    this.workerErrors = new cloudwatch.Alarm(this, "WorkerErrors", {
      alarmDescription: "weft: worker invocations failed as a whole (crash or timeout, not task failures)",
      metric: props.workerFunction.metricErrors({ period: fiveMinutes, statistic: cloudwatch.Stats.SUM }),
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });

    this.workerThrottles = new cloudwatch.Alarm(this, "WorkerThrottles", {
      alarmDescription: "weft: worker invocations were throttled (account concurrency exhausted)",
      metric: props.workerFunction.metricThrottles({ period: fiveMinutes, statistic: cloudwatch.Stats.SUM }),
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });

    this.sweeperErrors = new cloudwatch.Alarm(this, "SweeperErrors", {
      alarmDescription:
        "weft: the sweeper failed in 3 of the last 5 minutes (lease recovery and due work stalled)",
      metric: props.sweeperFunction.metricErrors({ period: oneMinute, statistic: cloudwatch.Stats.SUM }),
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 5,
      datapointsToAlarm: 3,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });

    this.sweeperNotRunning = new cloudwatch.Alarm(this, "SweeperNotRunning", {
      alarmDescription: "weft: the sweeper has not run for 5 minutes (its schedule is disabled or failing)",
      metric: props.sweeperFunction.metricInvocations({ period: oneMinute, statistic: cloudwatch.Stats.SUM }),
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
      evaluationPeriods: 5,
      treatMissingData: cloudwatch.TreatMissingData.BREACHING,
    });

    this.apiErrors = new cloudwatch.Alarm(this, "ApiErrors", {
      alarmDescription: "weft: api function invocations failed (HTTP 5xx to callers)",
      metric: props.apiFunction.metricErrors({ period: fiveMinutes, statistic: cloudwatch.Stats.SUM }),
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });

    this.dlqConsumerErrors = new cloudwatch.Alarm(this, "DlqConsumerErrors", {
      alarmDescription: "weft: the DLQ consumer failed (dead-lettered work is not being recorded)",
      metric: props.dlqFunction.metricErrors({ period: fiveMinutes, statistic: cloudwatch.Stats.SUM }),
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });

    this.all = [
      this.dlqNotEmpty,
      this.oldestTaskAge,
      this.workerErrors,
      this.workerThrottles,
      this.sweeperErrors,
      this.sweeperNotRunning,
      this.apiErrors,
      this.dlqConsumerErrors,
    ];
    if (props.alarmTopic) {
      const action = new SnsAction(props.alarmTopic);
      for (const alarm of this.all) {
        alarm.addAlarmAction(action);
        alarm.addOkAction(action);
      }
    }

    const fnWidgets = (title: string, fn: lambda.IFunction) =>
      new cloudwatch.GraphWidget({
        title,
        width: 8,
        left: [fn.metricInvocations(), fn.metricErrors(), fn.metricThrottles()],
        right: [fn.metricDuration({ statistic: cloudwatch.Stats.p(99) })],
      });
    this.dashboard = new cloudwatch.Dashboard(this, "Dashboard", {
      defaultInterval: Duration.hours(3),
      widgets: [
        [new cloudwatch.AlarmStatusWidget({ title: "weft alarms", alarms: [...this.all], width: 24 })],
        [
          new cloudwatch.GraphWidget({
            title: "Task queue",
            width: 12,
            left: [
              props.taskQueue.metricApproximateNumberOfMessagesVisible(),
              props.taskQueue.metricApproximateNumberOfMessagesNotVisible(),
              props.taskQueue.metricNumberOfMessagesSent(),
            ],
            right: [props.taskQueue.metricApproximateAgeOfOldestMessage()],
          }),
          new cloudwatch.GraphWidget({
            title: "Dead-letter queue",
            width: 12,
            left: [props.deadLetterQueue.metricApproximateNumberOfMessagesVisible()],
          }),
        ],
        [
          fnWidgets("Worker", props.workerFunction),
          fnWidgets("Sweeper", props.sweeperFunction),
          fnWidgets("DLQ consumer", props.dlqFunction),
        ],
        [
          fnWidgets("API function", props.apiFunction),
          new cloudwatch.GraphWidget({
            title: "HTTP API",
            width: 16,
            left: [props.api.metricCount(), props.api.metricClientError(), props.api.metricServerError()],
            right: [props.api.metricLatency({ statistic: cloudwatch.Stats.p(99) })],
          }),
        ],
      ],
    });
  }
}
