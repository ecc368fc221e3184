/** The commands. Each returns the process's exit code; errors are thrown as CliError and reported by main. */
import { stringifyExact } from "../shared/domain/exact-numbers.js";
import type { ExecutionStatus } from "../shared/domain/records.js";
import {
  DEFAULT_CONSOLE_PORT,
  DEFAULT_INTERVAL_MS,
  integerOption,
  type OptionValues,
  readInput,
  readJsonFile,
} from "./args.js";
import { type ExecutionView, type InputSource, JsonText, type WeftClient } from "./client.js";
import { ApiError, CliError, EXIT, UsageError } from "./errors.js";
import { DIRECT_INPUT_BYTES, type EncodedInput, encodeInput, sendInput } from "./input.js";
import {
  dependencyMap,
  formatSize,
  paint,
  renderDeadLetters,
  renderDefinition,
  renderEvent,
  renderExecution,
  renderExecutionList,
  renderWorkers,
  renderWorkflows,
  type Style,
  statusText,
  TERMINAL_EXECUTION,
} from "./render.js";
import { signalExitCode } from "./signals.js";
import { type Output, type WatchMode, watchExecution } from "./watch.js";

export interface Context {
  values: OptionValues;
  json: boolean;
  stdout: Output & { isTTY?: boolean };
  style: Style;
  /** Created on first use: `validate` never needs the API. */
  client(): WeftClient;
  /** Human output (nothing in --json mode). */
  print(text: string): void;
  /** The one machine-readable document of --json mode. */
  emit(value: unknown): void;
  /** Human notes for standard error (progress, hints). */
  note(text: string): void;
  /** What the user must know even in --json mode, for standard error (what a Ctrl-C left running). */
  warn(text: string): void;
  /**
   * Takes Ctrl-C over from the process (cli/signals.ts): the first press aborts the signal returned
   * instead of ending the process, and the command says what becomes of its execution.
   */
  interrupt(): AbortSignal;
}

export type Command = (ctx: Context, args: string[]) => Promise<number>;

const EXECUTION_STATUSES: readonly ExecutionStatus[] = [
  "PENDING",
  "RUNNING",
  "SUCCEEDED",
  "FAILED",
  "CANCELLED",
];

export function exitCodeFor(status: string): number {
  if (status === "SUCCEEDED") return EXIT.ok;
  if (status === "CANCELLED") return EXIT.cancelled;
  return EXIT.failure;
}

function intervalOf(ctx: Context): number {
  return integerOption("interval", ctx.values.interval, 10) ?? DEFAULT_INTERVAL_MS;
}

function watchMode(ctx: Context): WatchMode {
  if (ctx.json) return "quiet";
  return ctx.stdout.isTTY ? "tty" : "plain";
}

/** Follows the execution to its end; on Ctrl-C (`interrupt`), leaves it (leaveExecution). */
async function watchToEnd(
  ctx: Context,
  command: string,
  executionId: string,
  interrupt: AbortSignal,
): Promise<number> {
  const outcome = await watchExecution({
    client: ctx.client(),
    executionId,
    intervalMs: intervalOf(ctx),
    mode: watchMode(ctx),
    out: ctx.stdout,
    style: ctx.style,
    signal: interrupt,
  });
  if (!outcome.ended) return leaveExecution(ctx, command, executionId);
  ctx.emit(outcome.view);
  return exitCodeFor(outcome.view.status);
}

/**
 * Ctrl-C while following an execution: the execution runs on the API, not in this process, so it
 * goes on — say so, with its id and the command that cancels it — or, with --cancel-on-exit, cancel
 * it and say so. Exits 130, as a process ended by SIGINT.
 */
async function leaveExecution(ctx: Context, command: string, executionId: string): Promise<number> {
  const exitCode = signalExitCode("SIGINT");
  if (ctx.values["cancel-on-exit"]) {
    let status: string;
    try {
      status = (await ctx.client().cancel(executionId, `${command} interrupted (--cancel-on-exit)`)).status;
    } catch (error) {
      // 409: it ended between the last poll and the cancel; nothing is left running.
      if (!(error instanceof ApiError && error.status === 409)) throw error;
      const ended = await ctx.client().getExecution(executionId, { resolve: false });
      ctx.warn(`interrupted — execution ${executionId} had already ended ${ended.status}; nothing to cancel`);
      ctx.emit({ interrupted: true, executionId, status: ended.status, cancelled: false });
      return exitCode;
    }
    ctx.warn(
      `interrupted — cancel requested (--cancel-on-exit): execution ${executionId} is ${statusText(ctx.style, status)}`,
    );
    ctx.emit({ interrupted: true, executionId, status, cancelled: true });
    return exitCode;
  }
  const cancelCommand = `weft cancel ${executionId}${apiFlags(ctx)}`;
  ctx.warn(
    `interrupted — execution ${executionId} goes on running (it runs on the API, not in this command)\n` +
      `  follow it again: weft watch ${executionId}${apiFlags(ctx)}\n` +
      `  cancel it:       ${cancelCommand}`,
  );
  ctx.emit({ interrupted: true, executionId, cancelled: false, cancelCommand });
  return exitCode;
}

/** The flags that name the API this command used (--api and the signing flags), as given. */
function apiFlags(ctx: Context): string {
  const { api, region, sigv4 } = ctx.values;
  return [
    ...(api === undefined ? [] : [` --api ${shellWord(api)}`]),
    ...(sigv4 ? [" --sigv4"] : []),
    ...(ctx.values["no-sigv4"] ? [" --no-sigv4"] : []),
    ...(region === undefined ? [] : [` --region ${shellWord(region)}`]),
  ].join("");
}

/** A word a POSIX shell reads back as it is: quoted unless it is plainly safe. */
function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`;
}

const validate: Command = async (ctx, [file]) => {
  const raw = await readJsonFile(file as string);
  const registry = await validationRegistry(ctx);
  const { validateDefinition } = await import("../shared/domain/validate.js");
  const result = validateDefinition(raw, registry);
  if (result.ok) {
    const { definition, graph } = result;
    const entries = graph.entries.map((index) => graph.nodes[index]?.id).filter((id) => id !== undefined);
    ctx.emit({ valid: true, name: definition.name, nodes: definition.nodes.length, entries });
    ctx.print(
      `${file}: valid — workflow "${definition.name}", ${definition.nodes.length} node(s), entry: ${entries.join(", ")}`,
    );
    return EXIT.ok;
  }
  ctx.emit({ valid: false, problems: result.problems });
  const pathWidth = Math.min(40, Math.max(...result.problems.map((p) => p.path.length)));
  const codeWidth = Math.max(...result.problems.map((p) => p.code.length));
  ctx.print(
    [
      `${file}: ${result.problems.length} problem(s)`,
      ...result.problems.map(
        (p) =>
          `  ${p.path.padEnd(pathWidth)}  ${paint(ctx.style, "red", p.code.padEnd(codeWidth))}  ${p.message}`,
      ),
    ].join("\n"),
  );
  return EXIT.failure;
};

/**
 * The task types `weft dev` / `npm start` would load in this folder (shared/tasks/project-tasks.ts:
 * weft.config.json or `--config FILE`, else ./tasks; the built-ins, http, lambda and emit always),
 * `--custom-tasks DIR` in place of the custom task folder when given. emit gets a stand-in sender
 * that is never called: validation needs only its params schema. Loaded lazily: the other commands
 * need none of the engine.
 */
async function validationRegistry(ctx: Context) {
  const [{ buildTaskRegistry }, { projectTaskOptions }] = await Promise.all([
    import("../shared/tasks/loader.js"),
    import("../shared/tasks/project-tasks.js"),
  ]);
  const { config, "custom-tasks": customTasksDir } = ctx.values;
  let project: Awaited<ReturnType<typeof projectTaskOptions>>;
  try {
    project = await projectTaskOptions({
      cwd: process.cwd(),
      ...(config === undefined ? {} : { configFile: config }),
    });
  } catch (error) {
    throw new CliError(error instanceof Error ? error.message : String(error), EXIT.failure, "BadConfig");
  }
  const never = () => Promise.reject(new Error("validation only"));
  try {
    return await buildTaskRegistry({
      ...project,
      ...(customTasksDir === undefined ? {} : { customTasksDir }),
      events: { send: never },
      lifecycleBusName: "validation-only",
    });
  } catch (error) {
    throw new CliError(
      error instanceof Error ? error.message : String(error),
      EXIT.failure,
      "BadCustomTasks",
    );
  }
}

async function registerFile(ctx: Context, file: string) {
  const definition = await readJsonFile(file);
  const { status, body } = await ctx.client().registerWorkflow(definition);
  // Accepted, but worth a word (e.g. a `workflow` node naming a workflow not registered yet).
  for (const warning of body.warnings ?? []) ctx.note(`warning: ${warning.path}: ${warning.message}`);
  return { ...body, created: status === 201 };
}

const register: Command = async (ctx, [file]) => {
  const result = await registerFile(ctx, file as string);
  ctx.emit(result);
  ctx.print(
    result.created
      ? `registered workflow "${result.name}" version ${result.version}`
      : `workflow "${result.name}" version ${result.version} is already registered with this content`,
  );
  return EXIT.ok;
};

/** `--input`, read, parsed and measured: every problem with it is reported before any request. */
async function inputOf(ctx: Context): Promise<EncodedInput | undefined> {
  const input = await readInput(ctx.values.input);
  return input === undefined ? undefined : encodeInput(input);
}

/** The input's fields of a request (`input`, or `inputRef` after an upload), none without --input. */
async function inputFields(ctx: Context, input: EncodedInput | undefined): Promise<Partial<InputSource>> {
  return input === undefined ? {} : sendInput(ctx.client(), input, ctx.note);
}

const start: Command = async (ctx, [workflow]) => {
  const version = integerOption("version", ctx.values.version, 1);
  const input = await inputOf(ctx);
  const { status, body } = await ctx.client().startExecution({
    workflow: workflow as string,
    ...(version === undefined ? {} : { version }),
    ...(await inputFields(ctx, input)),
    ...(ctx.values["no-start"] ? { start: false } : {}),
    ...(ctx.values.key === undefined ? {} : { idempotencyKey: ctx.values.key }),
  });
  ctx.emit({ ...body, created: status === 202 });
  ctx.print(
    `execution ${body.executionId} ${statusText(ctx.style, body.status)}${status === 200 ? " (existing execution for this key)" : ""}`,
  );
  ctx.note(
    body.status === "PENDING"
      ? `start it with: weft trigger ${body.executionId}`
      : `follow it with: weft watch ${body.executionId}`,
  );
  return EXIT.ok;
};

const run: Command = async (ctx, [file]) => {
  const input = await inputOf(ctx);
  const registered = await registerFile(ctx, file as string);
  ctx.print(
    `${registered.created ? "registered" : "using"} workflow "${registered.name}" version ${registered.version}`,
  );
  const fields = await inputFields(ctx, input);
  // Until here a Ctrl-C ends the command at once: nothing runs yet. From the start request on, an
  // execution may exist, and Ctrl-C must say what becomes of it.
  const interrupt = ctx.interrupt();
  const { body } = await ctx.client().startExecution({
    workflow: registered.name,
    version: registered.version,
    ...fields,
    ...(ctx.values.key === undefined ? {} : { idempotencyKey: ctx.values.key }),
  });
  return watchToEnd(ctx, "weft run", body.executionId, interrupt);
};

const status: Command = async (ctx, [id]) => {
  const view = await ctx.client().getExecution(id as string, ctx.values.resolve ? { resolve: true } : {});
  ctx.emit(view);
  if (!ctx.json) {
    const workflow = await ctx
      .client()
      .getWorkflow(view.workflow, view.version)
      .catch(() => undefined);
    ctx.print(renderExecution(ctx.style, view, Date.now(), dependencyMap(workflow)));
  }
  return EXIT.ok;
};

const watch: Command = (ctx, [id]) => watchToEnd(ctx, "weft watch", id as string, ctx.interrupt());

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const events: Command = async (ctx, [id]) => {
  const executionId = id as string;
  const limit = integerOption("limit", ctx.values.limit, 1) ?? 100;
  const client = ctx.client();
  const all: unknown[] = [];
  const show = (event: Parameters<typeof renderEvent>[1]) => {
    if (ctx.json && ctx.values.follow) ctx.stdout.write(`${stringifyExact(event)}\n`);
    else if (ctx.json) all.push(event);
    else ctx.print(renderEvent(ctx.style, event));
  };
  // The cursor of the page being read and how many of its events were shown: following re-reads the last
  // page from its cursor and skips what it already printed, so the opaque cursor is never forged.
  let cursor: string | undefined;
  let shownInPage = 0;
  const drain = async () => {
    for (;;) {
      const page = await client.listEvents(executionId, {
        ...(cursor === undefined ? {} : { after: cursor }),
        limit,
      });
      for (const event of page.events.slice(shownInPage)) show(event);
      shownInPage = Math.max(shownInPage, page.events.length);
      if (page.next === undefined) return;
      cursor = page.next;
      shownInPage = 0;
    }
  };
  await drain();
  if (ctx.values.follow) {
    for (;;) {
      // Only its status is needed: references keep large values out of every poll.
      const view: ExecutionView = await client.getExecution(executionId, { resolve: false });
      await drain();
      if (TERMINAL_EXECUTION.has(view.status)) break;
      await sleep(intervalOf(ctx));
    }
  } else {
    ctx.emit({ events: all });
  }
  return EXIT.ok;
};

const cancel: Command = async (ctx, [id]) => {
  const body = await ctx.client().cancel(id as string, ctx.values.reason);
  ctx.emit(body);
  ctx.print(`cancel requested: execution ${body.executionId} is ${statusText(ctx.style, body.status)}`);
  return EXIT.ok;
};

const trigger: Command = async (ctx, [id]) => {
  const input = await inputOf(ctx);
  const given = input === undefined ? undefined : await sendInput(ctx.client(), input, ctx.note);
  const body = await ctx.client().trigger(id as string, given);
  ctx.emit(body);
  ctx.print(`execution ${body.executionId} ${statusText(ctx.style, body.status)}`);
  ctx.note(`follow it with: weft watch ${body.executionId}`);
  return EXIT.ok;
};

const list: Command = async (ctx) => {
  const statusFilter = ctx.values.status?.toUpperCase();
  if (statusFilter !== undefined && !EXECUTION_STATUSES.includes(statusFilter as ExecutionStatus)) {
    throw new UsageError(
      `--status must be one of ${EXECUTION_STATUSES.join(", ")}, got "${ctx.values.status}"`,
    );
  }
  const limit = integerOption("limit", ctx.values.limit, 1);
  const page = await ctx.client().listExecutions({
    ...(ctx.values.workflow === undefined ? {} : { workflow: ctx.values.workflow }),
    ...(statusFilter === undefined ? {} : { status: statusFilter }),
    ...(limit === undefined ? {} : { limit }),
    ...(ctx.values.next === undefined ? {} : { next: ctx.values.next }),
  });
  ctx.emit(page);
  ctx.print(renderExecutionList(ctx.style, page.executions, Date.now()));
  if (page.next !== undefined && !ctx.json) ctx.note(`more: add --next ${page.next}`);
  return EXIT.ok;
};

const workflows: Command = async (ctx) => {
  const limit = integerOption("limit", ctx.values.limit, 1);
  const page = await ctx.client().listWorkflows({
    ...(limit === undefined ? {} : { limit }),
    ...(ctx.values.next === undefined ? {} : { next: ctx.values.next }),
  });
  ctx.emit(page);
  ctx.print(renderWorkflows(ctx.style, page.workflows));
  if (page.next !== undefined && !ctx.json) ctx.note(`more: add --next ${page.next}`);
  return EXIT.ok;
};

/** `weft show NAME`: readable; `--json`: the definition exactly as registered (register takes it back). */
const show: Command = async (ctx, [name]) => {
  const version = integerOption("version", ctx.values.version, 1);
  const workflow = await ctx.client().getWorkflow(name as string, version);
  ctx.emit(workflow.definition);
  ctx.print(renderDefinition(ctx.style, workflow));
  return EXIT.ok;
};

/** `weft cost`: loaded only for it (it compiles the definition and loads the task types). */
const costCommand: Command = async (ctx, args) => {
  const { cost } = await import("./cost.js");
  return cost(ctx, args);
};

/** `weft console`: loaded only for it (it serves files and proxies). */
const consoleCommand: Command = async (ctx) => {
  const port = integerOption("port", ctx.values.port, 0) ?? DEFAULT_CONSOLE_PORT;
  if (port > 65_535) throw new UsageError(`--port must be at most 65535, got "${ctx.values.port}"`);
  const { runConsole } = await import("./console.js");
  return runConsole(ctx, port);
};

const dlqList: Command = async (ctx) => {
  const limit = integerOption("limit", ctx.values.limit, 1);
  const page = await ctx.client().listDeadLetters({
    ...(limit === undefined ? {} : { limit }),
    ...(ctx.values.next === undefined ? {} : { next: ctx.values.next }),
  });
  ctx.emit(page);
  ctx.print(renderDeadLetters(ctx.style, page.deadLetters));
  if (page.next !== undefined && !ctx.json) ctx.note(`more: add --next ${page.next}`);
  return EXIT.ok;
};

const dlqRedrive: Command = async (ctx, ids) => {
  const body = await ctx.client().redrive(ids);
  ctx.emit(body);
  const lines = [
    body.redriven.length === 0
      ? "nothing redriven"
      : `redriven ${body.redriven.length}: ${body.redriven.join(", ")}`,
    ...body.skipped.map((s) => `skipped ${s.id}: ${s.reason}`),
  ];
  ctx.print(lines.join("\n"));
  // Work the user named that could not be redriven is a failure; a blanket redrive skipping some is not.
  return ids.length > 0 && body.skipped.length > 0 ? EXIT.failure : EXIT.ok;
};

const workers: Command = async (ctx) => {
  // Every page of the registry, in worker id order.
  const found: Awaited<ReturnType<WeftClient["listWorkers"]>>["workers"] = [];
  let next: string | undefined;
  do {
    const page = await ctx.client().listWorkers(next === undefined ? {} : { next });
    found.push(...page.workers);
    next = page.next;
  } while (next !== undefined);
  ctx.emit({ workers: found });
  ctx.print(renderWorkers(ctx.style, found, Date.now()));
  return EXIT.ok;
};

/** `--token`: required by every callback command. Never printed: it settles the node. */
function tokenOf(ctx: Context, command: string): string {
  const token = ctx.values.token;
  if (token === undefined || token.trim() === "")
    throw new UsageError(`"${command}" needs --token T (the callback's token, from weft status ID --json)`);
  return token.trim();
}

/** `--output`, read and parsed as --input is, sent as its exact JSON text; undefined without it. */
async function outputOf(ctx: Context): Promise<JsonText | undefined> {
  const output = await readInput(ctx.values.output, undefined, "--output");
  if (output === undefined) return undefined;
  const encoded = encodeInput(output);
  if (encoded.bytes > DIRECT_INPUT_BYTES) {
    throw new CliError(
      `the output (${encoded.source}) is ${formatSize(encoded.bytes)} as JSON text; a callback's output is sent in its request, at most ${formatSize(DIRECT_INPUT_BYTES)}`,
      EXIT.failure,
      "PayloadTooLarge",
    );
  }
  return new JsonText(encoded.text);
}

const callbackComplete: Command = async (ctx) => {
  const token = tokenOf(ctx, "callback complete");
  const output = await outputOf(ctx);
  const body = await ctx.client().completeCallback(token, output);
  ctx.emit(body);
  ctx.print(`callback completed${output === undefined ? " (output null)" : ""}: its node goes on`);
  return EXIT.ok;
};

const callbackFail: Command = async (ctx) => {
  const token = tokenOf(ctx, "callback fail");
  const error = {
    ...(ctx.values["error-name"] === undefined ? {} : { name: ctx.values["error-name"] }),
    ...(ctx.values["error-message"] === undefined ? {} : { message: ctx.values["error-message"] }),
    ...(ctx.values.retryable ? { retryable: true } : {}),
  };
  const body = await ctx.client().failCallback(token, error);
  ctx.emit(body);
  ctx.print(
    ctx.values.retryable
      ? "callback failed: its node is retried by its retry policy (a new wait, with a new token)"
      : "callback failed: its node failed",
  );
  return EXIT.ok;
};

const callbackHeartbeat: Command = async (ctx) => {
  const token = tokenOf(ctx, "callback heartbeat");
  const body = await ctx.client().heartbeatCallback(token);
  ctx.emit(body);
  ctx.print("callback heartbeat recorded");
  return EXIT.ok;
};

/** Reached only when `worker` is not the first argument (main.ts routes `weft worker …` itself). */
const workerNotFirst: Command = async () => {
  throw new UsageError('"worker" must come first: weft worker --pool POOL --tasks DIR [OPTIONS]');
};

export const HANDLERS: Record<string, Command> = {
  validate,
  register,
  start,
  run,
  status,
  watch,
  events,
  cancel,
  trigger,
  list,
  workflows,
  show,
  cost: costCommand,
  console: consoleCommand,
  "dlq list": dlqList,
  "dlq redrive": dlqRedrive,
  workers,
  worker: workerNotFirst,
  "callback complete": callbackComplete,
  "callback fail": callbackFail,
  "callback heartbeat": callbackHeartbeat,
};

export function unknownHandler(name: string): never {
  throw new CliError(`no handler for command "${name}"`);
}
