/**
 * Rates (issue 29, flow control): a token bucket per key — `limit` tokens a `periodSeconds`, refilled
 * smoothly, holding at most `burst` (default `limit`). Pure: the engine keeps each bucket's state in
 * a versioned item (engine/rate-limits.ts) and writes it at the version it read.
 *
 * - A workflow's `rateLimit` refuses a start that finds no token (`POST /executions` answers 429
 *   with Retry-After: when the next token comes), creating nothing.
 */
import * as z from "./zod.js";

export const RATE_LIMITS = {
  /** Tokens a period at most. */
  maxLimit: 100_000,
  /** The longest period: a day. */
  maxPeriodSeconds: 86_400,
} as const;

/** `{key?, limit, periodSeconds, burst?}`: at most `limit` a period per key value, `burst` at once. */
export const rateLimitSchema = z.strictObject({
  key: z.optional(z.string().check(z.minLength(1), z.maxLength(1024))),
  limit: z.number().check(z.int(), z.gte(1), z.lte(RATE_LIMITS.maxLimit)),
  periodSeconds: z.number().check(z.gt(0), z.lte(RATE_LIMITS.maxPeriodSeconds)),
  burst: z.optional(z.number().check(z.int(), z.gte(1), z.lte(RATE_LIMITS.maxLimit))),
});

export type RateLimit = z.output<typeof rateLimitSchema>;

/** A bucket: its tokens as of `at` (ms). */
export interface Bucket {
  tokens: number;
  at: number;
}

const bucketSchema = z.object({ tokens: z.number(), at: z.number() });

/** The stored state (JSON text); none yet: a full bucket. */
export function decodeBucket(text: string | undefined, limit: RateLimit, now: number): Bucket {
  if (text === undefined) return { tokens: capacityOf(limit), at: now };
  return bucketSchema.parse(JSON.parse(text));
}

export function encodeBucket(bucket: Bucket): string {
  return JSON.stringify(bucket);
}

function capacityOf(limit: RateLimit): number {
  return limit.burst ?? limit.limit;
}

/** Tokens per ms. */
function rateOf(limit: RateLimit): number {
  return limit.limit / (limit.periodSeconds * 1000);
}

/** The bucket refilled up to `now`. */
function refilled(bucket: Bucket, limit: RateLimit, now: number): Bucket {
  const elapsed = Math.max(0, now - bucket.at);
  return {
    tokens: Math.min(capacityOf(limit), bucket.tokens + elapsed * rateOf(limit)),
    at: Math.max(now, bucket.at),
  };
}

/**
 * Takes one token now if there is one: the bucket after it; else how long until one comes (ms,
 * at least 1).
 */
export function takeToken(
  bucket: Bucket,
  limit: RateLimit,
  now: number,
): { taken: true; bucket: Bucket } | { taken: false; retryAfterMs: number } {
  const current = refilled(bucket, limit, now);
  if (current.tokens >= 1) return { taken: true, bucket: { ...current, tokens: current.tokens - 1 } };
  // Multiplied out rather than divided by the rate: 1 / (2 / 3,600,000) is 1,800,000.0000000002.
  const waitMs = ((1 - current.tokens) * limit.periodSeconds * 1000) / limit.limit;
  return { taken: false, retryAfterMs: Math.max(1, Math.ceil(waitMs - 1e-6)) };
}
