/**
 * Errors a task handler may throw to steer the retry policy (anything else counts as retryable).
 * They live in the domain, beside the error base they share; this is the task API's entry to them.
 */
export {
  RetryableError,
  type RetryableErrorOptions,
  type TaskErrorOptions,
  TerminalError,
  WeftError,
} from "../domain/errors.js";
