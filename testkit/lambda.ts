/**
 * The `lambda` task type in the test runtime: each function name maps to a JavaScript function of
 * the test's, called as Lambda would call it — the event and the result cross a JSON boundary, and
 * a thrown error becomes Lambda's `{errorType, errorMessage}` payload, which the `lambda` task turns
 * into a node error exactly as deployed (shared/tasks/lambda.ts: retryable unless terminal).
 */
import { TerminalError } from "../shared/tasks/errors.js";
import type { LambdaInvocationResult, LambdaInvoker, LambdaTaskEvent } from "../shared/tasks/lambda.js";
import { callAsLambda, functionLookup } from "../shared/tasks/lambda-stand-in.js";

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
    return callAsLambda((event) => handler(event as LambdaTaskEvent), payload, signal);
  }

  /** `name:qualifier` first, then the name; an ARN is matched by the function name in it. */
  private resolve(functionName: string, qualifier: string | undefined): LambdaHandler {
    const { name, candidates } = functionLookup(functionName, qualifier);
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
