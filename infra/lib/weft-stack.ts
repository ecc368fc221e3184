import { CfnOutput, Stack, type StackProps } from "aws-cdk-lib";
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
      const topic = new sns.Topic(this, "AlarmTopic", {
        displayName: "weft alarms",
        enforceSSL: true,
        masterKey: kms.Alias.fromAliasName(this, "SnsKey", "alias/aws/sns"),
      });
      topic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
      this.alarmTopic = topic;
    }

    this.weft = new WeftOrchestrator(this, "Weft", {
      ...props.weft,
      ...(this.alarmTopic ? { alarmTopic: this.alarmTopic } : {}),
    });

    new CfnOutput(this, "ApiUrl", { value: `${this.weft.api.apiEndpoint}/`, description: "weft HTTP API base URL" });
    new CfnOutput(this, "TableName", { value: this.weft.table.tableName });
    new CfnOutput(this, "TaskQueueUrl", { value: this.weft.taskQueue.queueUrl });
    new CfnOutput(this, "DeadLetterQueueUrl", { value: this.weft.deadLetterQueue.queueUrl });
    new CfnOutput(this, "EventBusName", { value: this.weft.eventBus.eventBusName });
  }
}
