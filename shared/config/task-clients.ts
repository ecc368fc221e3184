/**
 * The clients only the worker's task types call: `lambda`, and the `http` task's secret stores. A
 * deployed worker loads this module by `import()` when a `lambda` task first runs or an `http` task
 * first reads a secret (worker-engine.ts); the local runtime and the tests make them at once
 * (createAwsClients in wiring.ts).
 */
import { LambdaClient } from "@aws-sdk/client-lambda";
import { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { SSMClient } from "@aws-sdk/client-ssm";
import { AwsLambdaInvoker } from "../tasks/lambda-aws.js";
import { AwsSecretStore } from "../tasks/secrets-aws.js";
import { type AwsClientOptions, clientMaker } from "./aws-clients.js";

export interface TaskAwsClients {
  /** Invokes the user's functions for the `lambda` task type. */
  lambda: LambdaClient;
  /** Read the `http` task's secret references: Secrets Manager, and SSM for `ssm:` names. */
  secretsManager: SecretsManagerClient;
  ssm: SSMClient;
  /** Releases the clients' sockets (the local runtime calls it on stop; Lambda never needs to). */
  destroy(): void;
}

export function createTaskAwsClients(options: AwsClientOptions = {}): TaskAwsClients {
  const make = clientMaker(options);
  const lambda = make("lambda", (config) => new LambdaClient(config));
  const secretsManager = make("secretsmanager", (config) => new SecretsManagerClient(config));
  const ssm = make("ssm", (config) => new SSMClient(config));
  return {
    lambda,
    secretsManager,
    ssm,
    destroy() {
      lambda.destroy();
      secretsManager.destroy();
      ssm.destroy();
    },
  };
}

/** The `lambda` task's invoker on a Lambda client of its own. */
export function createLambdaInvoker(options: AwsClientOptions = {}): AwsLambdaInvoker {
  return new AwsLambdaInvoker(clientMaker(options)("lambda", (config) => new LambdaClient(config)));
}

/** The `http` task's secret store on Secrets Manager and SSM clients of its own. */
export function createSecretStore(options: AwsClientOptions = {}): AwsSecretStore {
  const make = clientMaker(options);
  return new AwsSecretStore(
    make("secretsmanager", (config) => new SecretsManagerClient(config)),
    make("ssm", (config) => new SSMClient(config)),
  );
}
