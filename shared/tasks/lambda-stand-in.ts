/**
 * Calling a stand-in for a Lambda function as Lambda would: the local runtime's modules
 * (lambda-local.ts) and the test runtime's functions (testkit/lambda.ts) both go through here, so a
 * workflow sees the same event, result and errors from either as from a deployed function.
 */
import { parseExact, stringifyExact } from "../domain/exact-numbers.js";
import type { LambdaInvocationResult } from "./lambda.js";

/**
 * The names a function is looked up by, most specific first: `name:qualifier`, then the name as
 * given, then the function name in an ARN. `name` is that function name (undefined when none parses).
 */
export function functionLookup(
  functionName: string,
  qualifier: string | undefined,
): { name: string | undefined; candidates: string[] } {
  const name = functionName.match(/(?:^|:function:)([a-zA-Z0-9-_.]+)(?::[a-zA-Z0-9$_-]+)?$/)?.[1];
  return {
    name,
    candidates: [
      ...(qualifier === undefined ? [] : [`${functionName}:${qualifier}`, `${name}:${qualifier}`]),
      functionName,
      ...(name === undefined ? [] : [name]),
    ],
  };
}

/**
 * Calls `handler` with the payload after a JSON round trip, and answers as the Invoke API does: the
 * result after a round trip, or a thrown error as an "Unhandled" function error. As with Lambda, a
 * handler cannot be stopped: an abort only stops the waiting (and rejects with the signal's reason).
 */
export async function callAsLambda(
  handler: (event: unknown) => unknown,
  payload: unknown,
  signal: AbortSignal,
): Promise<LambdaInvocationResult> {
  const aborted = new Promise<never>((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
  try {
    const result = await Promise.race([Promise.resolve().then(() => handler(roundTrip(payload))), aborted]);
    return { payload: roundTrip(result) };
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    return { functionError: "Unhandled", payload: errorPayload(error) };
  }
}

/** What crossing Lambda's JSON boundary does to a value (undefined becomes null). */
function roundTrip(value: unknown): unknown {
  // With exact numbers (exact-numbers.ts), as the real boundary (lambda-aws.ts) treats them.
  const text = stringifyExact(value);
  return text === undefined ? null : parseExact(text);
}

/** Lambda's error payload; `terminal` carries a TerminalError across (the lambda task reads it). */
function errorPayload(error: unknown): Record<string, unknown> {
  if (error instanceof Error) {
    const terminal = (error as { terminal?: unknown }).terminal;
    return {
      errorType: error.name,
      errorMessage: error.message,
      ...(terminal === true ? { terminal: true } : {}),
      trace: (error.stack ?? "").split("\n"),
    };
  }
  return {
    errorType: "Error",
    errorMessage: typeof error === "string" ? error : (JSON.stringify(error) ?? String(error)),
  };
}
