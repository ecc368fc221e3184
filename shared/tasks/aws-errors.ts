/**
 * One classifier for the errors of the AWS calls task types make (Lambda Invoke, EventBridge
 * PutEvents, Secrets Manager and SSM reads). A call IAM denies fails the same way on every attempt:
 * it becomes a TerminalError naming the grant that is missing (action and resource) and the CDK
 * context key that adds it, instead of being retried until the attempts run out.
 */
import { TerminalError } from "./errors.js";

/** The grant a call needs, and where the stack takes it from. */
export interface AwsGrant {
  /** The IAM action, e.g. `lambda:InvokeFunction`. */
  action: string;
  /** The resource as the task knows it (a name or an ARN); AWS's own message names the ARN when it can. */
  resource: string;
  /** The CDK context key of the sample app that grants it, e.g. `weft:invokableFunctionArns`. */
  contextKey: `weft:${string}`;
  /** The WeftOrchestrator prop behind that key. */
  prop: string;
}

export interface AwsCall {
  /** What was being done, for the message: `invoking Lambda function "score"`. */
  what: string;
  grant: AwsGrant;
  /** Error names that this call meets again on every attempt (besides access denied): terminal too. */
  terminal?: ReadonlySet<string>;
}

/** Names under which AWS services report an IAM denial. */
const ACCESS_DENIED = new Set(["AccessDeniedException", "AccessDenied"]);
/** How much of AWS's own message is quoted. */
const MAX_QUOTE = 400;

interface AwsErrorLike {
  name: string;
  message: string;
  status?: number;
}

function asAwsError(error: unknown): AwsErrorLike | undefined {
  if (!(error instanceof Error)) return undefined;
  const status = (error as { $metadata?: { httpStatusCode?: unknown } }).$metadata?.httpStatusCode;
  return { name: error.name, message: error.message, ...(typeof status === "number" ? { status } : {}) };
}

/** True for an IAM denial, by the error's name (the SDK names errors after the service's error code). */
export function isAccessDenied(error: unknown): boolean {
  const aws = asAwsError(error);
  return aws !== undefined && ACCESS_DENIED.has(aws.name);
}

/** The TerminalError for a denied call: the missing grant, the context key, and what AWS said. */
export function accessDeniedError(
  call: AwsCall,
  name: string,
  message: string,
  cause?: unknown,
): TerminalError {
  // AWS's message says "… is not authorized to perform: ACTION on resource: ARN because …".
  const resource = /on resource: (\S+)/.exec(message)?.[1] ?? call.grant.resource;
  const quote = message.length > MAX_QUOTE ? `${message.slice(0, MAX_QUOTE)}…` : message;
  return new TerminalError(
    `${call.what} was denied (${name}): the worker's role needs ${call.grant.action} on ${resource}. ` +
      `Grant it with the CDK context key ${call.grant.contextKey} (the WeftOrchestrator prop ${call.grant.prop}). ` +
      `AWS said: ${quote}`,
    { code: "AccessDenied", ...(cause === undefined ? {} : { cause }) },
  );
}

/**
 * What to throw for an error of an AWS call: access denied → a TerminalError naming the grant; a
 * name in `call.terminal` → a TerminalError; anything else unchanged (retried by policy).
 */
export function classifyAwsError(error: unknown, call: AwsCall): unknown {
  const aws = asAwsError(error);
  if (!aws) return error;
  if (ACCESS_DENIED.has(aws.name)) return accessDeniedError(call, aws.name, aws.message, error);
  if (call.terminal?.has(aws.name))
    return new TerminalError(`${call.what} failed: ${aws.name}: ${aws.message}`, { cause: error });
  return error;
}
