import { App, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks } from "cdk-nag";
import { weftStackPropsFromContext } from "../lib/context.js";
import { WeftStack } from "../lib/weft-stack.js";

// Environment-agnostic on purpose: `cdk synth` needs no credentials and makes no lookups.
// `cdk deploy` takes the account and region from the caller's AWS profile.
const app = new App();
const { stackName, ...props } = weftStackPropsFromContext((key) => app.node.tryGetContext(key));
new WeftStack(app, stackName, props);
// cdk-nag (AWS Solutions pack) runs as a policy validation plugin: an unacknowledged finding fails
// synthesis. Acknowledgements, each with its reason, live in infra/lib/nag-suppressions.ts.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
app.synth();
