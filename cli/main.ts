/**
 * The `weft` command-line tool: talks to the weft HTTP API (the local runtime by default, or a deployed
 * one signed with SigV4). `weft --help` lists the commands, options and exit codes.
 */

import { pathToFileURL } from "node:url";
import { stringifyExact } from "../shared/domain/exact-numbers.js";
import { commandUsage, DEFAULT_API_URL, parseCommandLine, USAGE } from "./args.js";
import type { WeftClient } from "./client.js";
import type { Context } from "./commands.js";
import { CliError, EXIT, UsageError } from "./errors.js";
import { paint, styleFor } from "./render.js";
import { type CommandInterrupt, commandInterrupt, NO_INTERRUPT } from "./signals.js";
import { createSigner, isLoopback, type RequestSigner, resolveSigningRegion } from "./signing.js";

// Startup is part of every command's latency (`weft cancel` must not arrive after the run ended):
// `--help` loads only the argument parser, and a command loads the client and its own code when it runs.

export interface CliIo {
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number; rows?: number };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  env: Record<string, string | undefined>;
}

/** `interrupt`: Ctrl-C, for the commands that handle it (run, watch); none when run in-process. */
export async function runCli(
  argv: string[],
  io: CliIo,
  interrupt: CommandInterrupt = NO_INTERRUPT,
): Promise<number> {
  // `weft worker` is a long-running process with flags of its own (cli/worker-command.ts); loaded
  // only for it (it loads task types).
  if (argv[0] === "worker") {
    const { runWorkerCommand } = await import("./worker-command.js");
    return runWorkerCommand(argv, io);
  }
  // `weft init` scaffolds a project and `weft dev` runs the local runtime: flags of their own too.
  if (argv[0] === "init") {
    const { runInitCommand } = await import("./init-command.js");
    return runInitCommand(argv.slice(1), io);
  }
  const style = styleFor(io.stdout, io.env);
  const errStyle = styleFor(io.stderr, io.env);
  let json = argv.includes("--json");
  try {
    const { command, positionals, values } = parseCommandLine(argv);
    json = values.json === true;
    if (values.help) {
      io.stdout.write(`${command ? commandUsage(command) : USAGE}\n`);
      return EXIT.ok;
    }
    if (!command) throw new UsageError("no command given");

    const [{ HANDLERS, unknownHandler }, { WeftClient }] = await Promise.all([
      import("./commands.js"),
      import("./client.js"),
    ]);
    let client: WeftClient | undefined;
    const ctx: Context = {
      values,
      json,
      stdout: io.stdout,
      style,
      client: () => {
        client ??= createClient(WeftClient, values.api, values, io.env);
        return client;
      },
      print: (text) => {
        if (!json) io.stdout.write(`${text}\n`);
      },
      emit: (value) => {
        if (json) io.stdout.write(`${stringifyExact(value, undefined, 2)}\n`);
      },
      note: (text) => {
        if (!json) io.stderr.write(`${paint(errStyle, "gray", text)}\n`);
      },
      warn: (text) => {
        io.stderr.write(`${paint(errStyle, "yellow", "weft:")} ${text}\n`);
      },
      interrupt: () => interrupt.claim(),
    };
    const handler = HANDLERS[command.name] ?? unknownHandler(command.name);
    return await handler(ctx, positionals);
  } catch (error) {
    return report(error, io, json, errStyle);
  }
}

function createClient(
  Client: typeof WeftClient,
  api: string | undefined,
  values: { sigv4?: boolean; "no-sigv4"?: boolean; region?: string },
  env: Record<string, string | undefined>,
): WeftClient {
  const baseUrl = api ?? (env.WEFT_API_URL || DEFAULT_API_URL);
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new UsageError(`the API URL "${baseUrl}" is not a URL (expected e.g. ${DEFAULT_API_URL})`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new UsageError(`the API URL must be http:// or https://, got "${baseUrl}"`);
  }
  let signer: RequestSigner | undefined;
  const sign = values.sigv4 === true || (!isLoopback(url) && values["no-sigv4"] !== true);
  if (sign) {
    const region = resolveSigningRegion(url, values.region, env);
    if (region === undefined) {
      throw new UsageError(
        `cannot tell which AWS region to sign requests to ${url.host} for: pass --region or set AWS_REGION (or --no-sigv4 for an API without IAM auth)`,
      );
    }
    signer = createSigner({ region });
  }
  return new Client({ baseUrl, ...(signer === undefined ? {} : { signer }) });
}

function report(error: unknown, io: CliIo, json: boolean, errStyle: ReturnType<typeof styleFor>): number {
  if (!(error instanceof CliError)) {
    // Credentials errors from the AWS chain and other surprises: say what happened, no stack.
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    io.stderr.write(`${paint(errStyle, "red", "weft:")} ${message}\n`);
    if (json) io.stdout.write(`${JSON.stringify({ error: { code: "Failure", message, details: [] } })}\n`);
    return EXIT.failure;
  }
  const lines = [`${paint(errStyle, "red", "weft:")} ${error.message}`];
  for (const detail of error.details) {
    if (detail && typeof detail === "object") {
      const { path, code, message } = detail as { path?: unknown; code?: unknown; message?: unknown };
      lines.push(
        `  ${[path, code, message].filter((part) => typeof part === "string" && part !== "").join("  ")}`,
      );
    }
  }
  if (error instanceof UsageError) lines.push(`run "weft --help" for usage`);
  io.stderr.write(`${lines.join("\n")}\n`);
  if (json) {
    io.stdout.write(
      `${JSON.stringify({ error: { code: error.code, message: error.message, details: error.details } })}\n`,
    );
  }
  return error.exitCode;
}

function flush(stream: NodeJS.WritableStream): Promise<void> {
  return new Promise((resolve) => stream.write("", () => resolve()));
}

const isEntry = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
const launched = (globalThis as { __weftCliLaunch?: boolean }).__weftCliLaunch === true;

if (isEntry || launched) {
  // `weft events ID --follow | head`: a closed pipe ends the command quietly.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code === "EPIPE") process.exit(EXIT.ok);
      throw error;
    });
  }
  // Ctrl-C ends a command at once (a redraw hides the cursor: it is given back), except where the
  // command claimed it: `weft run` and `weft watch` then say what becomes of the execution
  // (cli/signals.ts; the copies of one press that npx forwards count once). `weft worker` and
  // `weft dev` handle their signals themselves (a graceful shutdown).
  let interrupt: CommandInterrupt | undefined;
  if (process.argv[2] !== "worker" && process.argv[2] !== "dev") {
    interrupt = commandInterrupt({
      exit: (code) => {
        if (process.stdout.isTTY) process.stdout.write("\x1b[?25h\n");
        process.exit(code);
      },
      onClaimed: () => {
        if (process.stderr.isTTY) process.stderr.write("\n");
      },
    });
  }
  if (process.argv[2] === "dev") {
    // The local runtime goes on serving: the process ends on a signal (local/serve.ts), not here.
    const { serveLocalRuntime } = await import("../local/serve.js");
    await serveLocalRuntime(process.argv.slice(3), "weft dev");
  } else {
    const code = await runCli(
      process.argv.slice(2),
      { stdout: process.stdout, stderr: process.stderr, env: process.env },
      interrupt,
    );
    await Promise.all([flush(process.stdout), flush(process.stderr)]);
    process.exit(code);
  }
}
