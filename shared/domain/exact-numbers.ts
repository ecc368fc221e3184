/**
 * Exact numbers: the one rule for numbers in user values (execution inputs, params, node outputs,
 * task responses, definitions), and the one parser of their JSON text.
 *
 * The rule: a number whose text round-trips through a double is a plain `number`: the double,
 * written as weft writes doubles (json.ts `numberText`: the shortest text, ±Infinity as ±1e400),
 * is the same number as the text (lossless-json's `compareNumber`). Every other one is a
 * `LosslessNumber` holding its text: an integer a double cannot hold (`12345678901234567891`, most
 * beyond 2^53), a decimal with more digits than a double keeps, a magnitude it underflows or
 * overflows (other than 1e400). So ordinary values stay plain numbers and no code path changes for
 * them (-0, 1e400 as Infinity, 2^53 + 2 and 1e21 included: their text comes back the same), and
 * the others keep every digit wherever they go, because the writers (json.ts `encodeJson`, hash.ts
 * `canonicalJson`) write a LosslessNumber as its text and the walkers treat it as a leaf.
 *
 * The numbers are lossless-json's (`compareNumber`, `LosslessNumber`); see parseExact for how the
 * text is parsed fast.
 */
import { compareNumber, isLosslessNumber, LosslessNumber, parse, stringify } from "lossless-json";

import { endOfString } from "./json-scan.js";

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

/** A number's text as the rule takes it: a plain number when it round-trips, else exact. */
export function parseNumberText(text: string): number | ExactNumber {
  const double = Number.parseFloat(text);
  return roundTrips(text, double) ? double : new LosslessNumber(text);
}

/** Whether `double` written back (as json.ts `numberText` writes it) is the number `text` is. */
function roundTrips(text: string, double: number): boolean {
  const written =
    double === Number.POSITIVE_INFINITY
      ? "1e400"
      : double === Number.NEGATIVE_INFINITY
        ? "-1e400"
        : String(double);
  return compareNumber(text, written) === 0;
}

/**
 * A run of 16 digits and dots (16 or more significant digits), or an exponent: only such texts can
 * hold a number the rule makes exact (15 significant digits always survive a double, and without
 * an exponent a magnitude of 2^53 needs 16 digits). A match inside a string only costs a scan.
 */
const MAY_HOLD_EXACT = /\d[eE]|\d[\d.]{15}/;

/** A JSON number token (RFC 8259's grammar), read where the scan stands. */
const NUMBER_TOKEN = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/**
 * The value of a JSON text, numbers by the rule above. Throws SyntaxError for text that is not
 * JSON (JSON.parse's message). A key given twice keeps its last value; `__proto__` is an own key.
 *
 * The structure is JSON.parse's, the numbers lossless-json's. lossless-json's own parser is about
 * 50 times slower than JSON.parse on long strings (5 MiB: 513 ms against 9 ms), and every payload
 * holding a big id would pay it on each load. So the number tokens the rule makes exact are found
 * by a scan (numbers outside strings), replaced by marker strings, the text
 * parsed by JSON.parse, and the markers replaced by LosslessNumbers. A marker is a NUL, a counter
 * found nowhere in the text, and the token's index. Anything unexpected (a marker
 * met twice or never, or as a key: a number where a key belongs) falls back to lossless-json's
 * parser, which gives the same values (test/payloads/exact-numbers-parsing.test.ts checks the two
 * agree on any JSON).
 */
export function parseExact(text: string): unknown {
  if (!MAY_HOLD_EXACT.test(text)) return JSON.parse(text) as unknown;
  const tokens = exactTokens(text);
  if (tokens.length === 0) return JSON.parse(text) as unknown;
  // Short: it is written once per exact number. One found nowhere in the text (a NUL is written
  // escaped in JSON, so a raw one never is; the counter only guards a text holding `\u0000`
  // escapes): no randomness, so the domain stays pure and a parse is the same every time.
  let nonce = 0;
  while (text.includes(`\\u0000${nonce}:`)) nonce++;
  const marker = `\u0000${nonce}:`;
  const parts: string[] = [];
  let at = 0;
  tokens.forEach(([start, end], index) => {
    parts.push(text.slice(at, start), `"\\u0000${nonce}:${index}"`);
    at = end;
  });
  parts.push(text.slice(at));
  let marked: unknown;
  try {
    marked = JSON.parse(parts.join("")) as unknown;
  } catch (error) {
    // A string is valid wherever a number is: the text itself is not JSON. Its own message, with
    // its own positions.
    JSON.parse(text);
    throw error;
  }
  const restored = restoreMarkers(
    marked,
    marker,
    tokens.map(([start, end]) => text.slice(start, end)),
  );
  return restored.ok ? restored.value : losslessParse(text);
}

/** lossless-json's parser with the rule, and JSON.parse's way with duplicate keys. */
export function losslessParse(text: string): unknown {
  return parse(text, undefined, {
    parseNumber: parseNumberText,
    onDuplicateKey: ({ newValue }) => newValue,
  });
}

/** Where the number tokens the rule makes exact are ([start, end) of each), outside strings. */
function exactTokens(text: string): Array<[number, number]> {
  const found: Array<[number, number]> = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      i = endOfString(text, i);
      continue;
    }
    if (c !== 0x2d && (c < 0x30 || c > 0x39)) continue;
    NUMBER_TOKEN.lastIndex = i;
    const token = NUMBER_TOKEN.exec(text)?.[0];
    // Not a number after all (a lone "-"): JSON.parse will say so.
    if (token === undefined) continue;
    // Up to 15 digits without an exponent always survive a double: no need to ask.
    const short = token.length - (c === 0x2d ? 1 : 0) <= 15 && !/[eE]/.test(token);
    if (!short && !roundTrips(token, Number.parseFloat(token))) found.push([i, i + token.length]);
    i += token.length - 1;
  }
  return found;
}

/**
 * `value` with each marker string replaced by its LosslessNumber, in place (the value is fresh from
 * JSON.parse). Not ok when a marker is met where it should not be: then nothing is to be trusted.
 */
function restoreMarkers(
  value: unknown,
  marker: string,
  digits: readonly string[],
): { ok: true; value: unknown } | { ok: false } {
  const seen = new Set<number>();
  let misplaced = false;
  /** The LosslessNumber a marker stands for; undefined for any other value. */
  const replace = (member: unknown): LosslessNumber | undefined => {
    if (typeof member !== "string" || !member.startsWith(marker)) return undefined;
    const index = Number(member.slice(marker.length));
    if (!Number.isInteger(index) || index < 0 || index >= digits.length || seen.has(index)) {
      misplaced = true;
      return undefined;
    }
    seen.add(index);
    return new LosslessNumber(digits[index]!);
  };
  const top = replace(value);
  if (top !== undefined) return { ok: true, value: top };
  const stack: unknown[] = [value];
  while (stack.length > 0 && !misplaced) {
    const current = stack.pop();
    if (typeof current !== "object" || current === null) continue;
    if (Array.isArray(current)) {
      for (let i = 0; i < current.length; i++) {
        const number = replace(current[i]);
        if (number === undefined) stack.push(current[i]);
        else current[i] = number;
      }
      continue;
    }
    const record = current as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      // A marker as a key: a number stood where a key belongs (not JSON).
      if (key.startsWith(marker)) misplaced = true;
      const number = replace(record[key]);
      // The key is an own property already (JSON.parse), so `=` never reaches a prototype.
      if (number === undefined) stack.push(record[key]);
      else record[key] = number;
    }
  }
  return !misplaced && seen.size === digits.length ? { ok: true, value } : { ok: false };
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
  "it computes with an exact number (one a double cannot hold digit for digit, such as most integers beyond 2^53): weft keeps such numbers exact while they are moved, and refuses arithmetic, ordering and numeric functions on them rather than round them (convert on purpose with $number($string(x)))";
