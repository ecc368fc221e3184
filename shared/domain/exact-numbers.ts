/**
 * Exact numbers: the one rule for numbers in user values (execution inputs, params, node outputs,
 * task responses, definitions), and the one parser of their JSON text.
 *
 * The rule: a number whose text a double holds digit for digit (lossless-json's `isSafeNumber`:
 * the same significant digits back, and an integer no larger than 2^53 − 1) is a plain `number`;
 * every other one (an integer beyond 2^53 − 1, a decimal with more digits than a double keeps, a
 * magnitude a double overflows or underflows) is a `LosslessNumber` holding its text. Ordinary
 * values therefore stay plain numbers and no code path changes for them; the others keep every
 * digit wherever they go, because the writers (json.ts `encodeJson`, hash.ts `canonicalJson`)
 * write a LosslessNumber as its text, and the walkers treat it as a leaf.
 *
 * Parsing is lossless-json's (no parser of our own). Texts that hold no number the rule could make
 * exact (no run of 16 digits and dots, no exponent) are parsed by JSON.parse, which gives the same
 * value faster: lossless-json is only paid for where it changes something.
 */
import { isLosslessNumber, isSafeNumber, LosslessNumber, parse, stringify } from "lossless-json";

export { LosslessNumber };

/**
 * A number kept as its text because a double would lose digits of it. Read `.value` (or
 * `String(n)`) for the digits; `.valueOf()` gives a bigint for an integer and throws for a
 * magnitude a double cannot reach.
 */
export type ExactNumber = LosslessNumber;

/** Whether `value` is a number kept exact (a LosslessNumber), as opposed to a plain number. */
export function isExactNumber(value: unknown): value is ExactNumber {
  return isLosslessNumber(value);
}

/** A number's text as the rule takes it: a plain number when a double holds it, else exact. */
export function parseNumberText(text: string): number | ExactNumber {
  return isSafeNumber(text) ? Number.parseFloat(text) : new LosslessNumber(text);
}

/**
 * A run of 16 digits and dots (16 or more significant digits), or an exponent: only such texts can
 * hold a number the rule makes exact (15 significant digits always survive a double, and without
 * an exponent a magnitude of 2^53 needs 16 digits). A match inside a string only costs speed.
 */
const MAY_HOLD_EXACT = /\d[eE]|\d[\d.]{15}/;

/**
 * The value of a JSON text, numbers by the rule above. Throws SyntaxError for text that is not
 * JSON. A key given twice keeps its last value, as with JSON.parse; `__proto__` is an own key.
 * Recursive: callers bound the nesting of what they parse (json.ts `jsonTextDepth`).
 */
export function parseExact(text: string): unknown {
  if (!MAY_HOLD_EXACT.test(text)) return JSON.parse(text) as unknown;
  return parse(text, undefined, {
    parseNumber: parseNumberText,
    onDuplicateKey: ({ newValue }) => newValue,
  });
}

/**
 * JSON text for what leaves weft (a lambda's event, an http body, an event's detail): as
 * JSON.stringify writes it, but an exact number as its digits. Undefined where JSON.stringify
 * gives undefined. (Payloads weft keeps are written by json.ts `encodeJson`, which also keeps -0.)
 */
export function stringifyExact(
  value: unknown,
  replacer?: (key: string, member: unknown) => unknown,
  space?: number,
): string | undefined {
  return stringify(value, replacer, space);
}

/**
 * A deep copy as structuredClone makes it, with exact numbers kept: structuredClone copies a
 * class instance as a plain object (`{value, isLosslessNumber}`), so they are put back at the
 * places they were.
 */
export function cloneExact<T>(value: T): T {
  if (isExactNumber(value)) return new LosslessNumber(value.value) as T;
  const copy = structuredClone(value);
  if (!containsExact(value)) return copy;
  const stack: Array<[Record<string, unknown>, Record<string, unknown>]> = [
    [value as Record<string, unknown>, copy as Record<string, unknown>],
  ];
  while (stack.length > 0) {
    const [original, copied] = stack.pop()!;
    for (const key of Object.keys(original)) {
      const member = original[key];
      if (isExactNumber(member))
        // defineProperty: a "__proto__" key is a member, never the prototype.
        Object.defineProperty(copied, key, {
          value: new LosslessNumber(member.value),
          writable: true,
          enumerable: true,
          configurable: true,
        });
      else if (typeof member === "object" && member !== null)
        stack.push([member as Record<string, unknown>, copied[key] as Record<string, unknown>]);
    }
  }
  return copy;
}

/** Whether an exact number is anywhere in `value` (iterative: any nesting). */
export function containsExact(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const current = stack.pop();
    if (typeof current !== "object" || current === null) continue;
    if (isExactNumber(current)) return true;
    // One push at a time: spreading a large array into push() would overflow the arguments.
    for (const member of Array.isArray(current) ? current : Object.values(current)) stack.push(member);
  }
  return false;
}

/** The message of an expression's arithmetic on an exact number (docs/language.md, Exact numbers). */
export const EXACT_ARITHMETIC =
  "it computes with an exact number (an integer beyond 2^53 - 1, or a number with more digits than a double holds): weft keeps such numbers exact while they are moved, and refuses arithmetic, ordering and numeric functions on them rather than round them (convert on purpose with $number($string(x)))";
