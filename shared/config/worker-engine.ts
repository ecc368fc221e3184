/**
 * The engine as a deployed worker builds it: functionEngineFromEnv (function-engine.ts) with every
 * task type's runtime. The clients of the `lambda` task and of the `http` task's secret references
 * (task-clients.ts) load on first use, and undici with the first `http` request (tasks/http.ts), so
 * a cold start loads none of them. The api, the sweeper and the DLQ consumer, which never run
 * `http` or `lambda`, build theirs with those types' params alone (shared/tasks/declared.ts).
 */
import type { Engine } from "../engine/engine.js";
import { EventBridgeSender } from "../tasks/emit-eventbridge.js";
import { createFullTaskRegistry } from "../tasks/full-registry.js";
import { LazyLambdaInvoker, LazySecretStore } from "../tasks/lazy-aws.js";
import { AWS_SECRET_STORE } from "../tasks/secrets.js";
import { collectTaskTypes } from "../tasks/task-modules.js";
import { deployedHttpEgress, type FunctionEngineOptions, functionEngineFromEnv } from "./function-engine.js";

export function createEngineFromEnv(
  env: Record<string, string | undefined> = process.env,
  options: Omit<FunctionEngineOptions, "tasks"> = {},
): Engine {
  return functionEngineFromEnv(env, {
    ...options,
    tasks: ({ config, clients, clientOptions, taskModules }) =>
      createFullTaskRegistry({
        customTasks: collectTaskTypes(taskModules),
        lambda: new LazyLambdaInvoker(async () =>
          (await import("./task-clients.js")).createLambdaInvoker(clientOptions),
        ),
        events: new EventBridgeSender(clients.eventBridge),
        lifecycleBusName: config.eventBusName,
        http: {
          egress: deployedHttpEgress(config),
          secrets: new LazySecretStore(AWS_SECRET_STORE, async () =>
            (await import("./task-clients.js")).createSecretStore(clientOptions),
          ),
        },
      }),
  });
}
