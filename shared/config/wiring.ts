/**
 * Wiring: builds the AWS SDK clients, the AWS-backed ports and the engine from configuration.
 * No engine logic lives here.
 */

import { AwsLambdaInvoker } from "../tasks/lambda-aws.js";
import { AwsSecretStore } from "../tasks/secrets-aws.js";
import type { TaskModule } from "../tasks/task-modules.js";
import type { TaskRegistry } from "../tasks/task-type.js";
import type { AwsClientOptions, CoreAwsClients } from "./aws-clients.js";
import type { WeftConfig } from "./env.js";
import { createCoreAwsClients } from "./s3-clients.js";
import { createTaskAwsClients, type TaskAwsClients } from "./task-clients.js";
import { deployedTaskRegistry } from "./worker-engine.js";

export type {
  AwsClientOptions,
  ClientEndpoints,
  CoreAwsClients,
} from "./aws-clients.js";
export type { AwsEndpoints } from "./env.js";
export { engineOptionsFromConfig, powertoolsEngineLogger } from "./function-engine.js";
export { createAwsPorts, createCoreAwsClients } from "./s3-clients.js";
export { createTaskAwsClients, type TaskAwsClients } from "./task-clients.js";

export { createEngineFromEnv, deployedTaskRegistry } from "./worker-engine.js";

export interface AwsClients extends CoreAwsClients, TaskAwsClients {
  /** Releases the clients' sockets (the local runtime calls it on stop; Lambda never needs to). */
  destroy(): void;
}

/**
 * The AWS clients of weft, with every setting they need, in one place: the deployed functions, the
 * local runtime and the tests all build theirs here (the core ones in aws-clients.ts and
 * s3-clients.ts, and the ones only the worker's task types call in task-clients.ts).
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

/**
 * deployedTaskRegistry (worker-engine.ts) on clients made at once: the local runtime's and the
 * tests' way; the deployed worker makes the Lambda and secret clients on first use instead.
 */
export function createDeployedTaskRegistry(
  config: WeftConfig,
  clients: Pick<AwsClients, "eventBridge" | "lambda" | "secretsManager" | "ssm">,
  taskModules: readonly TaskModule[] = [],
): TaskRegistry {
  return deployedTaskRegistry(
    config,
    {
      eventBridge: clients.eventBridge,
      lambda: new AwsLambdaInvoker(clients.lambda),
      secrets: new AwsSecretStore(clients.secretsManager, clients.ssm),
    },
    taskModules,
  );
}
