/**
 * The BlobStore port on one S3 bucket. Keys are content addresses (payload.ts), so a repeated PUT
 * of a key writes the same bytes and is harmless. Presigned requests let clients move payloads
 * larger than a Lambda invocation carries (6 MB) straight to and from the bucket.
 */
import { GetObjectCommand, HeadObjectCommand, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import type { BlobStore, PresignedRequest } from "../../ports.js";

const CONTENT_TYPE = "application/json";

export class S3BlobStore implements BlobStore {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
  ) {}

  async put(key: string, text: string): Promise<void> {
    await this.client.send(
      new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: text, ContentType: CONTENT_TYPE }),
    );
  }

  async get(key: string): Promise<string | undefined> {
    try {
      const result = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      return (await result.Body?.transformToString("utf-8")) ?? "";
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  async size(key: string): Promise<number | undefined> {
    try {
      const result = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return result.ContentLength ?? 0;
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  async uploadRequest(key: string, bytes: number, expiresInSeconds: number): Promise<PresignedRequest> {
    const command = new PutObjectCommand({
      Bucket: this.bucket,
      Key: key,
      ContentLength: bytes,
      ContentType: CONTENT_TYPE,
    });
    // Content-Length is signed: the URL stores exactly the size the client announced, no more.
    const url = await getSignedUrl(this.client, command, {
      expiresIn: expiresInSeconds,
      signableHeaders: new Set(["content-length", "content-type"]),
    });
    return {
      url,
      method: "PUT",
      headers: { "content-length": String(bytes), "content-type": CONTENT_TYPE },
    };
  }

  async downloadRequest(key: string, expiresInSeconds: number): Promise<PresignedRequest> {
    const url = await getSignedUrl(this.client, new GetObjectCommand({ Bucket: this.bucket, Key: key }), {
      expiresIn: expiresInSeconds,
    });
    return { url, method: "GET", headers: {} };
  }
}

function isMissing(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  return error.name === "NoSuchKey" || error.name === "NotFound" || status === 404;
}
