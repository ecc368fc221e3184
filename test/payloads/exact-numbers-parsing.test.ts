/**
 * Exact numbers at the parse and serialize edges (shared/domain/exact-numbers.ts): the rule (a
 * plain number when a double holds its digits, a LosslessNumber otherwise), the writers keeping the
 * digits, the copies keeping the class, and expressions (in this thread and in the isolated
 * evaluator's) moving them exactly and refusing arithmetic on them.
 */
import fc from "fast-check";
import jsonata from "jsonata";
import { parse } from "lossless-json";
import { afterAll, describe, expect, it } from "vitest";
import { IsolatedExpressions } from "../../shared/adapters/expressions/isolated.js";
import {
  cloneExact,
  isExactNumber,
  LosslessNumber,
  losslessParse,
  parseExact,
  parseNumberText,
  stringifyExact,
} from "../../shared/domain/exact-numbers.js";
import { evaluateCondition, resolveExpressions } from "../../shared/domain/expression-evaluation.js";
import { ExpressionError, type ExpressionScope } from "../../shared/domain/expressions.js";
import { canonicalJson } from "../../shared/domain/hash.js";
import { encodeJson } from "../../shared/domain/json.js";
import { depthOf, jsonValue } from "../support/json-arbitrary.js";

const BIG = "12345678901234567891";
const HUGE = "123456789012345678901234567890";
const DECIMAL = "0.1000000000000000000000000001";
const TEXT = `{"id":${BIG},"huge":${HUGE},"dec":${DECIMAL},"small":42,"half":0.5,"neg":-0}`;

const exact = (value: unknown) =>
  encodeJson(value, { maxBytes: Number.POSITIVE_INFINITY, maxDepth: Number.POSITIVE_INFINITY, what: "x" });

const scopeOf = (input: unknown): ExpressionScope => ({
  input,
  deps: { a: input },
  execution: { id: "e-1", workflow: "w", version: 1 },
});
const options = { now: () => 0 };

describe("the rule", () => {
  it("keeps numbers a double cannot hold as LosslessNumbers, and every other number plain", () => {
    const value = parseExact(TEXT) as Record<string, unknown>;
    for (const [key, digits] of [
      ["id", BIG],
      ["huge", HUGE],
      ["dec", DECIMAL],
    ] as const) {
      expect(isExactNumber(value[key])).toBe(true);
      expect((value[key] as LosslessNumber).value).toBe(digits);
    }
    expect(value.small).toBe(42);
    expect(value.half).toBe(0.5);
    expect(Object.is(value.neg, -0)).toBe(true);
  });

  it("draws the line where a double stops giving the text back", () => {
    expect(parseNumberText("9007199254740991")).toBe(9007199254740991);
    expect(isExactNumber(parseNumberText("9007199254740993"))).toBe(true);
    expect(isExactNumber(parseNumberText("-9007199254740993"))).toBe(true);
    expect(isExactNumber(parseNumberText("1234567890123456768"))).toBe(true);
    // Beyond 2^53 but held digit for digit by a double: ordinary numbers, as before.
    expect(parseNumberText("9007199254740994")).toBe(2 ** 53 + 2);
    expect(parseNumberText("1e21")).toBe(1e21);
    expect(parseNumberText("0.1")).toBe(0.1);
    expect(parseNumberText("1E5")).toBe(100000);
    expect(parseNumberText("5e-324")).toBe(5e-324);
    // 1e400 is how weft writes Infinity (json.ts), so it is Infinity; other overflows and
    // underflows keep their text instead of becoming Infinity or 0.
    expect(parseNumberText("1e400")).toBe(Number.POSITIVE_INFINITY);
    expect(parseNumberText("-1e400")).toBe(Number.NEGATIVE_INFINITY);
    expect((parseNumberText("2e400") as LosslessNumber).value).toBe("2e400");
    expect((parseNumberText("1e-400") as LosslessNumber).value).toBe("1e-400");
  });

  it("gives what lossless-json gives for any JSON text (the JSON.parse shortcut changes nothing)", () => {
    const slow = (text: string) =>
      parse(text, undefined, { parseNumber: parseNumberText, onDuplicateKey: (d) => d.newValue });
    fc.assert(
      fc.property(jsonValue, (value) => {
        const text = exact(value);
        expect(exact(parseExact(text))).toBe(exact(slow(text)));
      }),
      { numRuns: 200 },
    );
  });

  it("agrees with lossless-json on values full of exact numbers, number-like strings and markers", () => {
    const exactNumber = fc.oneof(
      fc.bigInt({ min: -(2n ** 200n), max: 2n ** 200n }).map((n) => new LosslessNumber(String(n))),
      fc
        .tuple(fc.bigInt({ min: 0n, max: 10n ** 40n }), fc.stringMatching(/^[0-9]{16,40}$/))
        .map(([whole, fraction]) => new LosslessNumber(`${whole}.${fraction}`)),
      fc.integer({ min: -400, max: 400 }).map((e) => new LosslessNumber(`7e${e}`)),
    );
    const leaf = fc.oneof(
      exactNumber,
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.stringMatching(/^-?[0-9]{14,30}(\.[0-9]+)?$/),
      fc.constantFrom("\u0000", "\u0000abc:0", "12345678901234567891"),
    );
    const { value } = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: "small" },
        leaf,
        fc.array(tie("value"), { maxLength: 5 }),
        fc.dictionary(fc.oneof(fc.string(), fc.constant("12345678901234567891")), tie("value"), {
          maxKeys: 5,
          noNullPrototype: true,
        }),
      ),
    }));
    fc.assert(
      fc.property(value, (generated) => {
        const text = exact(generated);
        expect(exact(parseExact(text))).toBe(exact(losslessParse(text)));
      }),
      { numRuns: 300 },
    );
  });

  it("leaves digits inside strings alone, and refuses a number where a key belongs", () => {
    const value = parseExact(`{"s":"${BIG}","n":${BIG},"e":"1e400"}`) as Record<string, unknown>;
    expect(value.s).toBe(BIG);
    expect(value.e).toBe("1e400");
    expect(isExactNumber(value.n)).toBe(true);
    expect(() => parseExact(`{${BIG}:1}`)).toThrow(SyntaxError);
    expect(() => parseExact(`[${BIG} 1]`)).toThrow(SyntaxError);
    // JSON.parse's own message, positions included.
    expect(() => parseExact(`{"a":${BIG},}`)).toThrow(/position 26/);
  });

  it("keeps JSON.parse's ways: last duplicate key wins, __proto__ is an own key, bad JSON throws", () => {
    const value = parseExact(`{"a":1,"a":${BIG},"__proto__":{"x":1}}`) as Record<string, unknown>;
    expect((value.a as LosslessNumber).value).toBe(BIG);
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.keys(value)).toEqual(["a", "__proto__"]);
    expect(() => parseExact(`{"id": ${BIG},}`)).toThrow(SyntaxError);
  });
});

describe("the writers and copies", () => {
  it("write the digits back: payloads, canonical (hash) JSON and outgoing bodies", () => {
    const value = parseExact(TEXT);
    expect(exact(value)).toBe(TEXT);
    expect(canonicalJson(value)).toBe(
      `{"dec":${DECIMAL},"half":0.5,"huge":${HUGE},"id":${BIG},"neg":-0,"small":42}`,
    );
    expect(stringifyExact(value)).toBe(TEXT.replace("-0", "0"));
  });

  it("copy a value with its exact numbers still exact (structuredClone alone would flatten them)", () => {
    const value = parseExact(`{"a":[{"id":${BIG}}],"__proto__":${HUGE},"s":1}`);
    const copy = cloneExact(value) as { a: [{ id: unknown }] };
    expect(isExactNumber(copy.a[0].id)).toBe(true);
    expect(exact(copy)).toBe(exact(value));
    expect(copy).not.toBe(value);
    expect(isExactNumber(structuredClone(value as { a: [{ id: unknown }] }).a[0].id)).toBe(false);
  });
});

describe.each([
  ["in this thread", undefined],
  ["in the isolated evaluator", new IsolatedExpressions({ threads: 1, heapMb: 256, graceMs: 200 })],
] as const)("expressions %s", (_label, isolated) => {
  afterAll(async () => {
    await isolated?.close();
  });
  const resolve = (value: unknown, input: unknown) =>
    isolated
      ? isolated.resolve(value, scopeOf(input), options)
      : resolveExpressions(value, scopeOf(input), options);
  const condition = (expression: string, input: unknown) =>
    isolated
      ? isolated.condition(expression, scopeOf(input), options)
      : evaluateCondition(expression, scopeOf(input), options);

  it("move an exact number exactly: {% input.id %}, {% deps.a.id %}, inside objects and arrays", async () => {
    const input = parseExact(TEXT);
    const params = {
      id: "{% input.id %}",
      fromDep: "{% deps.a.id %}",
      built: "{% {'huge': input.huge, 'list': [input.dec, input.small]} %}",
      whole: "{% input %}",
      literal: new LosslessNumber(BIG),
    };
    const resolved = await resolve(params, input);
    expect(exact(resolved)).toBe(
      `{"id":${BIG},"fromDep":${BIG},"built":{"huge":${HUGE},"list":[${DECIMAL},42]},"whole":${TEXT},"literal":${BIG}}`,
    );
    expect(isExactNumber((resolved as { id: unknown }).id)).toBe(true);
  });

  it("write its digits with $string, and compare exact numbers by their digits with =", async () => {
    const input = parseExact(TEXT);
    expect(await resolve({ s: "{% $string(input.id) %}", o: "{% $string(input) %}" }, input)).toEqual({
      s: BIG,
      o: TEXT.replace("-0", "0"),
    });
    expect(await condition("{% input.id = deps.a.id %}", input)).toBe(true);
    expect(await resolve("{% $number($string(input.id)) %}", input)).toBe(12345678901234567000);
  });

  it("give what jsonata's own $string gives for values without exact numbers", async () => {
    const plain = jsonata("$string(x, p)");
    await fc.assert(
      // Shallow: deep values meet weft's own bounds first, which are not what is compared here.
      fc.asyncProperty(
        jsonValue.filter((x) => depthOf(x) < 32),
        fc.boolean(),
        async (x, p) => {
          const expected = await plain.evaluate({ x, p }).then(
            (text: unknown) => ({ text }),
            (error: { code?: string }) => ({ code: error.code }),
          );
          const got = await resolve("{% $string(input.x, input.p) %}", { x, p }).then(
            (text: unknown) => ({ text }),
            (error: Error) => ({ code: /\((D\d+)\)/.exec(error.message)?.[1] }),
          );
          expect(got).toEqual(expected);
        },
      ),
      { numRuns: isolated ? 30 : 150 },
    );
  });

  it("refuse arithmetic on one with an ExpressionError that says why", async () => {
    const input = parseExact(TEXT);
    for (const expression of ["{% input.id + 1 %}", "{% input.dec * 2 %}", "{% $sum([input.huge]) %}"]) {
      const error = await resolve({ n: expression }, input).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ExpressionError);
      expect((error as ExpressionError).message).toContain("it computes with an exact number");
      expect((error as ExpressionError).message).not.toContain(BIG);
    }
    // A plain number computes as before; one beyond 2^53 a double holds computes as a double.
    expect(await resolve("{% input.small + 1 %}", input)).toBe(43);
    expect(await resolve("{% input.big + 1 %}", parseExact('{"big":9007199254740994}'))).toBe(
      9007199254740996,
    );
  });
});
