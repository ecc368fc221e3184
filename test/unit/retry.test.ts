import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { ResolvedRetry } from "../../shared/domain/graph.js";
import {
  backoffDelayMs,
  classifyError,
  MAX_ERROR_MESSAGE_LENGTH,
  shouldRetry,
} from "../../shared/domain/retry.js";
import { RetryableError, TerminalError } from "../../shared/tasks/errors.js";

const policy = (overrides: Partial<ResolvedRetry> = {}): ResolvedRetry => ({
  maxAttempts: 3,
  initialSeconds: 1,
  maxSeconds: 300,
  multiplier: 2,
  jitter: "none",
  nonRetryable: [],
  ...overrides,
});

describe("backoffDelayMs", () => {
  const never = () => {
    throw new Error("random must not be called without jitter");
  };

  it("grows exponentially without jitter", () => {
    expect([1, 2, 3, 4, 5].map((n) => backoffDelayMs(policy(), n, never))).toEqual([
      1000, 2000, 4000, 8000, 16000,
    ]);
  });

  it("honours initialSeconds and multiplier", () => {
    const p = policy({ initialSeconds: 0.5, multiplier: 3 });
    expect([1, 2, 3].map((n) => backoffDelayMs(p, n, never))).toEqual([500, 1500, 4500]);
  });

  it("is capped at maxSeconds, even for huge attempt numbers", () => {
    const p = policy({ initialSeconds: 2, maxSeconds: 10 });
    expect([3, 4, 5, 5000].map((n) => backoffDelayMs(p, n, never))).toEqual([8000, 10000, 10000, 10000]);
  });

  it("multiplier 1 is a constant delay", () => {
    const p = policy({ initialSeconds: 5, multiplier: 1 });
    expect([1, 7].map((n) => backoffDelayMs(p, n, never))).toEqual([5000, 5000]);
  });

  it("full jitter scales the capped base by random()", () => {
    const p = policy({ jitter: "full", initialSeconds: 2, maxSeconds: 10 });
    expect(backoffDelayMs(p, 2, () => 0.5)).toBe(2000);
    expect(backoffDelayMs(p, 9, () => 0.25)).toBe(2500);
    expect(backoffDelayMs(p, 1, () => 0)).toBe(0);
    expect(backoffDelayMs(p, 1, () => 0.9999)).toBeLessThan(2000);
  });

  it("full jitter stays within [0, base] even with a misbehaving random", () => {
    const p = policy({ jitter: "full" });
    expect(backoffDelayMs(p, 2, () => 7)).toBe(2000);
    expect(backoffDelayMs(p, 2, () => -1)).toBe(0);
  });
});

describe("classifyError", () => {
  const p = policy({ nonRetryable: ["ValidationError", "NotMine"] });

  it("TerminalError is not retryable", () => {
    expect(classifyError(new TerminalError("bad input"), p)).toEqual({
      name: "TerminalError",
      message: "bad input",
      retryable: false,
    });
  });

  it("RetryableError is retryable and carries retryAfterSeconds", () => {
    expect(classifyError(new RetryableError("throttled", { retryAfterSeconds: 30 }), p)).toEqual({
      name: "RetryableError",
      message: "throttled",
      retryable: true,
      retryAfterSeconds: 30,
    });
    expect(classifyError(new RetryableError("again"), p)).not.toHaveProperty("retryAfterSeconds");
  });

  it("RetryableError stays retryable even if its name is listed as non-retryable", () => {
    expect(
      classifyError(new RetryableError("x"), policy({ nonRetryable: ["RetryableError"] })).retryable,
    ).toBe(true);
  });

  it("ZodError is a non-retryable ValidationError with a readable message", () => {
    const result = z.object({ value: z.number() }).safeParse({ value: "x" });
    const classified = classifyError(result.error, policy());
    expect(classified).toMatchObject({ name: "ValidationError", retryable: false });
    expect(classified.message).toContain("value");
  });

  it("an error named in policy.nonRetryable is not retryable", () => {
    class NotMine extends Error {
      override name = "NotMine";
    }
    expect(classifyError(new NotMine("nope"), p)).toEqual({
      name: "NotMine",
      message: "nope",
      retryable: false,
    });
    expect(classifyError(new NotMine("nope"), policy()).retryable).toBe(true);
  });

  it("an object with terminal: true is not retryable (TerminalError from another copy of the module)", () => {
    const foreign = Object.assign(new Error("elsewhere"), { name: "TerminalError", terminal: true });
    expect(classifyError(foreign, policy())).toEqual({
      name: "TerminalError",
      message: "elsewhere",
      retryable: false,
    });
    expect(classifyError({ terminal: true, message: "plain" }, policy())).toMatchObject({ retryable: false });
  });

  it("an ordinary error is retryable", () => {
    expect(classifyError(new TypeError("oops"), p)).toEqual({
      name: "TypeError",
      message: "oops",
      retryable: true,
    });
  });

  it.each([
    ["a string", "boom", "boom"],
    ["a number", 42, "42"],
    ["undefined", undefined, "undefined"],
    ["null", null, "null"],
    ["a plain object", { code: 7 }, '{"code":7}'],
  ])("a non-Error throw (%s) is retryable", (_label, thrown, message) => {
    expect(classifyError(thrown, p)).toEqual({ name: "Error", message, retryable: true });
  });

  it("truncates long messages", () => {
    const classified = classifyError(new Error("x".repeat(5000)), p);
    expect(classified.message).toHaveLength(MAX_ERROR_MESSAGE_LENGTH);
    expect(MAX_ERROR_MESSAGE_LENGTH).toBe(2000);
  });
});

describe("shouldRetry", () => {
  it.each([
    [1, true, true],
    [2, true, true],
    [3, true, false],
    [4, true, false],
    [1, false, false],
  ])("attempt %i failed, retryable %s → %s", (attempt, retryable, expected) => {
    expect(shouldRetry(policy({ maxAttempts: 3 }), attempt, retryable)).toBe(expected);
  });

  it("maxAttempts 1 never retries", () => {
    expect(shouldRetry(policy({ maxAttempts: 1 }), 1, true)).toBe(false);
  });
});
