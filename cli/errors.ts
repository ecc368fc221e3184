/** Errors the CLI reports, each with the exit code it ends the process with. */

export const EXIT = {
  ok: 0,
  /** A failure: an API error, an unreachable API, a bad file, a failed execution, an invalid definition. */
  failure: 1,
  /** Wrong usage: unknown command or flag, missing argument, bad flag value. */
  usage: 2,
  /** The execution was cancelled. */
  cancelled: 3,
} as const;

export class CliError extends Error {
  override name = "CliError";
  constructor(
    message: string,
    readonly exitCode: number = EXIT.failure,
    /** Machine-readable form for --json output. */
    readonly code: string = "Failure",
    readonly details: unknown[] = [],
  ) {
    super(message);
  }
}

export class UsageError extends CliError {
  override name = "UsageError";
  constructor(message: string) {
    super(message, EXIT.usage, "UsageError");
  }
}

/** The API answered with an error (`{error: {code, message, details}}`). */
export class ApiError extends CliError {
  override name = "ApiError";
  constructor(
    readonly status: number,
    code: string,
    message: string,
    details: unknown[] = [],
  ) {
    super(message, EXIT.failure, code, details);
  }
}

export class UnreachableError extends CliError {
  override name = "UnreachableError";
  constructor(message: string) {
    super(message, EXIT.failure, "Unreachable");
  }
}
