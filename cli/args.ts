/** Command-line parsing (node:util parseArgs), the usage text, and values read from flags and files. */
import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { CliError, UsageError } from "./errors.js";
import { parseJsonText } from "./json.js";

export const DEFAULT_API_URL = "http://127.0.0.1:3000";
export const DEFAULT_INTERVAL_MS = 500;
/** Where `weft console` listens by default (127.0.0.1). */
export const DEFAULT_CONSOLE_PORT = 3001;

const OPTIONS = {
  api: { type: "string" },
  json: { type: "boolean" },
  sigv4: { type: "boolean" },
  "no-sigv4": { type: "boolean" },
  region: { type: "string" },
  help: { type: "boolean", short: "h" },
  input: { type: "string" },
  version: { type: "string" },
  key: { type: "string" },
  "no-start": { type: "boolean" },
  interval: { type: "string" },
  follow: { type: "boolean", short: "f" },
  reason: { type: "string" },
  workflow: { type: "string" },
  status: { type: "string" },
  limit: { type: "string" },
  next: { type: "string" },
  "custom-tasks": { type: "string" },
  config: { type: "string" },
  "cancel-on-exit": { type: "boolean" },
  resolve: { type: "boolean" },
  token: { type: "string" },
  output: { type: "string" },
  "error-name": { type: "string" },
  "error-message": { type: "string" },
  retryable: { type: "boolean" },
  port: { type: "string" },
  "output-bytes": { type: "string" },
  executions: { type: "string" },
  items: { type: "string" },
  "node-ms": { type: "string" },
} as const;

export type OptionName = keyof typeof OPTIONS;
export type OptionValues = {
  [K in OptionName]?: (typeof OPTIONS)[K]["type"] extends "string" ? string : boolean;
};

const GLOBAL_OPTIONS: OptionName[] = ["api", "json", "sigv4", "no-sigv4", "region", "help"];

export interface CommandSpec {
  /** `dlq list` is the command "dlq list". */
  name: string;
  args: string;
  summary: string;
  options: OptionName[];
  /** Positional arguments after the command words: [min, max]. */
  positionals: [number, number];
}

export const COMMANDS: CommandSpec[] = [
  {
    name: "validate",
    args: "FILE [--config FILE] [--custom-tasks DIR]",
    summary:
      "check a definition locally against the task types `weft dev` would load here, listing every problem",
    options: ["config", "custom-tasks"],
    positionals: [1, 1],
  },
  {
    name: "register",
    args: "FILE",
    summary: "register a definition (a new version when it changed)",
    options: [],
    positionals: [1, 1],
  },
  {
    name: "start",
    args: "WORKFLOW [--input JSON|@file] [--version N] [--key K] [--no-start]",
    summary: "start an execution (--no-start: create it PENDING, start it later with trigger)",
    options: ["input", "version", "key", "no-start"],
    positionals: [1, 1],
  },
  {
    name: "run",
    args: "FILE [--input JSON|@file] [--key K] [--interval MS] [--cancel-on-exit]",
    summary:
      "register FILE, start it and watch it to the end (Ctrl-C leaves it running and says how to cancel it; --cancel-on-exit: cancels it)",
    options: ["input", "key", "interval", "cancel-on-exit"],
    positionals: [1, 1],
  },
  {
    name: "status",
    args: "ID [--resolve]",
    summary: "an execution's state, nodes, output or error (--resolve: large values in full)",
    options: ["resolve"],
    positionals: [1, 1],
  },
  {
    name: "watch",
    args: "ID [--interval MS] [--cancel-on-exit]",
    summary: "follow an execution's nodes live until it ends (Ctrl-C and --cancel-on-exit: as for run)",
    options: ["interval", "cancel-on-exit"],
    positionals: [1, 1],
  },
  {
    name: "events",
    args: "ID [--follow] [--limit N]",
    summary: "an execution's history (--follow: keep printing until it ends)",
    options: ["follow", "limit", "interval"],
    positionals: [1, 1],
  },
  {
    name: "cancel",
    args: "ID [--reason R]",
    summary: "cancel an execution",
    options: ["reason"],
    positionals: [1, 1],
  },
  {
    name: "trigger",
    args: "ID [--input JSON|@file]",
    summary: "start a PENDING execution",
    options: ["input"],
    positionals: [1, 1],
  },
  {
    name: "list",
    args: "[--workflow W] [--status S] [--limit N] [--next TOKEN]",
    summary: "executions, newest first",
    options: ["workflow", "status", "limit", "next"],
    positionals: [0, 0],
  },
  {
    name: "workflows",
    args: "[--limit N] [--next TOKEN]",
    summary: "the registered workflows by name: latest version, when created, description",
    options: ["limit", "next"],
    positionals: [0, 0],
  },
  {
    name: "show",
    args: "WORKFLOW [--version N]",
    summary:
      "a workflow's definition, readable: each node's type, dependsOn, fanIn, when, retry, runsOn… (--json: as registered)",
    options: ["version"],
    positionals: [1, 1],
  },
  {
    name: "cost",
    args: "WORKFLOW [--version N] [--input JSON|@file] [--output-bytes N] [--executions N] [--items N] [--node-ms N]",
    summary:
      "the modeled AWS cost of a run before it happens, per node and in total, beside Step Functions Standard and Express",
    options: ["version", "input", "output-bytes", "executions", "items", "node-ms"],
    positionals: [1, 1],
  },
  {
    name: "console",
    args: "[--port P]",
    summary: `the web console on 127.0.0.1:P (default ${DEFAULT_CONSOLE_PORT}) for the API of --api, its calls signed (SigV4) unless on loopback`,
    options: ["port"],
    positionals: [0, 0],
  },
  {
    name: "dlq list",
    args: "[--limit N] [--next TOKEN]",
    summary: "dead-lettered work with its error",
    options: ["limit", "next"],
    positionals: [0, 0],
  },
  {
    name: "dlq redrive",
    args: "[IDS…]",
    summary: "put dead-lettered work back as a new attempt (all of it without IDS)",
    options: [],
    positionals: [0, Number.POSITIVE_INFINITY],
  },
  {
    name: "workers",
    args: "",
    summary: "the registered external workers: pool, health, running tasks, last heartbeat",
    options: [],
    positionals: [0, 0],
  },
  {
    // Routed by main.ts to cli/init-command.ts, which parses its own flags.
    name: "init",
    args: "[DIR] [--no-install]",
    summary: "make DIR a project that uses weft: CDK app, tasks/, a workflow, its test (weft init --help)",
    options: [],
    positionals: [0, 1],
  },
  {
    // Routed by main.ts to local/serve.ts (the local runtime), which parses its own flags.
    name: "dev",
    args: "[--port N] [--config FILE] [OPTIONS]",
    summary:
      "the local runtime for this project: API, workers, sweeper, console; task files reloaded on change",
    options: [],
    positionals: [0, 0],
  },
  {
    // Routed by main.ts to cli/worker-command.ts, which parses its own flags.
    name: "worker",
    args: "--pool POOL --tasks DIR [OPTIONS]",
    summary: "run the nodes placed on POOL (runsOn) on this machine until SIGTERM (weft worker --help)",
    options: [],
    positionals: [0, 0],
  },
  {
    name: "callback complete",
    args: "--token T [--output JSON|@file]",
    summary: "settle a waiting callback node with its output (null without --output)",
    options: ["token", "output"],
    positionals: [0, 0],
  },
  {
    name: "callback fail",
    args: "--token T [--error-name N] [--error-message M] [--retryable]",
    summary: "fail a waiting callback node (for good, unless --retryable: then by its retry policy)",
    options: ["token", "error-name", "error-message", "retryable"],
    positionals: [0, 0],
  },
  {
    name: "callback heartbeat",
    args: "--token T",
    summary: "tell a waiting callback node (one with heartbeatSeconds) that its settlement is coming",
    options: ["token"],
    positionals: [0, 0],
  },
];

/** Commands of two words: the first word, and the subcommands it takes. */
const SUBCOMMANDS: Readonly<Record<string, readonly string[]>> = {
  dlq: ["list", "redrive"],
  callback: ["complete", "fail", "heartbeat"],
};

export const USAGE = `usage: weft COMMAND [ARGS] [--api URL] [--json]

commands:
${COMMANDS.map((c) => `  ${`${c.name} ${c.args}`.trimEnd()}\n      ${c.summary}`).join("\n")}

global options:
  --api URL       the weft API (default: WEFT_API_URL or ${DEFAULT_API_URL}, the local runtime of \`weft dev\` / \`npm start\`)
  --json          machine-readable output on stdout (one JSON document; \`events --follow\` prints one per line)
  --sigv4         sign requests with AWS SigV4 (the default when the API is not on loopback)
  --no-sigv4      never sign
  --region R      region to sign for (default: from an execute-api hostname, else AWS_REGION)
  -h, --help      this help

  --input takes JSON text, @FILE to read it from a file, or @- to read standard input; an input
  over 5 MiB (as JSON text) is uploaded first (POST /payloads), and 10 MiB is the most it can be.
  --interval MS   how often watch polls the execution (default ${DEFAULT_INTERVAL_MS})
  --token T       a callback node's token: GET /executions/{id} (\`weft status ID --json\`) shows it
                  while the node waits, as does its \`Node Waiting For Callback\` event
  --output takes JSON text, @FILE or @- as --input does (at most 5 MiB).
  --output-bytes N  cost: every node's output size in bytes (default 100; over 4 KiB: an S3 PUT each)
  --executions N  cost: the runs to price (default 1)
  --items N       cost: the items of a map whose list is an expression (a literal list counts itself)
  --node-ms N     cost: how long each node runs (default 100): Lambda GB-s, Express's duration
  --port P        the port \`weft console\` listens on, on 127.0.0.1 (default ${DEFAULT_CONSOLE_PORT}; 0 picks a free one)
  --cancel-on-exit  run/watch: on Ctrl-C, cancel the execution (POST /executions/{id}/cancel) before
                  exiting. Without it Ctrl-C leaves the execution running — it runs on the API, not in
                  the command — and prints its id and the \`weft cancel\` command that stops it.
  --config FILE   validate: the task configuration \`weft dev --config FILE\` would use (default
                  ./weft.config.json when present, else the ./tasks folder when present)
  --custom-tasks DIR
                  validate: this folder's task types in place of the configuration's custom folder

exit codes:
  0  success (watch/run: the execution SUCCEEDED)
  1  failure: an API error (callback: a stale token is 409), an unreachable API, a bad file, an invalid
     definition, or (watch/run) FAILED
  2  usage error: unknown command or flag, missing or bad argument
  3  watch/run: the execution was CANCELLED
  130  watch/run: Ctrl-C (the execution goes on, unless --cancel-on-exit)

credentials for --sigv4 come from the standard AWS chain (AWS_PROFILE, environment, SSO, instance role…).
note: validate checks against the task types \`weft dev\` (\`npm start\` in weft's repository) loads in the
current folder: the built-in ones (http, lambda and emit among them) and the project's custom ones (the
API checks params against its own task types again when you register).`;

export interface ParsedCommand {
  command: CommandSpec | undefined;
  positionals: string[];
  values: OptionValues;
}

export function parseCommandLine(argv: string[]): ParsedCommand {
  let parsed: { values: OptionValues; positionals: string[] };
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, strict: true, allowPositionals: true }) as {
      values: OptionValues;
      positionals: string[];
    };
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const { values, positionals } = parsed;
  const [first, second] = positionals;
  if (first === undefined) {
    if (values.help) return { command: undefined, positionals: [], values };
    throw new UsageError("no command given");
  }
  let name = first;
  let rest = positionals.slice(1);
  const subcommands = SUBCOMMANDS[first];
  if (subcommands !== undefined) {
    if (second === undefined || !subcommands.includes(second)) {
      const choices = subcommands.map((sub) => `"${first} ${sub}"`);
      throw new UsageError(
        `"${first}" needs a subcommand: ${choices.slice(0, -1).join(", ")} or ${choices.at(-1)}`,
      );
    }
    name = `${first} ${second}`;
    rest = positionals.slice(2);
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) throw new UsageError(`unknown command "${first}"`);
  if (values.help) return { command, positionals: rest, values };

  for (const key of Object.keys(values) as OptionName[]) {
    if (values[key] !== undefined && !GLOBAL_OPTIONS.includes(key) && !command.options.includes(key)) {
      throw new UsageError(`--${key} does not apply to "${command.name}"`);
    }
  }
  const [min, max] = command.positionals;
  if (rest.length < min) throw new UsageError(`"${command.name}" needs ${command.args.split(" ")[0]}`);
  if (rest.length > max) throw new UsageError(`unexpected argument "${rest[max]}" for "${command.name}"`);
  if (values.sigv4 && values["no-sigv4"])
    throw new UsageError("--sigv4 and --no-sigv4 contradict each other");
  return { command, positionals: rest, values };
}

export function commandUsage(command: CommandSpec): string {
  return `usage: weft ${`${command.name} ${command.args}`.trimEnd()}\n  ${command.summary}\n\nrun "weft --help" for the global options and exit codes.`;
}

export function integerOption(name: string, text: string | undefined, min: number): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (text.trim() === "" || !Number.isInteger(value) || value < min) {
    throw new UsageError(`--${name} must be a whole number ≥ ${min}, got "${text}"`);
  }
  return value;
}

/** Reads a UTF-8 file (BOM stripped) with messages that name the file and what went wrong. */
export async function readTextFile(path: string): Promise<string> {
  try {
    const text = await readFile(path, "utf8");
    return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason =
      code === "ENOENT"
        ? "no such file"
        : code === "EISDIR"
          ? "it is a directory, not a file"
          : code === "EACCES"
            ? "permission denied"
            : error instanceof Error
              ? error.message
              : String(error);
    throw new CliError(`cannot read ${path}: ${reason}`, 1, "BadFile");
  }
}

export async function readJsonFile(path: string): Promise<unknown> {
  const text = await readTextFile(path);
  try {
    return parseJsonText(text, path);
  } catch (error) {
    throw new CliError(error instanceof Error ? error.message : String(error), 1, "InvalidJson");
  }
}

/** An `--input` value, parsed, and where it came from (for messages). */
export interface InputValue {
  value: unknown;
  /** "--input", the file's name, or "standard input". */
  source: string;
}

/** `--input` (or `flag`, e.g. `--output`): JSON text, `@file`, or `@-` for standard input. */
export async function readInput(
  text: string | undefined,
  stdin: () => Promise<string> = readStdin,
  flag = "--input",
): Promise<InputValue | undefined> {
  if (text === undefined) return undefined;
  if (text.startsWith("@")) {
    const path = text.slice(1);
    if (path === "") throw new UsageError(`${flag} @ needs a file name (or @- for standard input)`);
    if (path === "-") {
      try {
        return {
          value: parseJsonText(await stdin(), `${flag} @- (standard input)`),
          source: "standard input",
        };
      } catch (error) {
        throw new CliError(error instanceof Error ? error.message : String(error), 1, "InvalidJson");
      }
    }
    return { value: await readJsonFile(path), source: path };
  }
  try {
    return { value: parseJsonText(text, flag), source: flag };
  } catch (error) {
    // Bad JSON typed on the command line is a usage error.
    throw new UsageError(
      `${error instanceof Error ? error.message : String(error)} (use @FILE to read ${flag.slice(2)} from a file)`,
    );
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}
