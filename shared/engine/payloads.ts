/**
 * The engine's side of payloads (domain/payload.ts): turning values into what the store keeps —
 * limits checked, large values written once to the blob store — and back into values for
 * handlers and views. Blob texts are cached (they never change: keys are content addresses), so
 * a worker container fetches each at most once while it stays in the cache, and a value it wrote
 * is not written again.
 */
import { createHash } from "node:crypto";
import { parseExact } from "../domain/exact-numbers.js";
import { encodeJson, PayloadError } from "../domain/json.js";
import {
  type BlobRef,
  blobKey,
  composePayload,
  encodeStoredPayload,
  objectJson,
  PAYLOAD_LIMITS,
  type Payload,
} from "../domain/payload.js";
import type { BlobStore } from "../ports.js";

export interface PayloadSettings {
  /** Values up to this many bytes stay on their item. */
  inlineBytes: number;
  maxBytes: number;
  maxDepth: number;
  /** Largest stored form of a merge's object of payloads kept on its item. */
  maxPartsBytes: number;
}

export const DEFAULT_PAYLOAD_SETTINGS: PayloadSettings = {
  inlineBytes: PAYLOAD_LIMITS.inlineBytes,
  maxBytes: PAYLOAD_LIMITS.maxBytes,
  maxDepth: PAYLOAD_LIMITS.maxDepth,
  maxPartsBytes: PAYLOAD_LIMITS.maxPartsBytes,
};

/** Blob texts by key, least recently used evicted beyond `capacityBytes` (UTF-16 units, roughly). */
class TextCache {
  private readonly texts = new Map<string, string>();
  private size = 0;

  constructor(private readonly capacityUnits: number) {}

  get(key: string): string | undefined {
    const text = this.texts.get(key);
    if (text !== undefined) {
      this.texts.delete(key);
      this.texts.set(key, text);
    }
    return text;
  }

  set(key: string, text: string): void {
    if (text.length > this.capacityUnits) return;
    const previous = this.texts.get(key);
    if (previous !== undefined) {
      this.texts.delete(key);
      this.size -= previous.length;
    }
    this.texts.set(key, text);
    this.size += text.length;
    for (const [oldKey, oldText] of this.texts) {
      if (this.size <= this.capacityUnits) break;
      this.texts.delete(oldKey);
      this.size -= oldText.length;
    }
  }
}

const CACHE_UNITS = 32 * 1024 * 1024;

export class Payloads {
  private readonly cache = new TextCache(CACHE_UNITS);

  constructor(
    private readonly blobs: BlobStore,
    readonly settings: PayloadSettings = DEFAULT_PAYLOAD_SETTINGS,
  ) {}

  /** `value` as an execution keeps it. Throws PayloadError over a limit or for what JSON cannot hold. */
  async save(executionId: string, value: unknown, what: string): Promise<Payload> {
    const json = encodeJson(value === undefined ? null : value, {
      maxBytes: this.settings.maxBytes,
      maxDepth: this.settings.maxDepth,
      what,
    });
    return this.saveJson(executionId, json);
  }

  /** Exact JSON text (from encodeJson) as an execution keeps it: inline when small, else a blob. */
  async saveJson(executionId: string, json: string): Promise<Payload> {
    const bytes = Buffer.byteLength(json, "utf8");
    if (bytes <= this.settings.inlineBytes) return { json };
    const sha256 = createHash("sha256").update(json, "utf8").digest("hex");
    const key = blobKey(executionId, sha256);
    if (this.cache.get(key) === undefined) await this.blobs.put(key, json);
    this.cache.set(key, json);
    return { blob: { key, sha256, bytes } };
  }

  /**
   * Another execution's value kept as this one's: its exact text saved under `executionId` (a
   * child's output becoming its parent node's), so it never depends on the other execution's
   * records or blobs, nor on their retention. Throws PayloadError over the limit of a value.
   */
  async adopt(executionId: string, payload: Payload, what: string): Promise<Payload> {
    const text = await this.text(payload);
    if (Buffer.byteLength(text, "utf8") > this.settings.maxBytes) throw this.tooLarge(what);
    return this.saveJson(executionId, text);
  }

  /**
   * An object of payloads (a merge's output) without fetching any: small values are joined inline,
   * large ones stay references. Only an object too wide to keep even so is written whole.
   */
  async compose(
    executionId: string,
    parts: ReadonlyArray<readonly [string, Payload]>,
    what: string,
  ): Promise<Payload> {
    const composed = composePayload(parts);
    if ("json" in composed) {
      if (Buffer.byteLength(composed.json, "utf8") > this.settings.maxBytes) throw this.tooLarge(what);
      return this.saveJson(executionId, composed.json);
    }
    if (Buffer.byteLength(encodeStoredPayload(composed), "utf8") <= this.settings.maxPartsBytes)
      return composed;
    const text = await this.text(composed);
    if (Buffer.byteLength(text, "utf8") > this.settings.maxBytes) throw this.tooLarge(what);
    return this.saveJson(executionId, text);
  }

  /** The value a payload stands for (parsed anew each time: callers may change what they get). */
  async load(payload: Payload): Promise<unknown> {
    // Exact numbers (exact-numbers.ts): digits a double would lose come back as they were stored.
    return parseExact(await this.text(payload));
  }

  /** The exact JSON text a payload stands for. */
  async text(payload: Payload): Promise<string> {
    if ("json" in payload) return payload.json;
    if ("blob" in payload) return this.blobText(payload.blob);
    const members = await Promise.all(
      payload.parts.map(async ([key, part]) => [key, await this.text(part)] as const),
    );
    return objectJson(members);
  }

  private async blobText(ref: BlobRef): Promise<string> {
    const cached = this.cache.get(ref.key);
    if (cached !== undefined) return cached;
    const text = await this.blobs.get(ref.key);
    if (text === undefined)
      throw new PayloadError(
        "PayloadMissing",
        `the stored value ${ref.sha256} (${ref.bytes} bytes) is no longer in the blob store`,
      );
    this.cache.set(ref.key, text);
    return text;
  }

  private tooLarge(what: string): PayloadError {
    return new PayloadError(
      "PayloadTooLarge",
      `${what} is larger than ${this.settings.maxBytes} bytes, the limit of a value`,
    );
  }
}
