/**
 * Retry policy: how long to wait before the next attempt, and whether a thrown error deserves one.
 * Pure: randomness is passed in so simulation tests can make jitter deterministic.
 */
import { RetryableError, TerminalError } from "./errors.js";
import type { ResolvedRetry } from "./graph.js";
import * as z from "./zod.js";

/** Error messages are stored on node items and in history events, so they are bounded. */
export const MAX_ERROR_MESSAGE_LENGTH = 2000;
const MAX_ERROR_NAME_LENGTH = 128;

/**
 * Capped exponential backoff in whole milliseconds, with AWS "full jitter" (uniform in [0, base])
 * so that many nodes failing together do not retry in lockstep.
 * `failedAttempt` is the 1-based attempt that just failed.
 */
export function backoffDelayMs(policy: ResolvedRetry, failedAttempt: number, random: () => number): number {
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
  retryable: boolean;
  /** Set only by RetryableError: overrides the computed backoff for the next attempt. */
  retryAfterSeconds?: number;
}

/**
 * Decides whether a thrown value is worth another attempt. The default is "retryable": an
 * unexpected error is more often a transient fault than a permanent one, and maxAttempts bounds it.
 */
export function classifyError(error: unknown, policy: ResolvedRetry): ClassifiedError {
  if (error instanceof TerminalError) return describe(error, false);
  if (error instanceof RetryableError) {
    const result = describe(error, true);
    const after = error.retryAfterSeconds;
    if (typeof after === "number" && Number.isFinite(after) && after >= 0) result.retryAfterSeconds = after;
    return result;
  }
  // Params or output failing a schema will fail the same way next time. Any zod's error: weft's own
  // schemas are zod/mini, a user's task type's are classic (both share the core's error).
  if (error instanceof z.$ZodError) {
    return { name: "ValidationError", message: truncate(z.prettifyError(error)), retryable: false };
  }
  const described = describe(error, true);
  if (policy.nonRetryable.includes(described.name)) described.retryable = false;
  // Duck-typed TerminalError: covers a second copy of the errors module (e.g. in a user bundle).
  if (isObject(error) && error.terminal === true) described.retryable = false;
  return described;
}

/** `attempt` is the 1-based attempt that just failed. */
export function shouldRetry(policy: ResolvedRetry, attempt: number, retryable: boolean): boolean {
  return retryable && attempt < policy.maxAttempts;
}

function describe(error: unknown, retryable: boolean): ClassifiedError {
  let name = "Error";
  let message: string;
  if (isObject(error)) {
    if (typeof error.name === "string" && error.name !== "") name = error.name;
    message = typeof error.message === "string" ? error.message : safeStringify(error);
  } else {
    message = typeof error === "string" ? error : String(error);
  }
  return { name: name.slice(0, MAX_ERROR_NAME_LENGTH), message: truncate(message), retryable };
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
