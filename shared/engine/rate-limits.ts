/**
 * A workflow's start rate limit (domain/rate.ts): `POST /executions` takes a token of the bucket of
 * the workflow and the key's value, or is refused with 429 and when to try again, creating nothing.
 * The bucket is a versioned item beside the concurrency slots (Store.getSlots/putSlots), written at
 * the version read; a conflict reads it again.
 */
import type { WorkflowDefinition } from "../domain/definition.js";
import { RequestError } from "../domain/errors.js";
import { hasExpressions } from "../domain/expressions.js";
import { decodeBucket, encodeBucket, type RateLimit, takeToken } from "../domain/rate.js";
import { keyValueOf } from "../domain/slots.js";
import type { EngineContext } from "./context.js";
import { updateVersioned } from "./versioned-items.js";

/** Conflicting takes of one bucket tried again, with jittered backoff, up to this many times. */
const BUCKET_RETRY = { maxRounds: 100, baseMs: 2, capMs: 200 } as const;

/** The bucket's item key: per workflow and key value. */
export function startBucketKey(workflow: string, keyValue: string): string {
  return `rate/start/${workflow}/${keyValue}`;
}

/**
 * Takes a start token for an execution of `definition` with `input`, or throws RateLimited with the
 * seconds until the next token (the answer's Retry-After).
 */
export async function admitStart(
  ctx: EngineContext,
  definition: WorkflowDefinition,
  /** The start's input, read only when the key is an expression. */
  input: () => Promise<unknown>,
): Promise<void> {
  const limit = definition.rateLimit;
  if (limit === undefined) return;
  const keyValue = await startKey(ctx, definition.name, limit, input);
  await updateVersioned(
    ctx,
    startBucketKey(definition.name, keyValue),
    {
      ...BUCKET_RETRY,
      exhausted: () =>
        new RequestError("Busy", `too many concurrent starts of "${definition.name}"; try again`),
    },
    async (state) => {
      const now = ctx.clock.now();
      const taken = takeToken(decodeBucket(state, limit, now), limit, now);
      if (!taken.taken) {
        const retryAfterSeconds = Math.ceil(taken.retryAfterMs / 1000);
        throw new RequestError(
          "RateLimited",
          `workflow "${definition.name}" starts at most ${limit.limit} executions every ${limit.periodSeconds} s${keyValue === "" ? "" : ` per key (this one: "${keyValue}")`}; try again in ${retryAfterSeconds} s`,
          { retryAfterSeconds },
        );
      }
      return { result: undefined, state: encodeBucket(taken.bucket) };
    },
  );
}

/** The key's value for this input ("" without a key); a key that fails is the request's fault. */
async function startKey(
  ctx: EngineContext,
  workflow: string,
  limit: RateLimit,
  input: () => Promise<unknown>,
) {
  if (limit.key === undefined) return "";
  if (!hasExpressions(limit.key)) return keyValueOf(limit.key);
  const value = await input();
  try {
    const keyValue = await ctx.expressions.resolve(
      limit.key,
      { input: value, deps: {}, execution: { id: "", workflow, version: 0 } },
      { now: () => ctx.clock.now() },
      "rateLimit.key",
    );
    return keyValueOf(keyValue);
  } catch (error) {
    throw new RequestError(
      "BadRequest",
      `the start rate limit's key of workflow "${workflow}" could not be evaluated on this input: ${error instanceof Error ? error.message : String(error)}`,
      {
        details: [
          { path: "input", code: "rate_limit_key", message: "the rateLimit key expression failed on it" },
        ],
      },
    );
  }
}
