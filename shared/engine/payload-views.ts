/**
 * Payloads in responses: inline values as they are; values kept in the blob store either fetched
 * and inlined (while the response stays under its budget: a Lambda response carries 6 MB) or
 * shown as a reference with a download URL.
 */
import { parseExact } from "../domain/exact-numbers.js";
import { type Payload, valueBytes } from "../domain/payload.js";
import type { EngineContext } from "./context.js";

export interface ViewOptions {
  /** Fetch and inline values kept in the blob store, while the values inlined stay under `maxBytes`. */
  resolve: boolean;
  /** Most bytes of values one response inlines. */
  maxBytes: number;
  /** Add the modeled cost of the execution's records so far (execution-cost.ts). */
  cost?: boolean;
}

/** How long a download URL in a view stays valid. */
export const DOWNLOAD_URL_SECONDS = 900;

/** A value left out of a response, and where to get it. */
export type PayloadReference =
  | { sha256: string; bytes: number; url?: string }
  | { bytes: number; parts: Record<string, { value: unknown } | { ref: PayloadReference }> };

export type RenderedPayload = { value: unknown } | { ref: PayloadReference };

/** Renders the payloads of one response against one budget, in the order they are asked for. */
export class PayloadRenderer {
  private remaining: number;

  constructor(
    private readonly ctx: EngineContext,
    private readonly options: ViewOptions,
  ) {
    this.remaining = options.maxBytes;
  }

  async render(payload: Payload): Promise<RenderedPayload> {
    if ("json" in payload) {
      // Small by construction (payload.ts): always shown, but counted.
      this.remaining -= payload.json.length;
      return { value: parseExact(payload.json) };
    }
    const bytes = valueBytes(payload);
    if (this.options.resolve && bytes <= this.remaining) {
      this.remaining -= bytes;
      return { value: await this.ctx.payloads.load(payload) };
    }
    return { ref: await this.reference(payload) };
  }

  private async reference(payload: Payload): Promise<PayloadReference> {
    if ("blob" in payload) {
      const { key, sha256, bytes } = payload.blob;
      const download = await this.ctx.blobs.downloadRequest(key, DOWNLOAD_URL_SECONDS);
      return download === undefined ? { sha256, bytes } : { sha256, bytes, url: download.url };
    }
    if ("json" in payload) throw new Error("an inline payload is never a reference");
    const parts = await Promise.all(
      payload.parts.map(async ([key, part]) => [key, await this.render(part)] as const),
    );
    return { bytes: valueBytes(payload), parts: Object.fromEntries(parts) };
  }
}
