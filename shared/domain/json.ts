/**
 * Exact JSON: the one serializer of payloads (execution inputs, node outputs, views of them).
 *
 * `JSON.parse(encodeJson(v))` gives back `v` exactly for every value `JSON.parse` can yield, which
 * `JSON.stringify` does not: it writes -0 as 0 and the Infinity that `1e400` parses to as null. Here
 * -0 is written `-0` and ±Infinity `±1e400` (both valid JSON that parse back to the same double).
 * Keys such as `__proto__` or `""` are written as the own properties they are. Everything else
 * follows JSON.stringify (toJSON honoured; undefined, functions and symbols dropped from objects and
 * null in arrays; NaN is null, as no JSON text parses to it). An exact number (exact-numbers.ts, a
 * LosslessNumber) is written as its digits.
 *
 * The walk is iterative, so no nesting depth can overflow the stack; depth and size are checked as
 * it goes, so a value over a limit is refused before it is built in full.
 */

import { TerminalError } from "./errors.js";
import { isExactNumber } from "./exact-numbers.js";
import { endOfString } from "./json-scan.js";

/** Why a value cannot be stored as a payload. */
export type PayloadProblem = "PayloadTooLarge" | "PayloadTooDeep" | "PayloadNotJson" | "PayloadMissing";

/** A value that cannot be stored or found. Terminal: another attempt would meet the same problem. */
export class PayloadError extends TerminalError {
  declare readonly code: PayloadProblem;

  constructor(code: PayloadProblem, message: string) {
    super(message, { code });
  }
}

export interface EncodeLimits {
  /** Most UTF-8 bytes of the encoded text. */
  maxBytes: number;
  /** Most levels of arrays and objects (a scalar is 0, `[]` is 1). */
  maxDepth: number;
  /** What the value is, for the messages ("execution input", "output of node x"). */
  what: string;
}

type Frame =
  | { kind: "array"; value: readonly unknown[]; next: number }
  | { kind: "object"; value: Record<string, unknown>; keys: string[]; next: number; wrote: boolean };

/** The exact JSON text of `value`; throws PayloadError over a limit or for what JSON cannot hold. */
export function encodeJson(value: unknown, limits: EncodeLimits): string {
  const out: string[] = [];
  const stack: Frame[] = [];
  const open = new Set<object>();
  let units = 0;
  const write = (text: string) => {
    out.push(text);
    units += text.length;
    // A UTF-16 unit is at least one UTF-8 byte: over in units is over in bytes.
    if (units > limits.maxBytes) throw tooLarge(limits);
  };

  /** Writes a scalar, or opens a container (pushed on the stack); false when JSON drops the value. */
  const emit = (raw: unknown, key: string): boolean => {
    const value = toJsonValue(raw, key);
    switch (typeof value) {
      case "string":
        write(JSON.stringify(value));
        return true;
      case "number":
        write(numberText(value));
        return true;
      case "boolean":
        write(value ? "true" : "false");
        return true;
      case "bigint":
        throw new PayloadError(
          "PayloadNotJson",
          `${limits.what} holds a BigInt, which JSON cannot represent`,
        );
      case "undefined":
      case "function":
      case "symbol":
        return false;
    }
    if (value === null) {
      write("null");
      return true;
    }
    if (isExactNumber(value)) {
      // Its digits as they came in (exact-numbers.ts): a number, not an object.
      write(value.value);
      return true;
    }
    const container = value as object;
    if (open.has(container))
      throw new PayloadError("PayloadNotJson", `${limits.what} is circular: it contains itself`);
    if (stack.length + 1 > limits.maxDepth) throw tooDeep(limits);
    open.add(container);
    if (Array.isArray(container)) {
      write("[");
      stack.push({ kind: "array", value: container, next: 0 });
    } else {
      write("{");
      const record = container as Record<string, unknown>;
      stack.push({ kind: "object", value: record, keys: Object.keys(record), next: 0, wrote: false });
    }
    return true;
  };

  if (!emit(value, "")) write("null");
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    if (frame.kind === "array") {
      if (frame.next === frame.value.length) {
        write("]");
        close(frame.value);
        continue;
      }
      const index = frame.next++;
      if (index > 0) write(",");
      if (!emit(frame.value[index], String(index))) write("null");
      continue;
    }
    if (frame.next === frame.keys.length) {
      write("}");
      close(frame.value);
      continue;
    }
    const key = frame.keys[frame.next++]!;
    const member = toJsonValue(frame.value[key], key);
    if (member === undefined || typeof member === "function" || typeof member === "symbol") continue;
    write(`${frame.wrote ? "," : ""}${JSON.stringify(key)}:`);
    frame.wrote = true;
    emit(member, key);
  }
  const text = out.join("");
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > limits.maxBytes) throw tooLarge(limits, bytes);
  return text;

  function close(container: object): void {
    stack.pop();
    open.delete(container);
  }
}

/** `toJSON` applied once, as JSON.stringify does (a Date becomes its ISO string). */
function toJsonValue(value: unknown, key: string): unknown {
  if (typeof value === "object" && value !== null) {
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === "function") return (toJSON as (key: string) => unknown).call(value, key);
  }
  return value;
}

/** A number's exact JSON text (-0 and ±Infinity included, see the module comment). */
export function numberText(value: number): string {
  if (Number.isNaN(value)) return "null";
  if (value === Number.POSITIVE_INFINITY) return "1e400";
  if (value === Number.NEGATIVE_INFINITY) return "-1e400";
  if (Object.is(value, -0)) return "-0";
  return String(value);
}

function tooLarge(limits: EncodeLimits, bytes?: number): PayloadError {
  const size = bytes === undefined ? `more than ${limits.maxBytes} bytes` : `${bytes} bytes`;
  return new PayloadError(
    "PayloadTooLarge",
    `${limits.what} is ${size}; the limit is ${formatBytes(limits.maxBytes)} (${limits.maxBytes} bytes)`,
  );
}

function tooDeep(limits: EncodeLimits): PayloadError {
  return new PayloadError(
    "PayloadTooDeep",
    `${limits.what} nests arrays and objects more than ${limits.maxDepth} levels deep; the limit is ${limits.maxDepth}`,
  );
}

function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

/**
 * The deepest nesting of arrays and objects in a JSON text, found by one scan without parsing (so
 * a body nested 100,000 levels deep is measured before anything recursive could meet it). Stops
 * counting once `stopAbove` is passed. Brackets inside strings are skipped.
 */
export function jsonTextDepth(text: string, stopAbove = Number.POSITIVE_INFINITY): number {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) i = endOfString(text, i);
    else if (c === 0x5b || c === 0x7b) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > stopAbove) return deepest;
      }
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return deepest;
}
