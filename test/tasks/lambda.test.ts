/**
 * The `lambda` task type through the real engine (in-memory ports), with function names mapped to
 * local modules (LocalModuleInvoker), as the local runtime runs them.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { LambdaClient } from "@aws-sdk/client-lambda";
import { afterEach, describe, expect, it } from "vitest";
import { HISTORY } from "../../shared/engine/lifecycle.js";
import { TerminalError } from "../../shared/tasks/errors.js";
import { lambdaTask } from "../../shared/tasks/lambda.js";
import { AwsLambdaInvoker } from "../../shared/tasks/lambda-aws.js";
import { LocalModuleInvoker } from "../../shared/tasks/lambda-local.js";
import { buildTaskRegistry } from "../../shared/tasks/loader.js";
import { loadLocalConfig, localTaskOptions } from "../../shared/tasks/local-config.js";
import { type Backend, createBackend } from "../support/backends.js";
import { countEvents } from "../support/harness.js";
import { fastRetry, runWorkflow } from "./helpers.js";

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../fixtures/lambdas");
const modules = {
  echo: "./handlers.ts#echo",
  flaky: "./handlers.ts#flaky",
  rejects: "./handlers.ts#rejects",
  plain: "./handlers.ts",
  missing: "./handlers.ts#nothing",
};

let backend: Backend | undefined;
afterEach(async () => {
  await backend?.cleanup();
  backend = undefined;
});

async function engine() {
  backend = await createBackend("memory", { tasks: [lambdaTask(new LocalModuleInvoker(modules, fixtures))] });
  return backend;
}

describe("lambda task (local module map)", () => {
  it("invokes the function with input, params, deps and context, and returns its result", async () => {
    const arn = "arn:aws:lambda:eu-west-1:123456789012:function:echo";
    const run = await runWorkflow(
      await engine(),
      {
        name: "lambda-ok",
        nodes: [
          { id: "first", type: "pass", params: { value: { from: "first" } } },
          { id: "call", type: "lambda", dependsOn: ["first"], params: { functionName: arn } },
          { id: "default-export", type: "lambda", params: { functionName: "plain", qualifier: "live" } },
        ],
      },
      { order: 42 },
    );
    expect(run.view.status).toBe("SUCCEEDED");
    expect(run.node("call").output).toEqual({
      functionName: arn,
      received: {
        input: { order: 42 },
        params: { functionName: arn },
        deps: { first: { from: "first" } },
        context: {
          executionId: run.executionId,
          nodeId: "call",
          attempt: 1,
          idempotencyKey: `${run.executionId}:call:1`,
        },
      },
    });
    expect(run.node("default-export").output).toEqual({ input: { order: 42 } });
  });

  it("sends `payload` (a value with expressions) as the event in place of the default one", async () => {
    const run = await runWorkflow(
      await engine(),
      {
        name: "lambda-payload",
        nodes: [
          { id: "first", type: "pass", params: { value: { amount: 20 } } },
          {
            id: "call",
            type: "lambda",
            dependsOn: ["first"],
            params: {
              functionName: "echo",
              payload: {
                order: "{% input.order %}",
                total: "{% deps.first.amount * 2 %}",
                fixed: [1, "two"],
              },
            },
          },
          { id: "scalar", type: "lambda", params: { functionName: "echo", payload: "{% input.order %}" } },
        ],
      },
      { order: 42 },
    );
    expect(run.view.status).toBe("SUCCEEDED");
    expect(run.node("call").output).toEqual({
      functionName: "echo",
      received: { order: 42, total: 40, fixed: [1, "two"] },
    });
    expect(run.node("scalar").output).toEqual({ functionName: "echo", received: 42 });
  });

  it("retries a thrown error, then succeeds", async () => {
    const run = await runWorkflow(await engine(), {
      name: "lambda-flaky",
      nodes: [{ id: "call", type: "lambda", params: { functionName: "flaky" }, retry: fastRetry }],
    });
    expect(run.view.status).toBe("SUCCEEDED");
    expect(run.node("call")).toMatchObject({ status: "COMPLETED", attempt: 2, output: { attempt: 2 } });
    const retry = run.history.find((e) => e.type === HISTORY.nodeRetryScheduled);
    expect(retry?.detail?.error).toMatchObject({ name: "Error", retryable: true });
    expect(retry?.detail?.error).toMatchObject({
      message: expect.stringContaining("flaky failure on attempt 1"),
    });
  });

  it("fails at once when the function marks its error terminal", async () => {
    const { engine: weft } = await engine();
    const run = await runWorkflow(backend!, {
      name: "lambda-terminal",
      nodes: [{ id: "call", type: "lambda", params: { functionName: "rejects" }, retry: fastRetry }],
    });
    expect(run.view.status).toBe("FAILED");
    expect(run.node("call")).toMatchObject({
      status: "FAILED",
      attempt: 1,
      error: { name: "TerminalError" },
    });
    expect(run.node("call").error?.message).toContain("ValidationFailed: order 42 is not valid");
    expect(countEvents(run.history, HISTORY.nodeRetryScheduled)).toBe(0);
    const dead = await weft.listDeadLetters({ limit: 10 });
    expect(dead.items.map((d) => [d.nodeId, d.reason])).toEqual([["call", "terminal"]]);
  });

  it("keeps the function's error type as the error name, so retry.nonRetryable can list it", async () => {
    const run = await runWorkflow(await engine(), {
      name: "lambda-non-retryable",
      nodes: [
        {
          id: "call",
          type: "lambda",
          params: { functionName: "flaky" },
          retry: { ...fastRetry, nonRetryable: ["Error"] },
        },
      ],
    });
    expect(run.node("call")).toMatchObject({
      status: "FAILED",
      attempt: 1,
      error: { name: "Error", retryable: false },
    });
  });

  it("fails clearly for an unmapped function or a missing export", async () => {
    await engine();
    const unmapped = await runWorkflow(backend!, {
      name: "lambda-unmapped",
      nodes: [{ id: "call", type: "lambda", params: { functionName: "nobody" } }],
    });
    expect(unmapped.node("call")).toMatchObject({
      status: "FAILED",
      attempt: 1,
      error: { name: "TerminalError" },
    });
    expect(unmapped.node("call").error?.message).toContain(
      'no local module is mapped for Lambda function "nobody"',
    );

    const noExport = await runWorkflow(backend!, {
      name: "lambda-no-export",
      nodes: [{ id: "call", type: "lambda", params: { functionName: "missing" } }],
    });
    expect(noExport.node("call")).toMatchObject({
      status: "FAILED",
      attempt: 1,
      error: { name: "TerminalError" },
    });
    expect(noExport.node("call").error?.message).toContain('has no exported function "nothing"');
  });

  it("refuses a bad function name at submit", async () => {
    const { engine: weft } = await engine();
    await expect(
      weft.registerWorkflow({
        name: "lambda-bad",
        nodes: [{ id: "call", type: "lambda", params: { functionName: "not a name!" } }],
      }),
    ).rejects.toMatchObject({
      code: "InvalidDefinition",
      details: [expect.objectContaining({ code: "invalid_params" })],
    });
  });
});

describe("weft.config.json", () => {
  let dir: string | undefined;
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
    dir = undefined;
  });

  async function configFile(content: string | ((dir: string) => string)): Promise<string> {
    dir = await mkdtemp(path.join(tmpdir(), "weft-config-"));
    const file = path.join(dir, "weft.config.json");
    await writeFile(file, typeof content === "string" ? content : content(dir));
    return file;
  }

  it("maps Lambda functions to local modules and names the custom tasks folder", async () => {
    const repoRoot = path.resolve(fixtures, "../../..");
    // Relative paths are resolved against the config file's folder.
    const file = await configFile((configDir) =>
      JSON.stringify({
        tasksDir: path.relative(configDir, path.join(repoRoot, "tasks")),
        lambdaModules: { echo: `${path.relative(configDir, path.join(fixtures, "handlers.ts"))}#echo` },
      }),
    );
    const config = await loadLocalConfig(file);
    expect(config.tasksDir).toBe(path.join(repoRoot, "tasks"));
    const registry = await buildTaskRegistry(localTaskOptions(config));
    expect(registry.names()).toEqual(
      expect.arrayContaining(["http", "lambda", "uppercase", "pass", "merge"]),
    );
    expect(registry.has("emit")).toBe(false);

    backend = await createBackend("memory", { tasks: [registry.get("lambda")!, registry.get("uppercase")!] });
    const run = await runWorkflow(backend, {
      name: "config-run",
      nodes: [
        { id: "shout", type: "uppercase", params: { text: "hi" } },
        { id: "call", type: "lambda", dependsOn: ["shout"], params: { functionName: "echo" } },
      ],
    });
    expect(run.view.status).toBe("SUCCEEDED");
    expect(run.node("call").output).toMatchObject({ received: { deps: { shout: { text: "HI" } } } });
  });

  it("reports a missing file, bad JSON and schema problems clearly", async () => {
    await expect(loadLocalConfig("/nonexistent/weft.config.json")).rejects.toThrow(
      "weft config file /nonexistent/weft.config.json does not exist",
    );
    await expect(loadLocalConfig(await configFile("{ nope"))).rejects.toThrow(/is not valid JSON/);
    const invalid = await loadLocalConfig(
      await configFile(JSON.stringify({ taskDir: "x", lambdaModules: { f: "a.ts#1bad" } })),
    ).catch((error: Error) => error.message);
    expect(invalid).toMatch(/weft config file .*weft\.config\.json is invalid: /);
    expect(invalid).toContain("(top level): unknown field(s) taskDir");
    expect(invalid).toContain(
      'lambdaModules.f: must be "path/to/module.ts" or "path/to/module.ts#exportName"',
    );
  });
});

describe("AwsLambdaInvoker", () => {
  // No emulator runs Lambda functions without Docker: a stub client stands in for the service.
  function invoker(answer: (input: Record<string, unknown>) => unknown) {
    const sent: Array<Record<string, unknown>> = [];
    const client = {
      send: async (command: { input: Record<string, unknown> }) => {
        sent.push(command.input);
        return answer(command.input);
      },
    } as unknown as LambdaClient;
    return { sent, invoker: new AwsLambdaInvoker(client) };
  }
  const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

  it("invokes RequestResponse with the JSON payload and the qualifier, and decodes the result", async () => {
    const { sent, invoker: aws } = invoker(() => ({ StatusCode: 200, Payload: encode({ ok: true }) }));
    const result = await aws.invoke("load", "live", { input: 1 }, new AbortController().signal);
    expect(result).toEqual({ payload: { ok: true } });
    expect(sent[0]).toMatchObject({
      FunctionName: "load",
      Qualifier: "live",
      InvocationType: "RequestResponse",
    });
    expect(JSON.parse(new TextDecoder().decode(sent[0]?.Payload as Uint8Array))).toEqual({ input: 1 });
  });

  it("returns a function error with its payload, which the task maps to retryable or terminal", async () => {
    const error = { errorType: "TerminalError", errorMessage: "no such order" };
    const { invoker: aws } = invoker(() => ({
      StatusCode: 200,
      FunctionError: "Unhandled",
      Payload: encode(error),
    }));
    const result = await aws.invoke("load", undefined, {}, new AbortController().signal);
    expect(result).toEqual({ functionError: "Unhandled", payload: error });
    const task = lambdaTask(aws);
    const run = task.run({
      input: null,
      params: { functionName: "load" },
      deps: {},
      context: {
        executionId: "e",
        nodeId: "n",
        attempt: 1,
        idempotencyKey: "e:n:1",
        signal: new AbortController().signal,
        deadline: Date.now() + 1000,
        sleep: async () => {},
        now: () => Date.now(),
      },
    });
    await expect(run).rejects.toBeInstanceOf(TerminalError);
  });

  it("makes a missing function terminal", async () => {
    const { invoker: aws } = invoker(() => {
      throw Object.assign(new Error("Function not found"), { name: "ResourceNotFoundException" });
    });
    await expect(aws.invoke("gone", undefined, {}, new AbortController().signal)).rejects.toBeInstanceOf(
      TerminalError,
    );
  });
});
