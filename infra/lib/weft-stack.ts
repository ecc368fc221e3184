import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import * as kms from "aws-cdk-lib/aws-kms";
import * as sns from "aws-cdk-lib/aws-sns";
import * as subscriptions from "aws-cdk-lib/aws-sns-subscriptions";
import type { Construct } from "constructs";
import { WeftOrchestrator, type WeftOrchestratorProps } from "./weft-orchestrator.js";

export interface WeftStackProps extends StackProps {
  /** Props of the orchestrator (alarmTopic is set by the stack from the two props below). */
  readonly weft?: Omit<WeftOrchestratorProps, "alarmTopic">;
  /** Send alarms to this existing SNS topic. */
  readonly alarmTopicArn?: string;
  /** Create an encrypted SNS topic for the alarms and subscribe this address to it. */
  readonly alarmEmail?: string;
}

/** The sample stack: one WeftOrchestrator and the outputs a caller needs. */
export class WeftStack extends Stack {
  readonly weft: WeftOrchestrator;
  readonly alarmTopic: sns.ITopic | undefined;

  constructor(scope: Construct, id: string, props: WeftStackProps = {}) {
    super(scope, id, props);

    if (props.alarmTopicArn && props.alarmEmail) {
      throw new Error("weft: give either alarmTopicArn or alarmEmail, not both");
    }
    if (props.alarmTopicArn) {
      this.alarmTopic = sns.Topic.fromTopicArn(this, "AlarmTopic", props.alarmTopicArn);
    } else if (props.alarmEmail) {
      // CloudWatch cannot publish to a topic encrypted with the AWS managed aws/sns key (its key
      // policy is fixed), so the topic gets its own key that lets CloudWatch use it.
      const key = new kms.Key(this, "AlarmTopicKey", {
        description: "Encrypts the weft alarm topic",
        enableKeyRotation: true,
        removalPolicy: RemovalPolicy.DESTROY,
        pendingWindow: Duration.days(7),
      });
      key.addToResourcePolicy(
        new iam.PolicyStatement({
          sid: "AllowCloudWatchAlarmsToPublish",
          principals: [new iam.ServicePrincipal("cloudwatch.amazonaws.com")],
          actions: ["kms:Decrypt", "kms:GenerateDataKey*"],
          resources: ["*"],
          conditions: { StringEquals: { "aws:SourceAccount": this.account } },
        }),
      );
      const topic = new sns.Topic(this, "AlarmTopic", {
        displayName: "weft alarms",
        enforceSSL: true,
        masterKey: key,
      });
      topic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
      this.alarmTopic = topic;
    }

    this.weft = new WeftOrchestrator(this, "Weft", {
      ...props.weft,
      ...(this.alarmTopic ? { alarmTopic: this.alarmTopic } : {}),
    });

    new CfnOutput(this, "ApiUrl", {
      value: `${this.weft.api.apiEndpoint}/`,
      description: "weft HTTP API base URL",
    });
    new CfnOutput(this, "TableName", { value: this.weft.table.tableName });
    new CfnOutput(this, "TaskQueueUrl", { value: this.weft.taskQueue.queueUrl });
    new CfnOutput(this, "DeadLetterQueueUrl", { value: this.weft.deadLetterQueue.queueUrl });
    new CfnOutput(this, "EventBusName", { value: this.weft.eventBus.eventBusName });
  }
}
