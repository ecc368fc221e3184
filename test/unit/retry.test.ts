import { describe, expect, it } from "vitest";
import { z } from "zod";
import { matchesError } from "../../shared/domain/error-names.js";
import type { ResolvedRetrier, ResolvedRetry } from "../../shared/domain/graph.js";
import {
  backoffDelayMs,
  classifyError,
  MAX_ERROR_MESSAGE_LENGTH,
  retryUnder,
} from "../../shared/domain/retry.js";
import { RetryableError, TerminalError } from "../../shared/tasks/errors.js";

const retrier = (overrides: Partial<ResolvedRetrier> = {}): ResolvedRetrier => ({
  errors: ["*"],
  maxAttempts: 3,
  initialSeconds: 1,
  maxSeconds: 300,
  multiplier: 2,
  jitter: "none",
  ...overrides,
});

/** One retrier for every error (the object form), with `nonRetryable`. */
const policy = (overrides: Partial<ResolvedRetrier> & { nonRetryable?: string[] } = {}): ResolvedRetry => {
  const { nonRetryable = [], ...fields } = overrides;
  const one = retrier(fields);
  return { retriers: [one], nonRetryable, maxAttempts: one.maxAttempts };
};

/** The list form. */
const retriers = (...list: ResolvedRetrier[]): ResolvedRetry => ({
  retriers: list,
  nonRetryable: [],
  maxAttempts: Math.max(...list.map((r) => r.maxAttempts)),
});

describe("backoffDelayMs", () => {
  const never = () => {
    throw new Error("random must not be called without jitter");
  };

  it("grows exponentially without jitter", () => {
    expect([1, 2, 3, 4, 5].map((n) => backoffDelayMs(retrier(), n, never))).toEqual([
      1000, 2000, 4000, 8000, 16000,
    ]);
  });

  it("honours initialSeconds and multiplier", () => {
    const p = retrier({ initialSeconds: 0.5, multiplier: 3 });
    expect([1, 2, 3].map((n) => backoffDelayMs(p, n, never))).toEqual([500, 1500, 4500]);
  });

  it("is capped at maxSeconds, even for huge attempt numbers", () => {
    const p = retrier({ initialSeconds: 2, maxSeconds: 10 });
    expect([3, 4, 5, 5000].map((n) => backoffDelayMs(p, n, never))).toEqual([8000, 10000, 10000, 10000]);
  });

  it("multiplier 1 is a constant delay", () => {
    const p = retrier({ initialSeconds: 5, multiplier: 1 });
    expect([1, 7].map((n) => backoffDelayMs(p, n, never))).toEqual([5000, 5000]);
  });

  it("full jitter scales the capped base by random()", () => {
    const p = retrier({ jitter: "full", initialSeconds: 2, maxSeconds: 10 });
    expect(backoffDelayMs(p, 2, () => 0.5)).toBe(2000);
    expect(backoffDelayMs(p, 9, () => 0.25)).toBe(2500);
    expect(backoffDelayMs(p, 1, () => 0)).toBe(0);
    expect(backoffDelayMs(p, 1, () => 0.9999)).toBeLessThan(2000);
  });

  it("full jitter stays within [0, base] even with a misbehaving random", () => {
    const p = retrier({ jitter: "full" });
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

  it("RetryableError is retried only as the policy says: not when its name is listed non-retryable, nor matched by no retrier", () => {
    expect(classifyError(new RetryableError("x"), policy()).retryable).toBe(true);
    expect(
      classifyError(new RetryableError("x"), policy({ nonRetryable: ["RetryableError"] })).retryable,
    ).toBe(false);
    expect(classifyError(new RetryableError("x"), policy({ errors: ["Throttled"] })).retryable).toBe(false);
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
    ["a plain object with no name", { reason: "x" }, '{"reason":"x"}'],
  ])("a non-Error throw (%s) is retryable", (_label, thrown, message) => {
    expect(classifyError(thrown, p)).toEqual({ name: "Error", message, retryable: true });
  });

  it("truncates long messages", () => {
    const classified = classifyError(new Error("x".repeat(5000)), p);
    expect(classified.message).toHaveLength(MAX_ERROR_MESSAGE_LENGTH);
    expect(MAX_ERROR_MESSAGE_LENGTH).toBe(2000);
  });
});

describe("retryUnder", () => {
  it.each([
    [1, true, true],
    [2, true, true],
    [3, true, false],
    [4, true, false],
    [1, false, false],
  ])("attempt %i failed, retryable %s → %s", (attempt, retryable, expected) => {
    expect(retryUnder(policy({ maxAttempts: 3 }), attempt, { name: "Error", retryable }) !== undefined).toBe(
      expected,
    );
  });

  it("maxAttempts 1 never retries", () => {
    expect(retryUnder(policy({ maxAttempts: 1 }), 1, { name: "Error", retryable: true })).toBeUndefined();
  });

  it("the first retrier that matches decides, each with its own attempts; an error none matches is not retried", () => {
    const throttled = retrier({ errors: ["Throttled", "Timeout"], maxAttempts: 10, initialSeconds: 5 });
    const any = retrier({ errors: ["*"], maxAttempts: 2 });
    const list = retriers(throttled, any);
    expect(retryUnder(list, 9, { name: "Throttled" })).toBe(throttled);
    expect(retryUnder(list, 10, { name: "Timeout" })).toBeUndefined();
    expect(retryUnder(list, 1, { name: "Boom" })).toBe(any);
    expect(retryUnder(list, 2, { name: "Boom" })).toBeUndefined();
    const allowList = retriers(throttled);
    expect(retryUnder(allowList, 1, { name: "Boom" })).toBeUndefined();
    // The code of an AWS or Node error matches as its name does.
    expect(
      retryUnder(retriers(retrier({ errors: ["ECONNRESET"] })), 1, { name: "Error", code: "ECONNRESET" }),
    ).toBeDefined();
  });

  it("a name listed in nonRetryable is never retried, whatever matches it", () => {
    expect(
      retryUnder(policy({ nonRetryable: ["WorkerTimeout"] }), 1, { name: "WorkerTimeout" }),
    ).toBeUndefined();
  });
});

describe("matchesError", () => {
  it('matches "*", the name or the code', () => {
    expect(matchesError(["*"], { name: "X" })).toBe(true);
    expect(matchesError(["X"], { name: "X" })).toBe(true);
    expect(matchesError(["E1"], { name: "X", code: "E1" })).toBe(true);
    expect(matchesError(["Y"], { name: "X", code: "E1" })).toBe(false);
    expect(matchesError([], { name: "X" })).toBe(false);
  });
});

describe("classifyError with an allow-list", () => {
  it("an error no retrier matches is not retryable; one that matches by its code is, and keeps the code", () => {
    const onlyThrottled = policy({ errors: ["Throttled", "ECONNRESET"] });
    expect(classifyError(new Error("business rule"), onlyThrottled).retryable).toBe(false);
    const reset = Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
    expect(classifyError(reset, onlyThrottled)).toEqual({
      name: "Error",
      message: "socket hang up",
      code: "ECONNRESET",
      retryable: true,
    });
  });
});
