/** The pure rules of execution variables (domain/vars.ts) and of secret-looking values (domain/sensitive.ts). */
import { describe, expect, it } from "vitest";
import { isExactNumber, LosslessNumber } from "../../shared/domain/exact-numbers.js";
import { findSensitive, sensitiveKind } from "../../shared/domain/sensitive.js";
import {
  applyVarsOp,
  checkVarsOp,
  detailCode,
  encodeDocument,
  mentionsVars,
  VARS_ERRORS,
  VARS_LIMITS,
  VarsError,
  type VarsOp,
  varsParamsSchema,
} from "../../shared/domain/vars.js";
import { aggregate } from "../../shared/tasks/aggregate.js";

const parse = (params: unknown): VarsOp => varsParamsSchema.parse(params);

describe("variables: operations", () => {
  it("set by values or by path, creating objects on the way and replacing what is in the way", () => {
    const { document, result } = applyVarsOp(
      { a: 5, keep: true },
      parse({ op: "set", values: { "a.b": 1, c: [1] } }),
    );
    expect(document).toEqual({ a: { b: 1 }, c: [1], keep: true });
    expect(result).toEqual({ set: 2 });
    expect(applyVarsOp({}, parse({ op: "set", path: "x", value: null })).document).toEqual({ x: null });
  });

  it("merge deep-merges objects at a path (the root when none), other values replaced", () => {
    const start = { a: { b: 1, c: { d: 1 } }, z: 1 };
    const { document } = applyVarsOp(
      start,
      parse({ op: "merge", path: "a", value: { c: { e: 2 }, b: [1] } }),
    );
    expect(document).toEqual({ a: { b: [1], c: { d: 1, e: 2 } }, z: 1 });
    expect(start).toEqual({ a: { b: 1, c: { d: 1 } }, z: 1 }); // a copy: the input is left alone
    expect(applyVarsOp({ z: 1 }, parse({ op: "merge", value: { y: 2 } })).document).toEqual({ z: 1, y: 2 });
  });

  it("incr starts a missing leaf at 0, refuses a leaf that is not a number and a result that is not finite", () => {
    expect(applyVarsOp({}, parse({ op: "incr", path: "n" })).result).toEqual({ value: 1 });
    expect(applyVarsOp({ n: 2 }, parse({ op: "incr", path: "n", by: -5 })).result).toEqual({ value: -3 });
    const code = (doc: Record<string, unknown>, op: unknown) => {
      try {
        applyVarsOp(doc, parse(op));
        return undefined;
      } catch (error) {
        return error instanceof VarsError ? error.code : error;
      }
    };
    expect(code({ n: "1" }, { op: "incr", path: "n" })).toBe(VARS_ERRORS.notANumber);
    expect(code({ n: Number.MAX_VALUE }, { op: "incr", path: "n", by: Number.MAX_VALUE })).toBe(
      VARS_ERRORS.notANumber,
    );
    // The schema refuses NaN and ±Infinity for `by`; the check holds for an operation built otherwise.
    expect(varsParamsSchema.safeParse({ op: "incr", path: "n", by: Number.NaN }).success).toBe(false);
    const infinite: VarsOp = { op: "incr", path: "n", by: Number.POSITIVE_INFINITY };
    expect(checkVarsOp(infinite).map((p) => p.code)).toEqual([VARS_ERRORS.notANumber]);
  });

  it("keeps exact numbers exact: set and merge copy them, the document stores their digits, incr refuses them", () => {
    const id = new LosslessNumber("12345678901234567891");
    const set = applyVarsOp({}, { op: "set", values: { "order.id": id } });
    const merged = applyVarsOp(set.document, { op: "merge", value: { copy: { id } } });
    expect(isExactNumber((merged.document.order as Record<string, unknown>).id)).toBe(true);
    expect(isExactNumber((merged.document.copy as Record<string, unknown>).id)).toBe(true);
    expect(encodeDocument(merged.document)).toBe(
      '{"order":{"id":12345678901234567891},"copy":{"id":12345678901234567891}}',
    );
    // A leaf, as any number: neither a level of nesting nor a secret-looking string of digits.
    expect(checkVarsOp({ op: "set", values: { id }, blockSensitive: true })).toEqual([]);
    expect(findSensitive({ id })).toBeUndefined();
    expect(() => applyVarsOp(set.document, { op: "incr", path: "order.id" })).toThrow(
      /an exact number of 20 characters/,
    );
  });

  it("unset removes what exists and counts it", () => {
    const { document, result } = applyVarsOp(
      { a: { b: 1, c: 2 }, d: 1 },
      parse({ op: "unset", paths: ["a.b", "d", "x.y"] }),
    );
    expect(document).toEqual({ a: { c: 2 } });
    expect(result).toEqual({ unset: 2 });
  });

  it("refuses a document past its size", () => {
    const big = { s: "x".repeat(VARS_LIMITS.maxDocumentBytes) };
    expect(() => encodeDocument(big)).toThrow(VarsError);
  });

  it("shapes: set needs values or path with value; unknown fields and ops refused", () => {
    for (const bad of [
      { op: "set" },
      { op: "set", path: "a" },
      { op: "set", values: {}, path: "a", value: 1 },
      { op: "incr" },
      { op: "unset", paths: [] },
      { op: "drop", path: "a" },
      { op: "incr", path: "a", extra: 1 },
    ])
      expect(varsParamsSchema.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
  });

  it("names its codes once: a detail's code is the run-time name in snake_case", () => {
    expect(detailCode(VARS_ERRORS.tooManyKeys)).toBe("vars_too_many_keys");
    expect(detailCode(VARS_ERRORS.sensitive)).toBe("sensitive_value");
  });

  it("reads variables only for expressions that mention them", () => {
    expect(mentionsVars({ a: "{% vars.x %}" })).toBe(true);
    expect(mentionsVars("{% $$.vars %}")).toBe(true);
    expect(mentionsVars({ a: "{% input.variables %}" }, undefined)).toBe(false);
  });
});

describe("secret-looking values", () => {
  it("knows the formats and high-entropy tokens, and lets ordinary values through", () => {
    expect(sensitiveKind("AKIAIOSFODNN7EXAMPLE")).toBe("an AWS access key id");
    expect(sensitiveKind("key ASIAIOSFODNN7EXAMPLE in a sentence")).toBe("an AWS access key id");
    expect(sensitiveKind("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")).toBe("an AWS secret access key");
    expect(sensitiveKind("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl")).toBe("a JWT");
    expect(sensitiveKind("-----BEGIN RSA PRIVATE KEY-----\nMIIB")).toBe("a PEM key or certificate");
    expect(sensitiveKind(`AIza${"B".repeat(35)}`)).toBe("a Google API key");
    expect(sensitiveKind("xoxb-123456789012-abcdefghij")).toBe("a Slack token");
    expect(sensitiveKind("Bearer abc.def.ghi123")).toBe("a bearer token");
    expect(sensitiveKind("ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3x")).toBe("a high-entropy token");
    for (const ordinary of [
      "hello world, this is an ordinary sentence",
      "https://example.com/orders/12345?page=2",
      "550e8400-e29b-41d4-a716-446655440000",
      "customer_onboarding_flow_v2",
      "2026-01-01T00:00:00.000Z",
      "short1A",
    ])
      expect(sensitiveKind(ordinary), ordinary).toBeUndefined();
  });

  it("finds the first one deep in a value, by path", () => {
    expect(findSensitive({ a: [1, { token: "AKIAIOSFODNN7EXAMPLE" }] })).toEqual({
      path: ["a", 1, "token"],
      kind: "an AWS access key id",
    });
    expect(findSensitive({ a: "{% AKIAIOSFODNN7EXAMPLE %}" }, (s) => s.startsWith("{%"))).toBeUndefined();
  });
});

describe("metrics.aggregate", () => {
  it("counts the numbers at the field, skipping the others by dependency id", () => {
    const deps = { b: { x: { n: 4 } }, a: { x: { n: 1 } }, c: { x: { n: "4" } }, d: null };
    expect(aggregate(deps, "x.n")).toEqual({
      sum: 5,
      min: 1,
      max: 4,
      avg: 2.5,
      count: 2,
      skipped: ["c", "d"],
    });
    expect(aggregate({ a: 3 }, undefined, ["sum"])).toEqual({ sum: 3, skipped: [] });
    expect(aggregate({}, "x")).toEqual({ sum: 0, count: 0, min: null, max: null, avg: null, skipped: [] });
  });
});
