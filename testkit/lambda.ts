/**
 * The `lambda` task type in the test runtime: each function name maps to a JavaScript function of
 * the test's, called as Lambda would call it — the event and the result cross a JSON boundary, and
 * a thrown error becomes Lambda's `{errorType, errorMessage}` payload, which the `lambda` task turns
 * into a node error exactly as deployed (shared/tasks/lambda.ts: retryable unless terminal).
 */
import { TerminalError } from "../shared/tasks/errors.js";
import type { LambdaInvocationResult, LambdaInvoker, LambdaTaskEvent } from "../shared/tasks/lambda.js";

/** A stand-in for a Lambda function: gets the event a `lambda` node sends, returns its result. */
export type LambdaHandler = (event: LambdaTaskEvent) => unknown;

export class FunctionMapInvoker implements LambdaInvoker {
  constructor(private readonly handlers: Readonly<Record<string, LambdaHandler>>) {}

  async invoke(
    functionName: string,
    qualifier: string | undefined,
    payload: unknown,
    signal: AbortSignal,
  ): Promise<LambdaInvocationResult> {
    const handler = this.resolve(functionName, qualifier);
    const aborted = new Promise<never>((_, reject) => {
      if (signal.aborted) reject(signal.reason);
      signal.addEventListener("abort", () => reject(signal.reason), { once: true });
    });
    try {
      // As with Lambda, a handler cannot be stopped: the invocation only stops waiting for it.
      const result = await Promise.race([
        Promise.resolve().then(() => handler(roundTrip(payload) as LambdaTaskEvent)),
        aborted,
      ]);
      return { payload: roundTrip(result) };
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      return { functionError: "Unhandled", payload: errorPayload(error) };
    }
  }

  /** `name:qualifier` first, then the name; an ARN is matched by the function name in it. */
  private resolve(functionName: string, qualifier: string | undefined): LambdaHandler {
    const name = functionName.match(/(?:^|:function:)([a-zA-Z0-9-_.]+)(?::[a-zA-Z0-9$_-]+)?$/)?.[1];
    const candidates = [
      ...(qualifier === undefined ? [] : [`${functionName}:${qualifier}`, `${name}:${qualifier}`]),
      functionName,
      ...(name === undefined ? [] : [name]),
    ];
    for (const candidate of candidates) {
      const handler = Object.hasOwn(this.handlers, candidate) ? this.handlers[candidate] : undefined;
      if (handler) return handler;
    }
    const known = Object.keys(this.handlers);
    throw new TerminalError(
      `no handler for Lambda function "${functionName}" in this test runtime: pass createTestRuntime({ lambda: { "${name ?? functionName}": (event) => … } })${
        known.length > 0 ? ` (it has: ${known.join(", ")})` : ""
      }`,
    );
  }
}

/** What crossing Lambda's JSON boundary does to a value (undefined becomes null). */
function roundTrip(value: unknown): unknown {
  const text = JSON.stringify(value);
  return text === undefined ? null : (JSON.parse(text) as unknown);
}

/** Lambda's error payload; `terminal` carries a TerminalError across (functionFailure reads it). */
function errorPayload(error: unknown): Record<string, unknown> {
  if (error instanceof Error) {
    const terminal = (error as { terminal?: unknown }).terminal === true;
    return { errorType: error.name, errorMessage: error.message, ...(terminal ? { terminal: true } : {}) };
  }
  return {
    errorType: "Error",
    errorMessage: typeof error === "string" ? error : (JSON.stringify(error) ?? String(error)),
  };
}
