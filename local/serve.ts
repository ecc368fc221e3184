/**
 * The local runtime as a command: `npm start` in this repository and `weft dev` in a project of
 * one's own. Embedded in-memory backend by default; DynamoDB/SQS/EventBridge at AWS_ENDPOINT_URL (or
 * the SDK's per-service AWS_ENDPOINT_URL_DYNAMODB / _SQS / _EVENTBRIDGE) when set (moto, DynamoDB
 * Local, LocalStack); real AWS only with `--backend aws`.
 *
 *   weft dev [--port 3000] [--concurrency 4] [--backend memory|aws] [--sweep-interval 60] [--config FILE]
 *
 * The web console (console/) is served at `/`. `weft dev` also imports the custom task folder afresh
 * whenever a file in it changes (local/task-reload.ts).
 */
import path from "node:path";
import { parseArgs } from "node:util";
import { onShutdownSignals, signalExitCode } from "../cli/signals.js";
import { ensureConsoleBuilt } from "../console/build.js";
import { endpointsFromEnv } from "../shared/config/env.js";
import { projectTaskOptions } from "../shared/tasks/project-tasks.js";
import { type LocalBackend, startLocalRuntime } from "./runtime.js";

const usage = (
  command: string,
) => `usage: ${command} [--port N] [--concurrency N] [--backend memory|aws] [--sweep-interval SECONDS] [--config FILE]
  --port            HTTP port (default: PORT or 3000; 0 picks a free one)
  --concurrency     worker invocations running at once (default 4)
  --backend         memory (default) or aws (default when AWS_ENDPOINT_URL or an
                    AWS_ENDPOINT_URL_<SERVICE> is set; real AWS needs --backend aws explicitly)
  --sweep-interval  seconds between sweeper runs (default 60, as the EventBridge schedule; 0 turns it off)
  --config          task configuration (default ./weft.config.json when present, else ./tasks when present):
                    {"tasksDir": "./tasks", "lambdaModules": {"fn": "./lambdas/fn.ts#handler"}}
The custom task folder is imported afresh whenever a file in it changes.`;

const optionSpec = {
  port: { type: "string" },
  concurrency: { type: "string" },
  backend: { type: "string" },
  "sweep-interval": { type: "string" },
  config: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/**
 * Runs the local runtime until a signal stops it. `command` is how the user started it (`npm start
 * --`, `weft dev`), for the usage text. Exits the process on a usage error (2) or a failed start (1).
 */
export async function serveLocalRuntime(argv: readonly string[], command: string): Promise<void> {
  const fail = (message: string): never => {
    console.error(`weft: ${message}\n${usage(command)}`);
    process.exit(2);
  };
  const integer = (name: string, text: string | undefined, min: number): number | undefined => {
    if (text === undefined || text === "") return undefined;
    const value = Number(text);
    if (!Number.isInteger(value) || value < min)
      fail(`${name} must be a whole number ≥ ${min}, got "${text}"`);
    return value;
  };

  let args: ReturnType<typeof parseArgs<{ options: typeof optionSpec }>>;
  try {
    args = parseArgs({ args: [...argv], options: optionSpec, strict: true, allowPositionals: false });
  } catch (error) {
    return fail(error instanceof Error ? error.message : String(error));
  }
  if (args.values.help) {
    console.log(usage(command));
    process.exit(0);
  }

  const endpoint = endpointsFromEnv(process.env);
  const backendArg = args.values.backend;
  if (backendArg !== undefined && backendArg !== "memory" && backendArg !== "aws") {
    fail(`--backend must be "memory" or "aws", got "${backendArg}"`);
  }
  const backend: LocalBackend =
    backendArg === "aws" || (backendArg === undefined && endpoint !== undefined) ? "aws" : "memory";
  const port = integer("--port", args.values.port ?? process.env.PORT, 0) ?? 3000;
  const concurrency = integer("--concurrency", args.values.concurrency, 1);
  const sweepSeconds = integer("--sweep-interval", args.values["sweep-interval"], 0) ?? 60;

  // The same lookup `weft validate` makes (shared/tasks/project-tasks.ts).
  const taskOptions = await projectTaskOptions({
    cwd: process.cwd(),
    ...(args.values.config === undefined ? {} : { configFile: args.values.config }),
  }).catch((error: unknown) => fail(error instanceof Error ? error.message : String(error)));

  const consoleState = await ensureConsoleBuilt((message) => console.log(`weft: ${message}`));

  const runtime = await startLocalRuntime({
    backend,
    port,
    taskOptions,
    ...(concurrency === undefined ? {} : { concurrency }),
    ...(sweepSeconds === 0 ? { sweep: false } : { sweepIntervalMs: sweepSeconds * 1000 }),
    reloadTasks: {
      onReloaded: (types) => console.log(`weft: task types reloaded (${types.join(", ")})`),
      onFailed: (error) =>
        console.error(
          `weft: the task folder did not reload, the previous task types stay: ${error instanceof Error ? error.message : String(error)}`,
        ),
    },
  }).catch((error: unknown) => {
    console.error("weft: the local runtime failed to start:", error instanceof Error ? error.message : error);
    process.exit(1);
  });

  if (runtime.backend === "memory") {
    console.log("weft: backend memory (embedded, in-memory; state is lost when it stops)");
  } else {
    const realAws = `real AWS (region ${runtime.resources?.region ?? "from the SDK"})`;
    const endpoints = runtime.resources?.endpoints;
    const where =
      runtime.resources?.endpoint ??
      (endpoints === undefined
        ? realAws
        : (["dynamodb", "sqs", "eventbridge"] as const)
            .map((service) => `${service} ${endpoints[service] ?? realAws}`)
            .join(", "));
    console.log(`weft: backend aws at ${where}`);
    console.log(
      `weft: table ${runtime.resources?.tableName}, queue ${runtime.resources?.queueUrl}, dlq ${runtime.resources?.deadLetterUrl}, event bus ${runtime.resources?.eventBusName}`,
    );
  }
  const customTasks = taskOptions.customTasksDir;
  console.log(
    `weft: task types ${runtime.engine.tasks.names().join(", ")}${customTasks === undefined ? "" : ` (custom ones from ${path.relative(process.cwd(), customTasks) || "."}, reloaded on change)`}`,
  );
  console.log(`weft: API listening on ${runtime.url} (worker concurrency ${concurrency ?? 4})`);
  console.log(
    consoleState === "unavailable"
      ? "weft: no web console (it could not be built: npm run build:console says why)"
      : `weft: web console on ${runtime.url}/`,
  );
  console.log(
    sweepSeconds === 0
      ? "weft: sweeper off (--sweep-interval 0)"
      : `weft: sweeper every ${sweepSeconds} s (as the EventBridge schedule runs it)`,
  );
  const deadLetterQueue = runtime.resources?.deadLetterUrl ?? "the in-memory dead-letter queue";
  console.log(
    `weft: dead-letter consumer polling ${deadLetterQueue} (GET /dlq lists, POST /dlq/redrive retries)`,
  );

  // One Ctrl-C reaches the process once from the terminal and again from npm and tsx: only a
  // press a second or more after the first forces the exit (cli/signals.ts).
  onShutdownSignals({
    onStop: (signal) => {
      console.log(
        `weft: ${signal} received, stopping (waiting for running tasks; send it again, a second or more later, to force)`,
      );
      runtime.stop().then(
        () => {
          console.log("weft: stopped");
          process.exitCode = 0;
        },
        (error: unknown) => {
          console.error("weft: error while stopping:", error);
          process.exitCode = 1;
        },
      );
    },
    onForce: (signal) => {
      console.error(`weft: ${signal} again, exiting without waiting for running tasks`);
      process.exit(signalExitCode(signal));
    },
  });
}
