/**
 * The BlobStore port in memory, for `npm start`, the simulation and tests. Presigned requests point
 * at whatever HTTP server serves `serveRequest` (the local runtime mounts it at `/_blobs/`), signed
 * with an HMAC of the key, method, size and expiry under a secret of this store, so only the
 * requests it handed out are honoured, as with S3.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { BlobStore, PresignedRequest } from "../../ports.js";

export const MEMORY_BLOB_PATH = "/_blobs/";

export interface MemoryBlobStoreOptions {
  /** Base URL of the server that mounts `serveRequest` (e.g. http://127.0.0.1:3000); set once it listens. */
  baseUrl?: string;
  /** Epoch ms now, for the expiry of presigned requests. */
  now?: () => number;
}

export interface BlobHttpAnswer {
  status: number;
  body?: string;
}

export class MemoryBlobStore implements BlobStore {
  private readonly blobs = new Map<string, string>();
  private readonly secret = randomBytes(32);
  baseUrl: string | undefined;
  private readonly now: () => number;

  constructor(options: MemoryBlobStoreOptions = {}) {
    this.baseUrl = options.baseUrl;
    this.now = options.now ?? Date.now;
  }

  async put(key: string, text: string): Promise<void> {
    this.blobs.set(key, text);
  }

  async get(key: string): Promise<string | undefined> {
    return this.blobs.get(key);
  }

  async size(key: string): Promise<number | undefined> {
    const text = this.blobs.get(key);
    return text === undefined ? undefined : Buffer.byteLength(text, "utf8");
  }

  /** How many blobs are stored (tests, benchmark). */
  get count(): number {
    return this.blobs.size;
  }

  async uploadRequest(
    key: string,
    bytes: number,
    expiresInSeconds: number,
  ): Promise<PresignedRequest | undefined> {
    if (this.baseUrl === undefined) return undefined;
    return {
      url: this.signedUrl(this.baseUrl, "PUT", key, bytes, expiresInSeconds),
      method: "PUT",
      headers: { "content-length": String(bytes), "content-type": "application/json" },
    };
  }

  async downloadRequest(key: string, expiresInSeconds: number): Promise<PresignedRequest | undefined> {
    if (this.baseUrl === undefined) return undefined;
    const url = this.signedUrl(this.baseUrl, "GET", key, -1, expiresInSeconds);
    return { url, method: "GET", headers: {} };
  }

  /** Answers a presigned request (`path` and `query` from the URL this store handed out). */
  async serveRequest(
    method: string,
    path: string,
    query: URLSearchParams,
    body: Buffer | undefined,
  ): Promise<BlobHttpAnswer> {
    if (!path.startsWith(MEMORY_BLOB_PATH)) return { status: 404 };
    const key = decodeURIComponent(path.slice(MEMORY_BLOB_PATH.length));
    const expires = Number(query.get("expires"));
    const bytes = method === "PUT" ? (body?.byteLength ?? 0) : -1;
    const given = Buffer.from(query.get("signature") ?? "", "hex");
    const wanted = this.signature(method, key, bytes, expires);
    if (given.length !== wanted.length || !timingSafeEqual(given, wanted) || !(expires > this.now()))
      return { status: 403, body: "the request's signature is invalid or has expired" };
    if (method === "GET") {
      const text = this.blobs.get(key);
      return text === undefined ? { status: 404 } : { status: 200, body: text };
    }
    this.blobs.set(key, (body ?? Buffer.alloc(0)).toString("utf8"));
    return { status: 200 };
  }

  private signedUrl(
    base: string,
    method: string,
    key: string,
    bytes: number,
    expiresInSeconds: number,
  ): string {
    const expires = this.now() + expiresInSeconds * 1000;
    const signature = this.signature(method, key, bytes, expires).toString("hex");
    return `${base.replace(/\/$/, "")}${MEMORY_BLOB_PATH}${encodeURIComponent(key)}?expires=${expires}&signature=${signature}`;
  }

  private signature(method: string, key: string, bytes: number, expires: number): Buffer {
    return createHmac("sha256", this.secret).update(`${method}\n${key}\n${bytes}\n${expires}`).digest();
  }
}
