/**
 * Redaction of secret values weft itself put into a request (the `http` task's secret references):
 * a server may echo them back — in an error body, in a 2xx body, in a response header — and
 * whatever a task answers is written to the node's error or output, its history, the dead letter
 * and the console. The task redacts what it returns with this before anything is written.
 *
 * Each secret is looked for in the forms a server is likely to echo: as sent; for a header value
 * `<scheme> <credentials>` (`Bearer abc…`) the credentials alone; for `Basic`, its base64 decoded
 * (`user:password`) and the password alone (the user name alone is an identifier, not a secret, and
 * is kept); and each of those JSON-escaped (inside a JSON text), URL-encoded and HTML-escaped.
 * Values shorter than MIN_REDACTED_LENGTH are left alone: they would blank out ordinary words, and a
 * credential that short protects nothing. Pure: no I/O.
 */

/** What a secret value is replaced with (also how a stored plain-text credential header is shown). */
export const REDACTED = "***";

/**
 * Values (and derived forms) shorter than this many characters are not redacted. Longer than
 * REDACTED, so redaction never makes a text longer.
 */
export const MIN_REDACTED_LENGTH = 6;

/**
 * A trailing fragment of a secret at least this long, left at the end of a text that was cut (an
 * error excerpt), is redacted too: the cut can fall inside an echoed value.
 */
const MIN_PARTIAL_LENGTH = 3;

const SCHEME = /^([A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]*)[ \t]+(\S.*)$/s;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

export interface Redactor {
  /** True when there is nothing to redact (no secret long enough): every method is the identity. */
  readonly empty: boolean;
  /** The UTF-8 length of the longest form: how far past a cut an echoed value may reach. */
  readonly longestBytes: number;
  /** The text with every form of every secret replaced by REDACTED. */
  text(text: string): string;
  /** `text(cut)`, and a trailing fragment of a secret (the cut fell inside it) replaced too. */
  cutText(cut: string): string;
  /** A JSON-like value with every string (and object key) redacted; a number that spells a secret too. */
  value(value: unknown): unknown;
  /**
   * A thrown value with its message (and stack, and causes') redacted, in place: the same error,
   * of the same class, so the retry policy reads it as before. A thrown string comes back redacted.
   */
  error(error: unknown): unknown;
}

/** The forms of one secret value a server may echo (before the length rule). */
export function secretForms(secret: string): string[] {
  const base = new Set<string>([secret]);
  const scheme = SCHEME.exec(secret);
  if (scheme) {
    const credentials = scheme[2]!.trim();
    base.add(credentials);
    if (scheme[1]!.toLowerCase() === "basic" && BASE64.test(credentials)) {
      const decoded = decodeBase64(credentials);
      base.add(decoded);
      const colon = decoded.indexOf(":");
      if (colon >= 0) base.add(decoded.slice(colon + 1));
    }
  }
  const forms = new Set<string>();
  for (const form of base) {
    if (form.length < MIN_REDACTED_LENGTH) continue;
    forms.add(form);
    forms.add(JSON.stringify(form).slice(1, -1));
    forms.add(encodeURIComponent(form));
    forms.add(encodeURIComponent(form).replace(/%20/g, "+"));
    forms.add(escapeHtml(form));
  }
  return [...forms];
}

export function secretRedactor(secrets: Iterable<string>): Redactor {
  const forms = new Set<string>();
  for (const secret of secrets) for (const form of secretForms(secret)) forms.add(form);
  if (forms.size === 0) return NO_REDACTION;
  // Longest first, so a value is replaced whole rather than a part of it found inside.
  const sorted = [...forms].sort((a, b) => b.length - a.length);
  const pattern = new RegExp(sorted.map(escapeRegExp).join("|"), "g");
  const text = (value: string) =>
    value.length < MIN_REDACTED_LENGTH ? value : value.replace(pattern, REDACTED);

  const value = (input: unknown): unknown => {
    if (typeof input === "string") return text(input);
    if (typeof input === "number") return text(String(input)) === String(input) ? input : REDACTED;
    if (Array.isArray(input)) return input.map(value);
    if (typeof input === "object" && input !== null) {
      const copy: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(input)) copy[text(key)] = value(item);
      return copy;
    }
    return input;
  };

  return {
    empty: false,
    longestBytes: Math.max(...sorted.map((form) => new TextEncoder().encode(form).length)),
    text,
    cutText(cut) {
      const redacted = text(cut);
      for (const form of sorted) {
        for (
          let length = Math.min(form.length - 1, redacted.length);
          length >= MIN_PARTIAL_LENGTH;
          length--
        ) {
          if (redacted.endsWith(form.slice(0, length)))
            return `${redacted.slice(0, redacted.length - length)}${REDACTED}`;
        }
      }
      return redacted;
    },
    value,
    error(error) {
      if (typeof error === "string") return text(error);
      let current: unknown = error;
      // A few levels of causes: fetch wraps the network's error, which may wrap another.
      for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
        const clean = text(current.message);
        if (clean !== current.message) {
          current.message = clean;
          if (current.stack !== undefined) current.stack = text(current.stack);
        } else if (current.stack !== undefined && text(current.stack) !== current.stack) {
          current.stack = text(current.stack);
        }
        current = current.cause;
      }
      return error;
    },
  };
}

const NO_REDACTION: Redactor = {
  empty: true,
  longestBytes: 0,
  text: (text) => text,
  cutText: (text) => text,
  value: (value) => value,
  error: (error) => error,
};

/** UTF-8 text from base64 (atob and TextDecoder: the same in Node and a browser). */
function decodeBase64(text: string): string {
  try {
    return new TextDecoder().decode(Uint8Array.from(atob(text), (char) => char.charCodeAt(0)));
  } catch {
    return "";
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function escapeHtml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}
