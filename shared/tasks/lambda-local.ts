/**
 * The LambdaInvoker port on local ES modules, for the local runtime: no emulator runs Lambda
 * functions without Docker, so each function name maps to a module's exported handler, which is
 * called as Lambda would call it (a JSON round trip of event and result, a Lambda-like context, and
 * an error turned into Lambda's `{errorType, errorMessage}` payload).
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import type { Context } from "aws-lambda";
import { TerminalError } from "./errors.js";
import type { LambdaInvocationResult, LambdaInvoker } from "./lambda.js";
import { callAsLambda, functionLookup } from "./lambda-stand-in.js";
import { importModuleFile } from "./module-import.js";

/** Lambda's longest invocation. */
const MAX_LAMBDA_MS = 15 * 60 * 1000;

type Handler = (event: unknown, context: Context) => unknown;

export class LocalModuleInvoker implements LambdaInvoker {
  private readonly handlers = new Map<string, Promise<Handler>>();

  /**
   * @param modules function name (or `name:qualifier`) → `"./path/to/module.ts#exportName"`; the
   *   export defaults to `handler`. ARNs are matched by their function name. May be empty: the
   *   local runtime always has the `lambda` task type, and a node calling a function no module plays
   *   fails saying where to map it.
   * @param baseDir what relative module paths are resolved against.
   * @param configFile the file the mapping comes from, for that message (default weft.config.json).
   */
  constructor(
    private readonly modules: Readonly<Record<string, string>>,
    private readonly baseDir: string,
    private readonly configFile = "weft.config.json",
  ) {}

  async invoke(
    functionName: string,
    qualifier: string | undefined,
    payload: unknown,
    signal: AbortSignal,
  ): Promise<LambdaInvocationResult> {
    const key = this.resolveKey(functionName, qualifier);
    const handler = await this.load(key);
    const context = lambdaContext(functionName);
    return callAsLambda((event) => handler(event, context), payload, signal);
  }

  private resolveKey(functionName: string, qualifier: string | undefined): string {
    const { name, candidates } = functionLookup(functionName, qualifier);
    const key = candidates.find((candidate) => Object.hasOwn(this.modules, candidate));
    if (key === undefined) {
      const known = Object.keys(this.modules);
      const example = JSON.stringify({ [name ?? functionName]: `./lambdas/${name ?? "handler"}.ts#handler` });
      throw new TerminalError(
        `no local module is mapped for Lambda function "${functionName}": locally a module plays each function — add it to "lambdaModules" in ${this.configFile}, e.g. "lambdaModules": ${example} (it maps ${
          known.length > 0 ? known.map((k) => `"${k}"`).join(", ") : "none"
        })`,
      );
    }
    return key;
  }

  private load(key: string): Promise<Handler> {
    let handler = this.handlers.get(key);
    if (!handler) {
      handler = this.importHandler(key);
      // A failed import is not cached: the file may be fixed before the retry.
      handler.catch(() => this.handlers.delete(key));
      this.handlers.set(key, handler);
    }
    return handler;
  }

  private async importHandler(key: string): Promise<Handler> {
    const spec = this.modules[key] ?? "";
    const hash = spec.lastIndexOf("#");
    const file = hash === -1 ? spec : spec.slice(0, hash);
    const exportName = hash === -1 ? "handler" : spec.slice(hash + 1);
    const absolute = path.resolve(this.baseDir, file);
    let module: Record<string, unknown>;
    try {
      // TypeScript modules too, from the compiled CLI (module-import.ts).
      module = await importModuleFile(absolute);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new TerminalError(
        `cannot load the local module of Lambda function "${key}" (${absolute}): ${reason}`,
      );
    }
    const handler = module[exportName];
    if (typeof handler !== "function")
      throw new TerminalError(
        `the local module of Lambda function "${key}" (${absolute}) has no exported function "${exportName}"`,
      );
    return handler as Handler;
  }
}

function lambdaContext(functionName: string): Context {
  const deadline = Date.now() + MAX_LAMBDA_MS;
  const requestId = randomUUID();
  const legacy = () => {
    throw new Error("the legacy Lambda callback methods are not supported");
  };
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: "$LATEST",
    invokedFunctionArn: functionName.startsWith("arn:")
      ? functionName
      : `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: "1024",
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: `local/${requestId}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: legacy,
    fail: legacy,
    succeed: legacy,
  };
}
