/**
 * Retry policy: how long to wait before the next attempt, and whether a thrown error deserves one.
 * Pure: randomness is passed in so simulation tests can make jitter deterministic.
 */
import { matchesError, type NamedError } from "./error-names.js";
import { RetryableError, TerminalError } from "./errors.js";
import type { Backoff, ResolvedRetrier, ResolvedRetry } from "./graph.js";
import * as z from "./zod.js";

/** Error messages are stored on node items and in history events, so they are bounded. */
export const MAX_ERROR_MESSAGE_LENGTH = 2000;
const MAX_ERROR_NAME_LENGTH = 128;

/**
 * Capped exponential backoff in whole milliseconds, with AWS "full jitter" (uniform in [0, base])
 * so that many nodes failing together do not retry in lockstep.
 * `failedAttempt` is the 1-based attempt that just failed.
 */
export function backoffDelayMs(policy: Backoff, failedAttempt: number, random: () => number): number {
  const exponent = Math.max(0, failedAttempt - 1);
  // Math.min also caps an Infinity from a large exponent.
  const baseMs = Math.min(policy.maxSeconds, policy.initialSeconds * policy.multiplier ** exponent) * 1000;
  if (policy.jitter === "none") return Math.floor(baseMs);
  const r = Math.min(1, Math.max(0, random()));
  return Math.floor(r * baseMs);
}

export interface ClassifiedError {
  name: string;
  message: string;
  /** The thrown value's string `code` (an AWS or Node error's), which retriers and catch edges match too. */
  code?: string;
  retryable: boolean;
  /** Set only by RetryableError: overrides the computed backoff for the next attempt. */
  retryAfterSeconds?: number;
}

/** The retrier that decides a failure: the first that matches it, none for a non-retryable name. */
export function retrierFor(policy: ResolvedRetry, error: NamedError): ResolvedRetrier | undefined {
  if (policy.nonRetryable.includes(error.name)) return undefined;
  return policy.retriers.find((retrier) => matchesError(retrier.errors, error));
}

/**
 * Decides whether a thrown value is worth another attempt: an error the policy's retriers match
 * (the built-in policy's matches any: an unexpected error is more often a transient fault than a
 * permanent one, and maxAttempts bounds it), never a TerminalError nor a schema's refusal.
 */
export function classifyError(error: unknown, policy: ResolvedRetry): ClassifiedError {
  if (error instanceof TerminalError) return describe(error, false);
  if (error instanceof RetryableError) {
    const result = describe(error, true);
    const after = error.retryAfterSeconds;
    if (typeof after === "number" && Number.isFinite(after) && after >= 0) result.retryAfterSeconds = after;
    // Retryable by the task's word, yet still only by a retrier that matches it.
    if (!retrierFor(policy, result)) result.retryable = false;
    return result;
  }
  // Params or output failing a schema will fail the same way next time. Any zod's error: weft's own
  // schemas are zod/mini, a user's task type's are classic (both share the core's error).
  if (error instanceof z.$ZodError) {
    return { name: "ValidationError", message: truncate(z.prettifyError(error)), retryable: false };
  }
  const described = describe(error, true);
  if (!retrierFor(policy, described)) described.retryable = false;
  // Duck-typed TerminalError: covers a second copy of the errors module (e.g. in a user bundle).
  if (isObject(error) && error.terminal === true) described.retryable = false;
  return described;
}

/**
 * The retrier under which the attempt that just failed (1-based `attempt`) is retried, or undefined
 * when it is not: not retryable, matched by no retrier, or its retrier's attempts used up. A
 * retrier's `maxAttempts` counts the node's attempts in all, the first included.
 */
export function retryUnder(
  policy: ResolvedRetry,
  attempt: number,
  error: NamedError & { retryable?: boolean | undefined },
): ResolvedRetrier | undefined {
  if (error.retryable === false) return undefined;
  const retrier = retrierFor(policy, error);
  return retrier && attempt < retrier.maxAttempts ? retrier : undefined;
}

function describe(error: unknown, retryable: boolean): ClassifiedError {
  let name = "Error";
  let message: string;
  let code: string | undefined;
  if (isObject(error)) {
    if (typeof error.name === "string" && error.name !== "") name = error.name;
    message = typeof error.message === "string" ? error.message : safeStringify(error);
    // Kept when it says more than the name (weft's own task errors carry their name as their code).
    if (typeof error.code === "string" && error.code !== "" && error.code !== name)
      code = error.code.slice(0, MAX_ERROR_NAME_LENGTH);
  } else {
    message = typeof error === "string" ? error : String(error);
  }
  return {
    name: name.slice(0, MAX_ERROR_NAME_LENGTH),
    message: truncate(message),
    ...(code === undefined ? {} : { code }),
    retryable,
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

function safeStringify(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function truncate(message: string): string {
  return message.length > MAX_ERROR_MESSAGE_LENGTH ? message.slice(0, MAX_ERROR_MESSAGE_LENGTH) : message;
}
