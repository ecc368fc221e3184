// The CDK app: one stack with weft in it. `npx cdk synth` builds it (your tasks/ bundled into the
// functions by esbuild); `npx cdk deploy` deploys it with your AWS credentials.
import { App, CfnOutput, Stack, type StackProps } from "aws-cdk-lib";
import type { Construct } from "constructs";
import { WeftOrchestrator } from "weft-orchestrator/cdk";

export class WorkflowsStack extends Stack {
  constructor(scope: Construct, id: string, props?: StackProps) {
    super(scope, id, props);
    const weft = new WeftOrchestrator(this, "Weft", { tasks: "./tasks" });
    new CfnOutput(this, "ApiUrl", { value: `${weft.api.apiEndpoint}/`, description: "weft's HTTP API" });
  }
}

const app = new App();
new WorkflowsStack(app, "__STACK_NAME__");
