/**
 * The `lambda` task type: invokes the user's function (RequestResponse) with the handler input and
 * returns its result. A function error is retryable unless the function marks it terminal. The
 * invocation goes through a small port, so the local runtime can map functions to local modules.
 */
import * as z from "../domain/zod.js";
import { TerminalError } from "./errors.js";
import { defineTask, type TaskType } from "./task-type.js";

export interface LambdaInvocationResult {
  /** Set when the function failed ("Unhandled", "Handled"); `payload` then holds the error object. */
  functionError?: string;
  payload: unknown;
}

/** The port the `lambda` task invokes functions through. */
export interface LambdaInvoker {
  invoke(
    functionName: string,
    qualifier: string | undefined,
    payload: unknown,
    signal: AbortSignal,
  ): Promise<LambdaInvocationResult>;
}

/** Lambda's own pattern for FunctionName: a name, a partial ARN or a full ARN (optionally qualified). */
const FUNCTION_NAME =
  /^(arn:(aws[a-zA-Z-]*)?:lambda:)?([a-z]{2}((-gov)|(-iso([a-z]?)))?-[a-z]+-\d{1}:)?(\d{12}:)?(function:)?([a-zA-Z0-9-_.]+)(:(\$LATEST|[a-zA-Z0-9-_]+))?$/;

export const lambdaParamsSchema = z.strictObject({
  functionName: z
    .string()
    .check(
      z.minLength(1),
      z.maxLength(170),
      z.regex(FUNCTION_NAME, "functionName must be a Lambda function name or ARN"),
    ),
  qualifier: z.optional(
    z
      .string()
      .check(
        z.minLength(1),
        z.maxLength(128),
        z.regex(/^[a-zA-Z0-9$_-]+$/, "qualifier must be a version number or an alias name"),
      ),
  ),
  /**
   * The event the function receives, in place of the default {input, params, deps, context}: any
   * JSON value, or expressions over `input`, `deps` and `execution` (evaluated as any params are).
   */
  payload: z.optional(z.unknown()),
});

export type LambdaParams = z.output<typeof lambdaParamsSchema>;

/** The event a function invoked by a `lambda` node receives, unless its params give a `payload`. */
export interface LambdaTaskEvent {
  input: unknown;
  params: Omit<LambdaParams, "payload">;
  deps: Record<string, unknown>;
  context: { executionId: string; nodeId: string; attempt: number; idempotencyKey: string };
}

/** A function error the function did not mark terminal; retried by policy (its `name` is the errorType). */
export class LambdaFunctionError extends Error {
  constructor(name: string, message: string) {
    super(message);
    this.name = name;
  }
}

export function lambdaTask(invoker: LambdaInvoker): TaskType<LambdaParams> {
  return defineTask({
    type: "lambda",
    params: lambdaParamsSchema,
    async run({ input, params: raw, deps, context }) {
      const params = lambdaParamsSchema.parse(raw);
      const { payload, ...target } = params;
      const event: LambdaTaskEvent | unknown =
        payload !== undefined
          ? payload
          : {
              input,
              params: target,
              deps,
              context: {
                executionId: context.executionId,
                nodeId: context.nodeId,
                attempt: context.attempt,
                idempotencyKey: context.idempotencyKey,
              },
            };
      const result = await invoker.invoke(params.functionName, params.qualifier, event, context.signal);
      if (result.functionError === undefined) return result.payload;
      throw functionFailure(params.functionName, result.functionError, result.payload);
    },
  });
}

/** Maps a function error payload (`{errorType, errorMessage, terminal?}`) to the error the engine classifies. */
export function functionFailure(functionName: string, functionError: string, payload: unknown): Error {
  const fields = typeof payload === "object" && payload !== null ? (payload as Record<string, unknown>) : {};
  const errorType =
    typeof fields.errorType === "string" && fields.errorType !== "" ? fields.errorType : undefined;
  const errorMessage =
    typeof fields.errorMessage === "string"
      ? fields.errorMessage
      : payload === undefined || payload === null
        ? "(no error payload)"
        : JSON.stringify(payload);
  const message = `function ${functionName} failed (${functionError}): ${errorType ? `${errorType}: ` : ""}${errorMessage}`;
  if (errorType === "TerminalError" || fields.terminal === true) return new TerminalError(message);
  // Keeps the function's error type as the name, so a node's `retry.nonRetryable` can list it.
  return new LambdaFunctionError(errorType ?? "LambdaFunctionError", message);
}
