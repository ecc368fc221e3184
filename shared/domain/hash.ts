/**
 * Content hashing of definitions: registering the same content twice must give the same version,
 * whatever order the user's JSON serializer wrote the keys in.
 */
import { createHash } from "node:crypto";
import type { WorkflowDefinition } from "./definition.js";
import { isExactNumber } from "./exact-numbers.js";
import { numberText } from "./json.js";

/**
 * JSON with object keys sorted (recursively); arrays keep their order. Numbers are exact (json.ts:
 * -0 and ±Infinity keep their own text, so definitions that differ there are different content).
 * Otherwise it follows JSON.stringify: `undefined`, functions and symbols are dropped from objects
 * and become null in arrays, `toJSON` is honoured. A top-level `undefined` gives "null". Recursive:
 * request bodies are measured for nesting before they get here.
 */
export function canonicalJson(value: unknown): string {
  return write(value, new Set()) ?? "null";
}

export function definitionHash(definition: WorkflowDefinition): string {
  return createHash("sha256").update(canonicalJson(definition), "utf8").digest("hex");
}

/** Returns undefined for values JSON has no representation for, so the caller can drop them. */
function write(input: unknown, seen: Set<object>): string | undefined {
  let value = input;
  if (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { toJSON?: unknown }).toJSON === "function"
  ) {
    value = (value as { toJSON: () => unknown }).toJSON();
  }
  if (typeof value === "number") return numberText(value);
  // An exact number (exact-numbers.ts) is its digits, so big numbers in params hash as written.
  if (isExactNumber(value)) return value.value;
  if (value === null || typeof value !== "object") {
    // bigint throws here, as it does in JSON.stringify.
    return JSON.stringify(value) as string | undefined;
  }
  if (seen.has(value)) throw new TypeError("canonicalJson: circular structure");
  seen.add(value);
  let out: string;
  if (Array.isArray(value)) {
    out = `[${value.map((item) => write(item, seen) ?? "null").join(",")}]`;
  } else {
    const members: string[] = [];
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record).sort()) {
      const member = write(record[key], seen);
      if (member !== undefined) members.push(`${JSON.stringify(key)}:${member}`);
    }
    out = `{${members.join(",")}}`;
  }
  seen.delete(value);
  return out;
}
