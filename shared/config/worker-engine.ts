/**
 * The engine as a deployed worker builds it: functionEngineFromEnv (function-engine.ts) with every
 * task type's runtime. The clients of the `lambda` task and of the `http` task's secret references
 * (task-clients.ts) load on first use, and undici with the first `http` request (tasks/http.ts), so
 * a cold start loads none of them. The api, the sweeper and the DLQ consumer, which never run
 * `http` or `lambda`, build theirs with those types' params alone (shared/tasks/declared.ts).
 */
import type { EventBridgeClient } from "@aws-sdk/client-eventbridge";
import type { Engine } from "../engine/engine.js";
import { EventBridgeSender } from "../tasks/emit-eventbridge.js";
import { createFullTaskRegistry } from "../tasks/full-registry.js";
import type { LambdaInvoker } from "../tasks/lambda.js";
import { LazyLambdaInvoker, LazySecretStore } from "../tasks/lazy-aws.js";
import { AWS_SECRET_STORE, type SecretStore } from "../tasks/secrets.js";
import { collectTaskTypes, type TaskModule } from "../tasks/task-modules.js";
import type { TaskRegistry } from "../tasks/task-type.js";
import type { WeftConfig } from "./env.js";
import { deployedHttpEgress, type FunctionEngineOptions, functionEngineFromEnv } from "./function-engine.js";

export function createEngineFromEnv(
  env: Record<string, string | undefined> = process.env,
  options: Omit<FunctionEngineOptions, "tasks"> = {},
): Engine {
  return functionEngineFromEnv(env, {
    ...options,
    tasks: ({ config, clients, clientOptions, taskModules }) =>
      deployedTaskRegistry(
        config,
        {
          eventBridge: clients.eventBridge,
          lambda: new LazyLambdaInvoker(async () =>
            (await import("./task-clients.js")).createLambdaInvoker(clientOptions),
          ),
          secrets: new LazySecretStore(AWS_SECRET_STORE, async () =>
            (await import("./task-clients.js")).createSecretStore(clientOptions),
          ),
        },
        taskModules,
      ),
  });
}

/**
 * Every task type a deployed function knows: the built-ins, `http` (reading secret references from
 * `secrets`), `lambda` (invoking the user's functions), `emit` (to the lifecycle bus or a named one),
 * and the custom task types of the modules bundled into it (the construct's `tasks` folder).
 */
export function deployedTaskRegistry(
  config: WeftConfig,
  runtimes: { eventBridge: EventBridgeClient; lambda: LambdaInvoker; secrets: SecretStore },
  taskModules: readonly TaskModule[] = [],
): TaskRegistry {
  return createFullTaskRegistry({
    customTasks: collectTaskTypes(taskModules),
    lambda: runtimes.lambda,
    events: new EventBridgeSender(runtimes.eventBridge),
    lifecycleBusName: config.eventBusName,
    http: { egress: deployedHttpEgress(config), secrets: runtimes.secrets },
  });
}
