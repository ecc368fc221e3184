/**
 * `weft worker`: its options, the task types it loads, the API client it talks through and the
 * signals that stop it. The loop itself is ./worker.ts.
 */
import path from "node:path";
import { parseArgs } from "node:util";
import { PLACEMENT_LIMITS, workerRegistrationSchema } from "../shared/domain/placement.js";
import type { Clock } from "../shared/ports.js";
import { buildTaskRegistry } from "../shared/tasks/loader.js";
import type { TaskRegistry } from "../shared/tasks/task-type.js";
import { DEFAULT_API_URL, integerOption } from "./args.js";
import { WeftClient } from "./client.js";
import { CliError, EXIT, UsageError } from "./errors.js";
import type { CliIo } from "./main.js";
import { onShutdownSignals, type SignalSource, signalExitCode } from "./signals.js";
import { createSigner, isLoopback, type RequestSigner, resolveSigningRegion } from "./signing.js";
import { clientWorkerApi, ExternalWorker, type WorkerApi, type WorkerSettings } from "./worker.js";

export const WORKER_USAGE = `usage: weft worker --pool POOL --tasks DIR [OPTIONS]
  run the nodes placed on POOL with "runsOn" on this machine, until SIGTERM or Ctrl-C: registers,
  long-polls for tasks while it has a free slot, runs each with the task type of DIR its "type"
  names, heartbeats it and reports its output or error. On SIGTERM/SIGINT it stops polling, lets
  running tasks finish for --grace-seconds (then stops them; they are retried elsewhere), deregisters
  and exits 0; a second signal a second or more later exits at once (the copies of one Ctrl-C that
  npm or a shell forwards count as one).

options:
  --pool POOL            the pool to serve (required)
  --tasks DIR            a folder of task files (defineTask modules, as for the Lambda worker; the
                         built-in task types are there too) (required)
  --executor NAME        an executor this machine has, e.g. ffmpeg (repeatable)
  --capability K=V       a capability, e.g. gpu=nvidia (repeatable)
  --label LABEL          a label, e.g. high-mem (repeatable)
  --max-parallel N       tasks run at once (default 1)
  --worker-id ID         register under this id (default: one the API gives; printed on stdout)
  --grace-seconds S      on shutdown, how long running tasks may go on (default 30)
  --max-idle-seconds S   the longest pause between polls that keep coming back empty (default 60)
  --api URL, --sigv4, --no-sigv4, --region R
                         the API and its signing, as for every command ("weft --help")

  logs go to standard error, one line per event; they never hold task tokens or payloads.`;

const OPTIONS = {
  pool: { type: "string" },
  tasks: { type: "string" },
  executor: { type: "string", multiple: true },
  capability: { type: "string", multiple: true },
  label: { type: "string", multiple: true },
  "max-parallel": { type: "string" },
  "worker-id": { type: "string" },
  "grace-seconds": { type: "string" },
  "max-idle-seconds": { type: "string" },
  api: { type: "string" },
  sigv4: { type: "boolean" },
  "no-sigv4": { type: "boolean" },
  region: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

interface WorkerValues {
  pool?: string;
  tasks?: string;
  executor?: string[];
  capability?: string[];
  label?: string[];
  "max-parallel"?: string;
  "worker-id"?: string;
  "grace-seconds"?: string;
  "max-idle-seconds"?: string;
  api?: string;
  sigv4?: boolean;
  "no-sigv4"?: boolean;
  region?: string;
  help?: boolean;
}

/** What a worker needs that tests replace: where signals come from, how to exit at once, time. */
export interface WorkerCommandDeps {
  signals?: SignalSource;
  /** The clock that tells one press of Ctrl-C from two (cli/signals.ts; default performance.now). */
  signalClock?: () => number;
  exit?: (code: number) => void;
  clock?: Clock;
  random?: () => number;
  /** The API the worker talks to (default: a client of --api). */
  api?: WorkerApi;
}

/** `weft worker …` (with or without the leading "worker"): resolves to the exit code. */
export async function runWorkerCommand(
  argv: string[],
  io: CliIo,
  deps: WorkerCommandDeps = {},
): Promise<number> {
  try {
    const values = parseWorkerArgs(argv[0] === "worker" ? argv.slice(1) : argv);
    if (values.help) {
      io.stdout.write(`${WORKER_USAGE}\n`);
      return EXIT.ok;
    }
    const settings = workerSettings(values);
    const tasks = await loadTasks(required(values.tasks, "--tasks DIR"));
    const api = deps.api ?? clientWorkerApi(createClient(values, io.env));
    return await serve(settings, tasks, api, io, deps);
  } catch (error) {
    return reportError(error, io);
  }
}

export function parseWorkerArgs(argv: string[]): WorkerValues {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: OPTIONS,
      strict: true,
      allowPositionals: true,
    });
    if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}" for "worker"`);
    if (values.sigv4 && values["no-sigv4"])
      throw new UsageError("--sigv4 and --no-sigv4 contradict each other");
    return values;
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

/** The registration and timings the flags ask for, checked as the API would check them. */
export function workerSettings(values: WorkerValues): WorkerSettings {
  const registration = workerRegistrationSchema.safeParse({
    pool: required(values.pool, "--pool POOL"),
    executors: values.executor ?? [],
    capabilities: capabilities(values.capability ?? []),
    labels: values.label ?? [],
    maxParallel: integerOption("max-parallel", values["max-parallel"], 1) ?? 1,
    ...(values["worker-id"] === undefined ? {} : { workerId: values["worker-id"] }),
  });
  if (!registration.success) {
    const problems = registration.error.issues.map((issue) => `${flagOf(issue.path)}: ${issue.message}`);
    throw new UsageError(problems.join("; "));
  }
  if (registration.data.maxParallel > PLACEMENT_LIMITS.maxParallel)
    throw new UsageError(`--max-parallel must be at most ${PLACEMENT_LIMITS.maxParallel}`);
  const graceSeconds = integerOption("grace-seconds", values["grace-seconds"], 0) ?? 30;
  const maxIdleSeconds = integerOption("max-idle-seconds", values["max-idle-seconds"], 1) ?? 60;
  return {
    registration: registration.data,
    graceMs: graceSeconds * 1000,
    idleBackoff: { initialMs: Math.min(1000, maxIdleSeconds * 1000), maxMs: maxIdleSeconds * 1000 },
  };
}

function required(value: string | undefined, flag: string): string {
  if (value === undefined || value === "") throw new UsageError(`"worker" needs ${flag}`);
  return value;
}

/** `gpu=nvidia` flags as a record; a name given twice is refused. */
function capabilities(pairs: readonly string[]): Record<string, string> {
  const result: Record<string, string> = {};
  for (const pair of pairs) {
    const at = pair.indexOf("=");
    if (at <= 0) throw new UsageError(`--capability takes NAME=VALUE, got "${pair}"`);
    const name = pair.slice(0, at);
    if (name in result) throw new UsageError(`--capability "${name}" is given twice`);
    result[name] = pair.slice(at + 1);
  }
  return result;
}

function flagOf(path: readonly PropertyKey[]): string {
  const flags: Record<string, string> = {
    pool: "--pool",
    executors: "--executor",
    capabilities: "--capability",
    labels: "--label",
    maxParallel: "--max-parallel",
    workerId: "--worker-id",
  };
  const [first, ...rest] = path.map(String);
  const flag = flags[first ?? ""] ?? first ?? "the registration";
  return rest.length > 0 ? `${flag} ${rest.join(".")}` : flag;
}

async function loadTasks(dir: string): Promise<TaskRegistry> {
  try {
    return await buildTaskRegistry({ customTasksDir: dir });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new CliError(
      `cannot load the task types of ${path.resolve(dir)}: ${message}`,
      EXIT.failure,
      "BadTasks",
    );
  }
}

/** The API client, as every command makes it: --api, WEFT_API_URL or the local runtime; SigV4 off loopback. */
function createClient(values: WorkerValues, env: Record<string, string | undefined>): WeftClient {
  const baseUrl = values.api ?? (env.WEFT_API_URL || DEFAULT_API_URL);
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new UsageError(`the API URL "${baseUrl}" is not a URL (expected e.g. ${DEFAULT_API_URL})`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new UsageError(`the API URL must be http:// or https://, got "${baseUrl}"`);
  let signer: RequestSigner | undefined;
  if (values.sigv4 === true || (!isLoopback(url) && values["no-sigv4"] !== true)) {
    const region = resolveSigningRegion(url, values.region, env);
    if (region === undefined)
      throw new UsageError(
        `cannot tell which AWS region to sign requests to ${url.host} for: pass --region or set AWS_REGION (or --no-sigv4 for an API without IAM auth)`,
      );
    signer = createSigner({ region });
  }
  return new WeftClient({ baseUrl, ...(signer === undefined ? {} : { signer }) });
}

/** Runs the worker until a signal stops it: the first one drains, a second exits at once. */
async function serve(
  settings: WorkerSettings,
  tasks: TaskRegistry,
  api: WorkerApi,
  io: CliIo,
  deps: WorkerCommandDeps,
): Promise<number> {
  const log = (line: string) => io.stderr.write(`${new Date().toISOString()} ${line}\n`);
  const shutdown = new AbortController();
  const exit = deps.exit ?? ((code: number) => process.exit(code));
  // One press of Ctrl-C can arrive several times (cli/signals.ts): only a later one forces.
  const signals = onShutdownSignals({
    onStop: (signal) => {
      log(`${signal}: shutting down (send it again to exit at once)`);
      shutdown.abort();
    },
    onForce: (signal) => {
      log(`${signal} again: exiting at once`);
      exit(signalExitCode(signal));
    },
    ...(deps.signals === undefined ? {} : { source: deps.signals }),
    ...(deps.signalClock === undefined ? {} : { now: deps.signalClock }),
  });
  let printed: string | undefined;
  try {
    const worker = new ExternalWorker(settings, {
      api,
      tasks,
      log,
      ...(deps.clock === undefined ? {} : { clock: deps.clock }),
      ...(deps.random === undefined ? {} : { random: deps.random }),
      onRegistered: (id) => {
        if (printed !== id) io.stdout.write(`${id}\n`);
        printed = id;
      },
    });
    log(`worker starting: pool "${settings.registration.pool}", task types ${tasks.names().join(", ")}`);
    const summary = await worker.run(shutdown.signal);
    log(
      `worker ${summary.workerId ?? "(never registered)"} stopped: ${summary.completed} completed, ${summary.failed} failed, ${summary.lost} lost`,
    );
    return EXIT.ok;
  } finally {
    signals.dispose();
  }
}

function reportError(error: unknown, io: CliIo): number {
  if (!(error instanceof CliError)) {
    io.stderr.write(`weft: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}\n`);
    return EXIT.failure;
  }
  const lines = [`weft: ${error.message}`];
  for (const detail of error.details) {
    if (detail && typeof detail === "object") {
      const { path: at, message } = detail as { path?: unknown; message?: unknown };
      lines.push(`  ${[at, message].filter((part) => typeof part === "string" && part !== "").join("  ")}`);
    }
  }
  if (error instanceof UsageError) lines.push(`run "weft worker --help" for usage`);
  io.stderr.write(`${lines.join("\n")}\n`);
  return error.exitCode;
}
