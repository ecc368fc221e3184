import { Duration } from "aws-cdk-lib";
import type * as apigwv2 from "aws-cdk-lib/aws-apigatewayv2";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import { SnsAction } from "aws-cdk-lib/aws-cloudwatch-actions";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import type * as sns from "aws-cdk-lib/aws-sns";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import { METRIC, METRICS_NAMESPACE, METRICS_SERVICE, type MetricName } from "../../shared/engine/metrics.js";

/**
 * Thresholds of the alarms on weft's own metrics and the task queue (docs/observability.md). Every
 * one is optional; the defaults suit production.
 */
export interface WeftAlarmThresholds {
  /** Task messages waiting in the queue (visible) above which the warning alarm fires. @default 100 */
  readonly queueDepthWarning?: number;
  /** Task messages waiting in the queue above which the critical alarm fires. @default 500 */
  readonly queueDepthCritical?: number;
  /**
   * Percentage of the nodes ending in 5 minutes that failed for good, failed / (completed + failed),
   * above which the failure-rate alarm fires. @default 10
   */
  readonly nodeFailureRatePercent?: number;
  /** 90th percentile of node wait time (due → claimed) above which the wait alarm fires. @default 60 seconds */
  readonly nodeWaitTimeP90?: Duration;
  /** How long a task may wait in an external worker pool before its alarm fires. @default 5 minutes */
  readonly poolTaskWait?: Duration;
}

export const DEFAULT_ALARM_THRESHOLDS = {
  queueDepthWarning: 100,
  queueDepthCritical: 500,
  nodeFailureRatePercent: 10,
  nodeWaitTimeP90: Duration.seconds(60),
  poolTaskWait: Duration.minutes(5),
} as const satisfies Required<WeftAlarmThresholds>;

export interface WeftAlarmsProps {
  readonly taskQueue: sqs.IQueue;
  readonly deadLetterQueue: sqs.IQueue;
  readonly api: apigwv2.IHttpApi;
  readonly apiFunction: lambda.IFunction;
  readonly workerFunction: lambda.IFunction;
  readonly sweeperFunction: lambda.IFunction;
  readonly dlqFunction: lambda.IFunction;
  readonly oldestTaskAgeThreshold: Duration;
  /** Thresholds of the alarms on weft's metrics; each left out takes DEFAULT_ALARM_THRESHOLDS'. */
  readonly thresholds?: WeftAlarmThresholds;
  /** The `service` dimension the functions' metrics carry. @default "weft" (METRICS_SERVICE) */
  readonly metricsService?: string;
  readonly alarmTopic?: sns.ITopic;
}

/** CloudWatch alarms on the signals that mean work is stuck or failing, and a dashboard. */
export class WeftAlarms extends Construct {
  readonly queueDepthWarning: cloudwatch.Alarm;
  readonly queueDepthCritical: cloudwatch.Alarm;
  readonly oldestTaskAge: cloudwatch.Alarm;
  readonly nodeFailureRate: cloudwatch.Alarm;
  readonly nodeWaitTime: cloudwatch.Alarm;
  readonly deadLetterRecorded: cloudwatch.Alarm;
  readonly workerPoolStarved: cloudwatch.Alarm;
  readonly workerPoolTaskWaiting: cloudwatch.Alarm;
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
    const thresholds = { ...DEFAULT_ALARM_THRESHOLDS, ...props.thresholds };
    // The engine's metrics (shared/engine/metrics.ts), as the functions write them (EMF): under the
    // service dimension alone, which holds the total over workflows and pools.
    const service = props.metricsService ?? METRICS_SERVICE;
    const weft = (name: MetricName, statistic: string, period: Duration = oneMinute) =>
      new cloudwatch.Metric({
        namespace: METRICS_NAMESPACE,
        metricName: name,
        dimensionsMap: { service },
        statistic,
        period,
      });

    const queueDepth = (level: "Warning" | "Critical", threshold: number) =>
      new cloudwatch.Alarm(this, `TaskQueueDepth${level}`, {
        alarmDescription:
          `weft: more than ${threshold} task messages wait in the task queue (3 of 5 minutes; ${level.toLowerCase()}): ` +
          "the workers fall behind. Look at the dashboard's Worker throttles and errors; raise workerMaxConcurrency " +
          "(and the account's Lambda concurrency) if they are throttled; `weft list --status RUNNING` shows what runs.",
        metric: props.taskQueue.metricApproximateNumberOfMessagesVisible({
          period: oneMinute,
          statistic: cloudwatch.Stats.MAXIMUM,
        }),
        threshold,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 5,
        datapointsToAlarm: 3,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
    this.queueDepthWarning = queueDepth("Warning", thresholds.queueDepthWarning);
    this.queueDepthCritical = queueDepth("Critical", thresholds.queueDepthCritical);

    this.oldestTaskAge = new cloudwatch.Alarm(this, "OldestTaskMessageAge", {
      alarmDescription:
        `weft: a task has waited in the queue longer than ${props.oldestTaskAgeThreshold.toHumanString()} (workers stuck, throttled or failing). ` +
        "Look at the Worker errors, throttles and duration on the dashboard and the worker's logs.",
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

    // failed / (completed + failed) over 5 minutes, in percent; no node ended: 0, not missing data.
    this.nodeFailureRate = new cloudwatch.Alarm(this, "NodeFailureRate", {
      alarmDescription:
        `weft: more than ${thresholds.nodeFailureRatePercent}% of the nodes that ended in 5 minutes failed for good. ` +
        "`weft list --status FAILED` lists their executions and `weft events <execution-id>` says why; " +
        "`weft dlq list` shows the terminal failures; fix the cause, then `weft dlq redrive`.",
      metric: new cloudwatch.MathExpression({
        label: "Node failure rate (%)",
        expression:
          "IF(FILL(completed, 0) + FILL(failed, 0) > 0, 100 * FILL(failed, 0) / (FILL(completed, 0) + FILL(failed, 0)), 0)",
        usingMetrics: {
          completed: weft(METRIC.nodesCompleted, cloudwatch.Stats.SUM, fiveMinutes),
          failed: weft(METRIC.nodesFailed, cloudwatch.Stats.SUM, fiveMinutes),
        },
        period: fiveMinutes,
      }),
      threshold: thresholds.nodeFailureRatePercent,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });

    this.nodeWaitTime = new cloudwatch.Alarm(this, "NodeWaitTimeP90", {
      alarmDescription:
        `weft: the 90th percentile of node wait time (due to started) is above ${thresholds.nodeWaitTimeP90.toHumanString()} ` +
        "(3 of 5 minutes): ready nodes wait for a worker. Look at the task queue's depth and the Worker throttles " +
        "on the dashboard; raise workerMaxConcurrency or the account's Lambda concurrency.",
      metric: weft(METRIC.nodeWaitTime, cloudwatch.Stats.p(90)),
      threshold: thresholds.nodeWaitTimeP90.toMilliseconds(),
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 5,
      datapointsToAlarm: 3,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });

    // Replaces an alarm on the dead-letter queue's visible messages: the DLQ function drains that
    // queue within seconds (it records each message as a dead letter, then deletes it), so the queue
    // is nearly always empty, and terminal failures never pass through it at all. The engine counts
    // both ways in when it records them; DlqConsumerErrors covers a DLQ function that cannot.
    this.deadLetterRecorded = new cloudwatch.Alarm(this, "DeadLetterRecorded", {
      alarmDescription:
        "weft: work was dead-lettered (a terminal error, or a task message SQS gave up on). " +
        "`weft dlq list` shows each with its error; fix the cause, then `weft dlq redrive` (all, or by id).",
      metric: weft(METRIC.deadLetters, cloudwatch.Stats.SUM),
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });

    // The sweeper measures the pools once a minute; the alarms read the levels across pools (an
    // alarm cannot range over pool names it does not know), the dashboard each pool's.
    this.workerPoolStarved = new cloudwatch.Alarm(this, "WorkerPoolWithoutHealthyWorkers", {
      alarmDescription:
        "weft: an external worker pool has ready tasks and no healthy worker (3 minutes). `weft workers` shows " +
        "each pool's workers and their health; start workers for it (`weft worker --pool <pool> …`). The " +
        "dashboard's pool widgets say which pool.",
      metric: weft(METRIC.poolsStarved, cloudwatch.Stats.MAXIMUM),
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 3,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });

    this.workerPoolTaskWaiting = new cloudwatch.Alarm(this, "WorkerPoolTaskWaiting", {
      alarmDescription:
        `weft: a task has waited in an external worker pool for more than ${thresholds.poolTaskWait.toHumanString()}. ` +
        "`weft workers` shows each pool's workers, their health and what they hold: add workers to the pool, " +
        "or check that one fits the node's runsOn (executors, capabilities, labels, allowed workers).",
      metric: weft(METRIC.poolOldestTaskAge, cloudwatch.Stats.MAXIMUM),
      threshold: thresholds.poolTaskWait.toMilliseconds(),
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });

    this.workerErrors = new cloudwatch.Alarm(this, "WorkerErrors", {
      alarmDescription:
        "weft: worker invocations failed as a whole (crash or timeout, not task failures): their messages come back " +
        "and, after 5 receives, are dead-lettered. Read the worker's logs for the error.",
      metric: props.workerFunction.metricErrors({ period: fiveMinutes, statistic: cloudwatch.Stats.SUM }),
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });

    this.workerThrottles = new cloudwatch.Alarm(this, "WorkerThrottles", {
      alarmDescription:
        "weft: worker invocations were throttled (account concurrency exhausted): ask for a higher Lambda " +
        "concurrency limit, or lower workerMaxConcurrency so other functions keep theirs.",
      metric: props.workerFunction.metricThrottles({ period: fiveMinutes, statistic: cloudwatch.Stats.SUM }),
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });

    this.sweeperErrors = new cloudwatch.Alarm(this, "SweeperErrors", {
      alarmDescription:
        "weft: the sweeper failed in 3 of the last 5 minutes (lease recovery and due work stalled). Read the " +
        'sweeper\'s logs ("sweep failed") for the error.',
      metric: props.sweeperFunction.metricErrors({ period: oneMinute, statistic: cloudwatch.Stats.SUM }),
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 5,
      datapointsToAlarm: 3,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });

    // On the engine's count of finished sweeps rather than the function's invocations: a sweeper
    // invoked every minute whose sweeps fail, or are always skipped for a lease another process
    // holds, recovers nothing either.
    this.sweeperNotRunning = new cloudwatch.Alarm(this, "SweeperNotRunning", {
      alarmDescription:
        "weft: no sweep finished for 5 minutes, so expired leases, lost messages and due retries are not " +
        "recovered. Check the sweeper's schedule (enabled?), its errors and logs (SweeperErrors), and whether " +
        "another process sweeps this table (a local runtime pointed at it holds the sweeper lease).",
      metric: weft(METRIC.sweeps, cloudwatch.Stats.SUM),
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
      evaluationPeriods: 5,
      treatMissingData: cloudwatch.TreatMissingData.BREACHING,
    });

    this.apiErrors = new cloudwatch.Alarm(this, "ApiErrors", {
      alarmDescription:
        "weft: api function invocations failed (HTTP 5xx to callers). Read the api function's logs " +
        '("unexpected error while handling a request").',
      metric: props.apiFunction.metricErrors({ period: fiveMinutes, statistic: cloudwatch.Stats.SUM }),
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });

    this.dlqConsumerErrors = new cloudwatch.Alarm(this, "DlqConsumerErrors", {
      alarmDescription:
        "weft: the DLQ consumer failed: dead-lettered task messages are not recorded (nor their nodes failed). " +
        "Read its logs; the messages stay in the dead-letter queue (14 days) and are recorded once it works.",
      metric: props.dlqFunction.metricErrors({ period: fiveMinutes, statistic: cloudwatch.Stats.SUM }),
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });

    this.all = [
      this.queueDepthWarning,
      this.queueDepthCritical,
      this.oldestTaskAge,
      this.nodeFailureRate,
      this.nodeWaitTime,
      this.deadLetterRecorded,
      this.workerPoolStarved,
      this.workerPoolTaskWaiting,
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

    // Every series of a breakdown (a workflow's, a pool's), whatever their names: dashboards may search.
    const search = (name: MetricName, dimension: "workflow" | "pool", statistic: string) =>
      new cloudwatch.MathExpression({
        expression: `SEARCH('{${METRICS_NAMESPACE},service,${dimension}} MetricName="${name}" service="${service}"', '${statistic}', 60)`,
        label: "",
        period: oneMinute,
      });
    const fnWidgets = (title: string, fn: lambda.IFunction, extra: cloudwatch.IMetric[] = []) =>
      new cloudwatch.GraphWidget({
        title,
        width: 8,
        left: [fn.metricInvocations(), fn.metricErrors(), fn.metricThrottles(), ...extra],
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
            title: "Dead letters",
            width: 12,
            left: [
              weft(METRIC.deadLetters, cloudwatch.Stats.SUM),
              props.deadLetterQueue.metricApproximateNumberOfMessagesVisible(),
            ],
          }),
        ],
        [
          new cloudwatch.GraphWidget({
            title: "Executions",
            width: 8,
            left: [
              weft(METRIC.executionsStarted, cloudwatch.Stats.SUM),
              weft(METRIC.executionsSucceeded, cloudwatch.Stats.SUM),
              weft(METRIC.executionsFailed, cloudwatch.Stats.SUM),
              weft(METRIC.executionsCancelled, cloudwatch.Stats.SUM),
            ],
          }),
          new cloudwatch.GraphWidget({
            title: "Nodes",
            width: 8,
            left: [
              weft(METRIC.nodesCompleted, cloudwatch.Stats.SUM),
              weft(METRIC.nodesFailed, cloudwatch.Stats.SUM),
              weft(METRIC.nodesRetried, cloudwatch.Stats.SUM),
              weft(METRIC.nodesCancelled, cloudwatch.Stats.SUM),
            ],
            right: [this.nodeFailureRate.metric],
          }),
          new cloudwatch.GraphWidget({
            title: "Node time (ms)",
            width: 8,
            left: [
              weft(METRIC.nodeWaitTime, cloudwatch.Stats.p(50)),
              weft(METRIC.nodeWaitTime, cloudwatch.Stats.p(90)),
            ],
            right: [
              weft(METRIC.nodeDuration, cloudwatch.Stats.p(50)),
              weft(METRIC.nodeDuration, cloudwatch.Stats.p(99)),
            ],
          }),
        ],
        [
          new cloudwatch.GraphWidget({
            title: "Executions failed, by workflow",
            width: 8,
            left: [search(METRIC.executionsFailed, "workflow", cloudwatch.Stats.SUM)],
          }),
          new cloudwatch.GraphWidget({
            title: "External worker pools: ready tasks and healthy workers",
            width: 8,
            left: [search(METRIC.poolReadyTasks, "pool", cloudwatch.Stats.MAXIMUM)],
            right: [search(METRIC.poolHealthyWorkers, "pool", cloudwatch.Stats.MINIMUM)],
          }),
          new cloudwatch.GraphWidget({
            title: "External worker pools: oldest task (ms)",
            width: 8,
            left: [search(METRIC.poolOldestTaskAge, "pool", cloudwatch.Stats.MAXIMUM)],
            right: [weft(METRIC.poolsStarved, cloudwatch.Stats.MAXIMUM)],
          }),
        ],
        [
          fnWidgets("Worker", props.workerFunction),
          fnWidgets("Sweeper", props.sweeperFunction, [weft(METRIC.sweeps, cloudwatch.Stats.SUM)]),
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
