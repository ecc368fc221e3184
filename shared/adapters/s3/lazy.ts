/**
 * A BlobStore made on first use. The deployed functions keep payloads inline up to the inline
 * threshold and touch S3 only above it, so they load the S3 client (about 140 KB of bundle with its
 * checksums and presigner) by `import()` when the first blob is read or written, not at a cold start.
 * A failed load is not kept: the next call tries again.
 */
import type { BlobStore, PresignedRequest } from "../../ports.js";

export class LazyBlobStore implements BlobStore {
  private loading: Promise<BlobStore> | undefined;

  constructor(private readonly load: () => Promise<BlobStore>) {}

  private store(): Promise<BlobStore> {
    this.loading ??= this.load().catch((error: unknown) => {
      this.loading = undefined;
      throw error;
    });
    return this.loading;
  }

  async put(key: string, text: string): Promise<void> {
    return (await this.store()).put(key, text);
  }

  async get(key: string): Promise<string | undefined> {
    return (await this.store()).get(key);
  }

  async size(key: string): Promise<number | undefined> {
    return (await this.store()).size(key);
  }

  async uploadRequest(
    key: string,
    bytes: number,
    expiresInSeconds: number,
  ): Promise<PresignedRequest | undefined> {
    return (await this.store()).uploadRequest(key, bytes, expiresInSeconds);
  }

  async downloadRequest(key: string, expiresInSeconds: number): Promise<PresignedRequest | undefined> {
    return (await this.store()).downloadRequest(key, expiresInSeconds);
  }
}
