/**
 * Wiring: builds the AWS SDK clients, the AWS-backed ports and the engine from configuration.
 * No engine logic lives here.
 */

import { LambdaClient } from "@aws-sdk/client-lambda";
import { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { SSMClient } from "@aws-sdk/client-ssm";
import type { Engine } from "../engine/engine.js";
import { EventBridgeSender } from "../tasks/emit-eventbridge.js";
import { AwsLambdaInvoker } from "../tasks/lambda-aws.js";
import { collectTaskTypes, createFullTaskRegistry, type TaskModule } from "../tasks/loader.js";
import { AwsSecretStore } from "../tasks/secrets-aws.js";
import type { TaskRegistry } from "../tasks/task-type.js";
import {
  type AwsClientOptions,
  type CoreAwsClients,
  clientMaker,
  createCoreAwsClients,
} from "./aws-clients.js";
import type { WeftConfig } from "./env.js";
import { deployedHttpEgress, type FunctionEngineOptions, functionEngineFromEnv } from "./function-engine.js";

export {
  type AwsClientOptions,
  type ClientEndpoints,
  type CoreAwsClients,
  createAwsPorts,
  createCoreAwsClients,
} from "./aws-clients.js";
export type { AwsEndpoints } from "./env.js";
export { engineOptionsFromConfig, powertoolsEngineLogger } from "./function-engine.js";

export interface AwsClients extends CoreAwsClients {
  /** Invokes the user's functions for the `lambda` task type. */
  lambda: LambdaClient;
  /** Read the `http` task's secret references: Secrets Manager, and SSM for `ssm:` names. */
  secretsManager: SecretsManagerClient;
  ssm: SSMClient;
  /** Releases the clients' sockets (the local runtime calls it on stop; Lambda never needs to). */
  destroy(): void;
}

/**
 * The AWS clients of weft, with every setting they need, in one place: the deployed functions, the
 * local runtime and the tests all build theirs here (the core ones in aws-clients.ts, and the ones
 * only the worker's task types call).
 */
export function createAwsClients(options: AwsClientOptions = {}): AwsClients {
  const core = createCoreAwsClients(options);
  const tasks = createTaskAwsClients(options);
  return {
    ...core,
    ...tasks,
    destroy() {
      core.destroy();
      tasks.destroy();
    },
  };
}

/** The clients only the worker's task types call: `lambda`, and the `http` task's secret stores. */
export function createTaskAwsClients(
  options: AwsClientOptions = {},
): Pick<AwsClients, "lambda" | "secretsManager" | "ssm" | "destroy"> {
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

/**
 * The engine as a deployed worker builds it: functionEngineFromEnv (function-engine.ts) with every
 * task type's runtime (createDeployedTaskRegistry). The api, the sweeper and the DLQ consumer, which
 * never run `http` or `lambda`, build theirs with those types' params alone (shared/tasks/declared.ts).
 */
export function createEngineFromEnv(
  env: Record<string, string | undefined> = process.env,
  options: Omit<FunctionEngineOptions, "tasks"> = {},
): Engine {
  return functionEngineFromEnv(env, {
    ...options,
    tasks: ({ config, clients, clientOptions, taskModules }) =>
      createDeployedTaskRegistry(config, { ...clients, ...createTaskAwsClients(clientOptions) }, taskModules),
  });
}

/**
 * Every task type a deployed function knows: the built-ins, `http`, `lambda` (invoking the user's
 * functions), `emit` (to the lifecycle bus or a named one), and the custom task types of the modules
 * bundled into it (the construct's `tasks` folder). The api function needs them too: params are
 * checked at submit.
 */
export function createDeployedTaskRegistry(
  config: WeftConfig,
  clients: AwsClients,
  taskModules: readonly TaskModule[] = [],
): TaskRegistry {
  return createFullTaskRegistry({
    customTasks: collectTaskTypes(taskModules),
    lambda: new AwsLambdaInvoker(clients.lambda),
    events: new EventBridgeSender(clients.eventBridge),
    lifecycleBusName: config.eventBusName,
    http: {
      egress: deployedHttpEgress(config),
      secrets: new AwsSecretStore(clients.secretsManager, clients.ssm),
    },
  });
}
