/**
 * Arbitrary JSON as `JSON.parse` yields it, leaning on the awkward parts: integers beyond 2^53,
 * subnormals, -0, ±Infinity (what `1e400` parses to), unicode and control characters, lone
 * surrogates, empty, `__proto__` and `constructor` keys, long strings (over the inline threshold,
 * so they go to the blob store), and nesting up to the documented limit.
 */
import fc from "fast-check";
import { PAYLOAD_LIMITS } from "../../shared/domain/payload.js";

const key = fc.oneof(
  fc.constantFrom("", "__proto__", "constructor", "toString", "hasOwnProperty", "a"),
  fc.string({ unit: "binary", maxLength: 12 }),
);

const number = fc.oneof(
  fc.double({ noNaN: true }),
  fc.integer(),
  fc.constantFrom(
    // What JSON.parse makes of an integer beyond 2^53 (a user's 64-bit id).
    JSON.parse("12345678901234567890") as number,
    2 ** 53 + 2,
    -(2 ** 60),
    5e-324,
    1e-300,
    2.2250738585072014e-308,
    -0,
    1e308,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
  ),
);

const text = fc.oneof(
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({ unit: "grapheme", maxLength: 40 }),
  fc.constantFrom("", "\u0000\u001f\u007f\u2028\u2029", "\ud800", "\udfff\ud800", '"\\/'),
  // Long enough to leave the item for the blob store.
  fc
    .tuple(fc.string({ unit: "grapheme", minLength: 1, maxLength: 8 }), fc.integer({ min: 1, max: 3000 }))
    .map(([piece, times]) => piece.repeat(times)),
);

const { value } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    number,
    text,
    fc.array(tie("value"), { maxLength: 5 }),
    fc.dictionary(key, tie("value"), { maxKeys: 5, noNullPrototype: true }),
  ),
}));

/** Depth of arrays and objects in a value (iterative). */
export function depthOf(root: unknown): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[root, 0]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (typeof item !== "object" || item === null) {
      deepest = Math.max(deepest, depth);
      continue;
    }
    const children = Array.isArray(item) ? item : Object.values(item);
    deepest = Math.max(deepest, depth + 1);
    for (const child of children) stack.push([child, depth + 1]);
  }
  return deepest;
}

/** `value` wrapped in `levels` arrays or objects (alternating with the flag). */
function nest(leaf: unknown, levels: number, arrays: boolean): unknown {
  let current = leaf;
  for (let i = 0; i < levels; i++) current = arrays || i % 2 === 0 ? [current] : { [`k${i}`]: current };
  return current;
}

const deep = fc
  .tuple(fc.integer({ min: 1, max: PAYLOAD_LIMITS.maxDepth }), value, fc.boolean())
  .map(([levels, leaf, arrays]) => {
    const room = PAYLOAD_LIMITS.maxDepth - depthOf(leaf);
    return nest(leaf, Math.max(0, Math.min(levels, room)), arrays);
  });

/** Any JSON value within the documented limits. */
export const jsonValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: value },
  { weight: 1, arbitrary: deep },
);
