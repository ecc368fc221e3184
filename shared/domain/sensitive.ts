/**
 * Secret-looking strings, refused where a value would be kept in plain sight (execution variables:
 * the view shows them, every later expression reads them). Pure, and it never returns the value:
 * only what kind of secret it looks like, so a message can name the place and the kind but never
 * quote what was found (the message itself is kept and shown).
 *
 * The known formats are matched anywhere in a string; the high-entropy rule only on a token (no
 * whitespace, only the characters of base64, hex and url-safe ids, and a mix of character classes),
 * since ordinary prose and URLs of 20 characters have as much entropy per character as a key does.
 * A canonical UUID is an identifier, not a secret: it is let through.
 */

import { isExactNumber } from "./exact-numbers.js";

export const SENSITIVE_RULES = {
  /** Shannon entropy, bits per character, at or above which a token looks random. */
  minEntropyBits: 3.2,
  /** Shortest token the entropy rule looks at. */
  minEntropyLength: 20,
  /** Shortest run of base64 that counts as an encoded blob on its own. */
  minBase64Length: 40,
} as const;

/** What a secret-looking string looks like: named in messages instead of the value. */
export type SensitiveKind =
  | "a JWT"
  | "a PEM key or certificate"
  | "an AWS access key id"
  | "an AWS secret access key"
  | "a Google API key"
  | "a Slack token"
  | "a bearer token"
  | "long base64"
  | "a high-entropy token";

const FORMATS: ReadonlyArray<readonly [RegExp, SensitiveKind]> = [
  [/-----BEGIN [A-Z0-9 ]+-----/, "a PEM key or certificate"],
  [/eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/, "a JWT"],
  [/(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])/, "an AWS access key id"],
  [/AIza[0-9A-Za-z_-]{35}/, "a Google API key"],
  [/xox[abposr]-[0-9A-Za-z-]{10,}/, "a Slack token"],
  [/\bbearer\s+[A-Za-z0-9._~+/=-]{8,}/i, "a bearer token"],
  // 40 characters of base64 standing alone: the shape of an AWS secret access key.
  [
    /(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+=]*[0-9])(?=[A-Za-z0-9/+=]*[A-Z])[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])/,
    "an AWS secret access key",
  ],
];

const TOKEN = /^[A-Za-z0-9+/=_-]+$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Bits of Shannon entropy per character of `text`. */
export function shannonEntropy(text: string): number {
  if (text.length === 0) return 0;
  const counts = new Map<string, number>();
  for (const char of text) counts.set(char, (counts.get(char) ?? 0) + 1);
  let bits = 0;
  const length = [...text].length;
  for (const count of counts.values()) {
    const p = count / length;
    bits -= p * Math.log2(p);
  }
  return bits;
}

/** At least two of lower case, upper case and digits, each at least twice: how keys are made. */
function mixed(token: string): boolean {
  const classes = [/[a-z]/g, /[A-Z]/g, /[0-9]/g].filter((c) => (token.match(c)?.length ?? 0) >= 2);
  return classes.length >= 2;
}

/** What `text` looks like if it looks like a secret, else undefined. */
export function sensitiveKind(text: string): SensitiveKind | undefined {
  for (const [pattern, kind] of FORMATS) if (pattern.test(text)) return kind;
  if (!TOKEN.test(text) || UUID.test(text) || !mixed(text)) return undefined;
  if (text.length >= SENSITIVE_RULES.minBase64Length && /^[A-Za-z0-9+/]+={0,2}$/.test(text))
    return "long base64";
  if (
    text.length >= SENSITIVE_RULES.minEntropyLength &&
    shannonEntropy(text) >= SENSITIVE_RULES.minEntropyBits
  )
    return "a high-entropy token";
  return undefined;
}

/** Keys from a value's root to a string inside it. */
export type ValuePath = ReadonlyArray<string | number>;

/**
 * The first secret-looking string inside `value` (deep: arrays and plain objects), with its path, or
 * undefined. `skip` leaves strings out (an expression's text at registration). Iterative.
 */
export function findSensitive(
  value: unknown,
  skip: (text: string) => boolean = () => false,
): { path: ValuePath; kind: SensitiveKind } | undefined {
  const stack: Array<{ value: unknown; path: ValuePath }> = [{ value, path: [] }];
  while (stack.length > 0) {
    const { value: current, path } = stack.pop()!;
    if (typeof current === "string") {
      if (skip(current)) continue;
      const kind = sensitiveKind(current);
      if (kind) return { path, kind };
    } else if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) stack.push({ value: current[i], path: [...path, i] });
    } else if (typeof current === "object" && current !== null && !isExactNumber(current)) {
      // An exact number (exact-numbers.ts) is a number, its digits no secret: a leaf.
      const entries = Object.entries(current);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, inner] = entries[i]!;
        stack.push({ value: inner, path: [...path, key] });
      }
    }
  }
  return undefined;
}
