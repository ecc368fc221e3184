import { isDeepStrictEqual } from "node:util";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeJson, jsonTextDepth, PayloadError } from "../../shared/domain/json.js";
import { PAYLOAD_LIMITS } from "../../shared/domain/payload.js";
import { jsonValue } from "../support/json-arbitrary.js";

const limits = { maxBytes: PAYLOAD_LIMITS.maxBytes, maxDepth: PAYLOAD_LIMITS.maxDepth, what: "the value" };

function problem(run: () => unknown): PayloadError {
  try {
    run();
  } catch (error) {
    if (error instanceof PayloadError) return error;
    throw error;
  }
  throw new Error("expected a PayloadError");
}

describe("exact JSON (shared/domain/json.ts)", () => {
  it("gives back exactly what JSON.parse yields, for any JSON value", () => {
    fc.assert(
      fc.property(jsonValue, (value) => {
        const text = encodeJson(value, limits);
        expect(isDeepStrictEqual(JSON.parse(text), value)).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });

  it("writes -0 and the Infinity of 1e400 so that they parse back the same, and NaN as null", () => {
    expect(encodeJson([-0, 0, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.NaN], limits)).toBe(
      "[-0,0,1e400,-1e400,null]",
    );
    const back = JSON.parse(encodeJson(JSON.parse('{"a":-0,"b":1e400,"c":-1e400,"d":5e-324}'), limits));
    expect(Object.is(back.a, -0)).toBe(true);
    expect(back.b).toBe(Number.POSITIVE_INFINITY);
    expect(back.c).toBe(Number.NEGATIVE_INFINITY);
    expect(back.d).toBe(5e-324);
  });

  it("keeps __proto__, constructor and empty keys as the own properties they are", () => {
    const parsed = JSON.parse('{"__proto__":{"x":1},"constructor":2,"":3}') as Record<string, unknown>;
    const text = encodeJson(parsed, limits);
    expect(text).toBe('{"__proto__":{"x":1},"constructor":2,"":3}');
    const back = JSON.parse(text) as Record<string, unknown>;
    expect(Object.getPrototypeOf(back)).toBe(Object.prototype);
    expect(Object.keys(back)).toEqual(["__proto__", "constructor", ""]);
  });

  it("follows JSON.stringify for what is not JSON: toJSON, undefined, functions", () => {
    const value = { d: new Date(0), u: undefined, f: () => 1, list: [undefined, () => 1], n: null };
    expect(encodeJson(value, limits)).toBe(JSON.stringify(value));
    expect(encodeJson(undefined, limits)).toBe("null");
  });

  it("refuses a BigInt and a circular value as PayloadNotJson, naming the value", () => {
    expect(problem(() => encodeJson({ n: 1n }, limits)).code).toBe("PayloadNotJson");
    const circular: Record<string, unknown> = {};
    circular.self = { circular };
    const error = problem(() => encodeJson(circular, limits));
    expect(error.code).toBe("PayloadNotJson");
    expect(error.message).toContain("the value");
    // The same object twice, side by side, is not a cycle.
    const shared = { a: 1 };
    expect(encodeJson([shared, shared], limits)).toBe('[{"a":1},{"a":1}]');
  });

  it("takes 512 levels and refuses 513 as PayloadTooDeep; 100,000 levels neither overflow nor pass", () => {
    const nested = (levels: number) => JSON.parse(`${"[".repeat(levels)}${"]".repeat(levels)}`) as unknown;
    expect(encodeJson(nested(512), limits)).toHaveLength(1024);
    const error = problem(() => encodeJson(nested(513), limits));
    expect(error.code).toBe("PayloadTooDeep");
    expect(error.message).toContain("512");
    expect(problem(() => encodeJson(nested(100_000), limits)).code).toBe("PayloadTooDeep");
  });

  it("refuses a value over the size limit as PayloadTooLarge, naming the limit, before building it whole", () => {
    const small = { ...limits, maxBytes: 1000 };
    expect(encodeJson("x".repeat(998), small)).toHaveLength(1000);
    const error = problem(() => encodeJson("x".repeat(999), small));
    expect(error.code).toBe("PayloadTooLarge");
    expect(error.message).toContain("1000 bytes");
    // Counted in UTF-8 bytes: 400 two-byte characters are 802 bytes with the quotes.
    expect(problem(() => encodeJson("é".repeat(500), small)).code).toBe("PayloadTooLarge");
    const huge = Array.from({ length: 1_000_000 }, () => "abcdefghij");
    expect(problem(() => encodeJson(huge, small)).code).toBe("PayloadTooLarge");
  });

  it("measures the nesting of a JSON text without parsing it, skipping brackets inside strings", () => {
    expect(jsonTextDepth("1")).toBe(0);
    expect(jsonTextDepth('{"a":[1,{"b":[]}]}')).toBe(4);
    expect(jsonTextDepth('["[[[[", "\\"[[", {}]')).toBe(2);
    expect(jsonTextDepth("[".repeat(100_000), 600)).toBe(601);
  });
});
