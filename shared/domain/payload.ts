/**
 * Payloads as the store keeps them: opaque to it, never native DynamoDB maps or numbers. A value is
 * kept as its exact JSON text (json.ts) when small, or in the blob store (S3) under its execution's
 * prefix, content-addressed, with only a reference on the item. A `merge` output is an object whose
 * members are other payloads, so it passes references instead of copying large values.
 *
 * The stores call `encodeStoredPayload` / `decodeStoredPayload` and nothing else: this module owns
 * the stored form.
 */
export const PAYLOAD_LIMITS = {
  /** Largest execution input and node output, as exact JSON text (UTF-8). */
  maxBytes: 10 * 1024 * 1024,
  /** Deepest nesting of arrays and objects in an input, a params value or an output. */
  maxDepth: 512,
  /**
   * Values up to this size stay on their item; larger ones go to the blob store. Chosen from the
   * benchmark's sweep (`npm run bench -- --sweep`, bench/results/2026-11-24-payloads.md): an S3 PUT
   * costs as much as 8 write units, and inline values are paid for by their write, their children's
   * reads and their storage; at 30 days' retention the break-even is 5–6 KiB, and at 4 KiB inline
   * is the cheaper in every shape measured.
   */
  inlineBytes: 4 * 1024,
  /**
   * Largest stored form of a merge's object of payloads kept on its item (references to large
   * values and small values inline); a wider one is written whole to the blob store.
   */
  maxPartsBytes: 64 * 1024,
} as const;

/** Where a value in the blob store is, and how large it is. */
export interface BlobRef {
  /** `ex/<executionId>/<sha256>.json` (blobKey). */
  key: string;
  sha256: string;
  bytes: number;
}

export type Payload =
  /** The value's exact JSON text. */
  | { json: string }
  /** The value is the blob's text. */
  | { blob: BlobRef }
  /** An object whose members are payloads, in order. */
  | { parts: Array<[string, Payload]> };

export const NULL_PAYLOAD: Payload = { json: "null" };

/** Prefix of the values of executions in the blob store (expired with the execution retention). */
export const EXECUTION_BLOB_PREFIX = "ex/";

/** The blob store key of a value of an execution: content-addressed under the execution's prefix. */
export function blobKey(executionId: string, sha256: string): string {
  return `${EXECUTION_BLOB_PREFIX}${executionId}/${sha256}.json`;
}

/** Prefix of uploads (`POST /payloads`), which an execution's input is taken from. */
export const UPLOAD_PREFIX = "up/";

/** The JSON text of an object from its members' keys and JSON texts (joined, never parsed). */
export function objectJson(members: ReadonlyArray<readonly [string, string]>): string {
  return `{${members.map(([key, json]) => `${JSON.stringify(key)}:${json}`).join(",")}}`;
}

/** An object of payloads, inline when every member is inline. */
export function composePayload(parts: ReadonlyArray<readonly [string, Payload]>): Payload {
  const texts = parts.flatMap(([key, part]) => ("json" in part ? [[key, part.json] as const] : []));
  if (texts.length === parts.length) return { json: objectJson(texts) };
  return { parts: parts.map(([key, part]) => [key, part]) };
}

/** Bytes of the stored form (what the payload costs on its item). */
export function storedBytes(payload: Payload): number {
  return Buffer.byteLength(encodeStoredPayload(payload), "utf8");
}

/** Bytes of the value the payload stands for, once resolved. */
export function valueBytes(payload: Payload): number {
  if ("json" in payload) return Buffer.byteLength(payload.json, "utf8");
  if ("blob" in payload) return payload.blob.bytes;
  // `{` `}`, a `,` between members, and `"key":` for each.
  let bytes = 2 + Math.max(0, payload.parts.length - 1);
  for (const [key, part] of payload.parts)
    bytes += Buffer.byteLength(JSON.stringify(key), "utf8") + 1 + valueBytes(part);
  return bytes;
}

/** Every blob a payload refers to. */
export function blobsOf(payload: Payload): BlobRef[] {
  if ("json" in payload) return [];
  if ("blob" in payload) return [payload.blob];
  return payload.parts.flatMap(([, part]) => blobsOf(part));
}

// ── the stored form ─────────────────────────────────────────────────────────────────────────────
// Inline: "=" then the JSON text as it is (no escaping, the common case). Otherwise "~" then the
// payload as JSON.

export function encodeStoredPayload(payload: Payload): string {
  return "json" in payload ? `=${payload.json}` : `~${JSON.stringify(payload)}`;
}

export function decodeStoredPayload(stored: string): Payload {
  if (stored.startsWith("=")) return { json: stored.slice(1) };
  if (stored.startsWith("~")) return checkPayload(JSON.parse(stored.slice(1)) as unknown);
  throw new Error("a stored payload must start with '=' or '~'");
}

function checkPayload(value: unknown): Payload {
  if (typeof value === "object" && value !== null) {
    const record = value as Record<string, unknown>;
    if (typeof record.json === "string") return { json: record.json };
    const blob = record.blob as Partial<BlobRef> | undefined;
    if (typeof blob?.key === "string" && typeof blob.sha256 === "string" && typeof blob.bytes === "number")
      return { blob: { key: blob.key, sha256: blob.sha256, bytes: blob.bytes } };
    if (Array.isArray(record.parts))
      return {
        parts: record.parts.map((entry: unknown) => {
          if (!Array.isArray(entry) || typeof entry[0] !== "string")
            throw new Error("a stored payload's part must be [key, payload]");
          return [entry[0], checkPayload(entry[1])] as [string, Payload];
        }),
      };
  }
  throw new Error("not a stored payload");
}
