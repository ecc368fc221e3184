/** The token bucket of rate limits (domain/rate.ts). */
import { describe, expect, it } from "vitest";
import {
  type Bucket,
  decodeBucket,
  encodeBucket,
  type RateLimit,
  takeToken,
} from "../../shared/domain/rate.js";

/** Takes tokens at `times` (ms), each from the bucket the last left: which were taken. */
function takes(limit: RateLimit, times: number[]): Array<true | number> {
  let bucket: Bucket = decodeBucket(undefined, limit, times[0] ?? 0);
  return times.map((now) => {
    const taken = takeToken(bucket, limit, now);
    if (!taken.taken) return taken.retryAfterMs;
    bucket = taken.bucket;
    return true;
  });
}

describe("token buckets", () => {
  it("starts full, takes up to its burst at once, then one a 1/rate", () => {
    // 5 per 2 s: one every 400 ms.
    const limit = { limit: 5, periodSeconds: 2 };
    expect(takes(limit, [0, 0, 0, 0, 0, 0])).toEqual([true, true, true, true, true, 400]);
    expect(takes(limit, [0, 0, 0, 0, 0, 400, 400, 800])).toEqual([
      true,
      true,
      true,
      true,
      true,
      true,
      400,
      true,
    ]);
  });

  it("holds at most its burst however long it rests", () => {
    const limit = { limit: 10, periodSeconds: 1, burst: 2 };
    expect(takes(limit, [0, 0, 0, 60_000, 60_000, 60_000])).toEqual([true, true, 100, true, true, 100]);
  });

  it("says when the next token comes, to the ms, at least 1", () => {
    const limit = { limit: 2, periodSeconds: 3600 };
    expect(takes(limit, [0, 0, 0])).toEqual([true, true, 1_800_000]);
    expect(takes(limit, [0, 0, 1_799_999])[2]).toBe(1);
  });

  it("round-trips its stored form, and refuses one that is not its shape", () => {
    const bucket = { tokens: 1.5, at: 42 };
    expect(decodeBucket(encodeBucket(bucket), { limit: 1, periodSeconds: 1 }, 0)).toEqual(bucket);
    expect(() => decodeBucket('{"tokens":"x"}', { limit: 1, periodSeconds: 1 }, 0)).toThrow();
  });
});
