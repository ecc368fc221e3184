/**
 * The one error base of weft: a stable `code` callers branch on, a message for people, optional
 * details (one per problem, with where it is) and the `cause` it wraps. Nothing here knows HTTP:
 * the API chooses a status per code in one table at its edge (functions/api/problems.ts).
 *
 * Two families share the base:
 * - request errors (a bad definition, an unknown execution, a conflict) raised to a caller, their
 *   codes listed in REQUEST_ERROR_CODES so the edge's table is checked to cover every one;
 * - task errors a handler throws to steer its retry policy: TerminalError (never retried) and
 *   RetryableError (retried by policy, optionally after a given delay).
 */

export interface ProblemDetail {
  path: string;
  code: string;
  message: string;
}

export interface WeftErrorOptions {
  details?: readonly ProblemDetail[];
  cause?: unknown;
  /** When to try again (an answer's Retry-After): a rate limit's next token. */
  retryAfterSeconds?: number;
}

export class WeftError extends Error {
  readonly code: string;
  readonly details: readonly ProblemDetail[];
  readonly retryAfterSeconds?: number;

  constructor(code: string, message: string, options: WeftErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "WeftError";
    this.code = code;
    this.details = options.details ?? [];
    if (options.retryAfterSeconds !== undefined) this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/**
 * The codes of errors raised to a caller on purpose. A code not listed here that reaches the API's
 * edge is a bug there (an InternalError), never a guess at a status.
 */
export const REQUEST_ERROR_CODES = [
  "InvalidJson",
  "InvalidRequest",
  "BadRequest",
  "InvalidDefinition",
  "InvalidCursor",
  "NotFound",
  "MethodNotAllowed",
  "Conflict",
  "IdempotencyKeyConflict",
  // A live task token on /callbacks/*, or a callback's on /tasks/* (engine/attempt-token-reads.ts).
  "WrongTokenKind",
  "WorkerIdTaken",
  "TooManyWorkers",
  "PayloadTooLarge",
  "PayloadTooDeep",
  "PayloadNotJson",
  "PayloadMissing",
  "UploadsUnavailable",
  // A workflow's start rate limit (domain/rate.ts): try again after Retry-After.
  "RateLimited",
  "Busy",
  "InternalError",
] as const;

export type RequestErrorCode = (typeof REQUEST_ERROR_CODES)[number];

/** An error raised to a caller, with a code from REQUEST_ERROR_CODES. */
export class RequestError extends WeftError {
  declare readonly code: RequestErrorCode;

  constructor(code: RequestErrorCode, message: string, options: WeftErrorOptions = {}) {
    super(code, message, options);
    this.name = "RequestError";
  }
}

export const badRequest = (message: string, details: readonly ProblemDetail[] = []) =>
  new RequestError("BadRequest", message, { details });
export const invalidDefinition = (details: readonly ProblemDetail[]) =>
  new RequestError("InvalidDefinition", `the workflow definition has ${details.length} problem(s)`, {
    details,
  });
export const notFound = (message: string) => new RequestError("NotFound", message);
export const conflict = (message: string) => new RequestError("Conflict", message);
/** A listing cursor this API never returned (or one that no longer decodes). */
export const invalidCursor = (message = "not a cursor this API returned") =>
  new RequestError("InvalidCursor", message);

/** True when `error` is a WeftError with this code. */
export function hasCode(error: unknown, code: string): error is WeftError {
  return error instanceof WeftError && error.code === code;
}

// ---------------------------------------------------------------------------------------------
// Task errors: what a handler throws to steer the retry policy. Anything else counts as retryable.

export interface TaskErrorOptions {
  /** A code for callers (stored as the node error's name); defaults to the class name. */
  code?: string;
  cause?: unknown;
}

/** Never retried: the node fails at once and the task is kept as a dead letter for inspection. */
export class TerminalError extends WeftError {
  /** Read by the retry policy also on a copy of this class from another bundle (duck-typed). */
  readonly terminal = true;

  constructor(message: string, options: TaskErrorOptions = {}) {
    super(
      options.code ?? "TerminalError",
      message,
      options.cause === undefined ? {} : { cause: options.cause },
    );
    this.name = options.code ?? "TerminalError";
  }
}

export interface RetryableErrorOptions extends TaskErrorOptions {
  /** Overrides the computed backoff before the next attempt. */
  retryAfterSeconds?: number;
}

/** Retried by policy; `retryAfterSeconds` overrides the computed backoff for the next attempt. */
export class RetryableError extends WeftError {
  constructor(message: string, options: RetryableErrorOptions = {}) {
    super(options.code ?? "RetryableError", message, {
      ...(options.cause === undefined ? {} : { cause: options.cause }),
      ...(options.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: options.retryAfterSeconds }),
    });
    this.name = options.code ?? "RetryableError";
  }
}
