/**
 * Wiring: builds the AWS SDK clients, the AWS-backed ports and the engine from configuration.
 * No engine logic lives here.
 */

import { EventBridgeSender } from "../tasks/emit-eventbridge.js";
import { createFullTaskRegistry } from "../tasks/full-registry.js";
import { AwsLambdaInvoker } from "../tasks/lambda-aws.js";
import { AwsSecretStore } from "../tasks/secrets-aws.js";
import { collectTaskTypes, type TaskModule } from "../tasks/task-modules.js";
import type { TaskRegistry } from "../tasks/task-type.js";
import type { AwsClientOptions, CoreAwsClients } from "./aws-clients.js";
import type { WeftConfig } from "./env.js";
import { deployedHttpEgress } from "./function-engine.js";
import { createCoreAwsClients } from "./s3-clients.js";
import { createTaskAwsClients, type TaskAwsClients } from "./task-clients.js";

export type {
  AwsClientOptions,
  ClientEndpoints,
  CoreAwsClients,
} from "./aws-clients.js";
export type { AwsEndpoints } from "./env.js";
export { engineOptionsFromConfig, powertoolsEngineLogger } from "./function-engine.js";
export { createAwsPorts, createCoreAwsClients } from "./s3-clients.js";
export { createTaskAwsClients, type TaskAwsClients } from "./task-clients.js";
export { createEngineFromEnv } from "./worker-engine.js";

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
 * Every task type a deployed function knows: the built-ins, `http`, `lambda` (invoking the user's
 * functions), `emit` (to the lifecycle bus or a named one), and the custom task types of the modules
 * bundled into it (the construct's `tasks` folder). The api function needs them too: params are
 * checked at submit.
 */
export function createDeployedTaskRegistry(
  config: WeftConfig,
  clients: Pick<AwsClients, "eventBridge" | "lambda" | "secretsManager" | "ssm">,
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
