/** Errors a task handler may throw to steer the retry policy. Anything else counts as retryable. */

/** Never retried: the node fails at once and the task is kept in the DLQ for inspection. */
export class TerminalError extends Error {
  override name = "TerminalError";
  readonly terminal = true;
}

/** Retried by policy; `retryAfterSeconds` overrides the computed backoff for the next attempt. */
export class RetryableError extends Error {
  override name = "RetryableError";
  constructor(
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}
