/**
 * S3 (REST): the action from the method, whether a key is named, and the sub-resource in the query
 * string; the bucket from the path (path-style, what SDKs use with a custom endpoint) or the host
 * (virtual-hosted style). Presigned requests are the same requests with their signature in the
 * query string. HeadObject is authorized as s3:GetObject and HeadBucket as s3:ListBucket, as S3
 * does; listing carries `s3:prefix` (and delimiter, max-keys) as condition keys.
 */
import type { AuthRequest } from "../policy.js";
import type { ArnScope, AwsHttpRequest } from "./types.js";
import { partitionOf, UnparseableRequestError } from "./types.js";

export interface S3Target {
  bucket?: string;
  key?: string;
}

/** The bucket of a virtual-hosted request (`bucket.s3.amazonaws.com`, `bucket.s3.localhost.localstack.cloud`). */
export function virtualHostBucket(host: string | undefined): string | undefined {
  const name = (host ?? "").replace(/:\d+$/, "").toLowerCase();
  const match = /^(.+?)\.s3[.-]/.exec(name);
  return match?.[1];
}

export function s3Target(request: AwsHttpRequest): S3Target {
  const path = new URL(request.url, "http://s3.invalid").pathname;
  const decode = (text: string) => {
    try {
      return decodeURIComponent(text);
    } catch {
      throw new UnparseableRequestError(`an S3 path that is not valid percent-encoding: ${text}`);
    }
  };
  const hosted = virtualHostBucket(request.headers.host);
  if (hosted) {
    const key = path.replace(/^\//, "");
    return key === "" ? { bucket: hosted } : { bucket: hosted, key: decode(key) };
  }
  const match = /^\/([^/]+)(?:\/(.*))?$/s.exec(path);
  if (!match) return {};
  const bucket = decode(match[1] ?? "");
  const key = match[2];
  return key === undefined || key === "" ? { bucket } : { bucket, key: decode(key) };
}

const BUCKET_GET: Array<[string, string]> = [
  ["location", "GetBucketLocation"],
  ["versions", "ListBucketVersions"],
  ["uploads", "ListBucketMultipartUploads"],
  ["lifecycle", "GetLifecycleConfiguration"],
  ["policy", "GetBucketPolicy"],
  ["acl", "GetBucketAcl"],
  ["encryption", "GetEncryptionConfiguration"],
  ["tagging", "GetBucketTagging"],
  ["versioning", "GetBucketVersioning"],
  ["publicAccessBlock", "GetBucketPublicAccessBlock"],
  ["ownershipControls", "GetBucketOwnershipControls"],
  ["cors", "GetBucketCORS"],
  ["notification", "GetBucketNotification"],
];
const BUCKET_PUT: Array<[string, string]> = [
  ["lifecycle", "PutLifecycleConfiguration"],
  ["policy", "PutBucketPolicy"],
  ["acl", "PutBucketAcl"],
  ["encryption", "PutEncryptionConfiguration"],
  ["tagging", "PutBucketTagging"],
  ["versioning", "PutBucketVersioning"],
  ["publicAccessBlock", "PutBucketPublicAccessBlock"],
  ["ownershipControls", "PutBucketOwnershipControls"],
  ["cors", "PutBucketCORS"],
  ["notification", "PutBucketNotification"],
];
const BUCKET_DELETE: Array<[string, string]> = [
  ["lifecycle", "PutLifecycleConfiguration"],
  ["policy", "DeleteBucketPolicy"],
  ["encryption", "PutEncryptionConfiguration"],
  ["tagging", "PutBucketTagging"],
  ["publicAccessBlock", "PutBucketPublicAccessBlock"],
  ["ownershipControls", "PutBucketOwnershipControls"],
  ["cors", "PutBucketCORS"],
];

function bySubresource(table: Array<[string, string]>, query: URLSearchParams): string | undefined {
  return table.find(([name]) => query.has(name))?.[1];
}

export interface S3Operation {
  operation: string;
  checks: AuthRequest[];
}

export function s3Checks(request: AwsHttpRequest, scope: ArnScope): S3Operation {
  const partition = partitionOf(scope);
  const query = new URL(request.url, "http://s3.invalid").searchParams;
  const method = request.method.toUpperCase();
  const { bucket, key } = s3Target(request);
  const one = (
    operation: string,
    action: string,
    resource: string,
    context?: Record<string, string | undefined>,
  ) => ({
    operation,
    checks: [{ action: `s3:${action}`, resource, ...(context ? { context } : {}) }],
  });
  if (!bucket) {
    if (method === "GET") return one("ListBuckets", "ListAllMyBuckets", "*");
    throw new UnparseableRequestError(`S3 ${method} / names no bucket`);
  }
  const bucketArn = `arn:${partition}:s3:::${bucket}`;
  if (key === undefined) {
    switch (method) {
      case "GET": {
        const sub = bySubresource(BUCKET_GET, query);
        if (sub) return one(sub, sub, bucketArn);
        const context = {
          "s3:prefix": query.get("prefix") ?? undefined,
          "s3:delimiter": query.get("delimiter") ?? undefined,
          "s3:max-keys": query.get("max-keys") ?? undefined,
        };
        return one(
          query.get("list-type") === "2" ? "ListObjectsV2" : "ListObjects",
          "ListBucket",
          bucketArn,
          context,
        );
      }
      case "HEAD":
        return one("HeadBucket", "ListBucket", bucketArn);
      case "PUT": {
        const sub = bySubresource(BUCKET_PUT, query);
        return sub ? one(sub, sub, bucketArn) : one("CreateBucket", "CreateBucket", bucketArn);
      }
      case "DELETE": {
        const sub = bySubresource(BUCKET_DELETE, query);
        return sub ? one(`Delete:${sub}`, sub, bucketArn) : one("DeleteBucket", "DeleteBucket", bucketArn);
      }
      case "POST": {
        if (query.has("delete")) {
          const keys = [...request.body.toString("utf8").matchAll(/<Key>([\s\S]*?)<\/Key>/g)].map((m) =>
            unescapeXml(m[1] ?? ""),
          );
          return {
            operation: "DeleteObjects",
            checks: keys.map((k) => ({ action: "s3:DeleteObject", resource: `${bucketArn}/${k}` })),
          };
        }
        throw new UnparseableRequestError("S3 POST on a bucket other than ?delete");
      }
      default:
        throw new UnparseableRequestError(`S3 ${method} on a bucket`);
    }
  }
  const objectArn = `${bucketArn}/${key}`;
  switch (method) {
    case "GET":
      if (query.has("uploadId")) return one("ListParts", "ListMultipartUploadParts", objectArn);
      if (query.has("tagging")) return one("GetObjectTagging", "GetObjectTagging", objectArn);
      if (query.has("acl")) return one("GetObjectAcl", "GetObjectAcl", objectArn);
      if (query.has("versionId")) return one("GetObject", "GetObjectVersion", objectArn);
      return one("GetObject", "GetObject", objectArn);
    case "HEAD":
      return one("HeadObject", query.has("versionId") ? "GetObjectVersion" : "GetObject", objectArn);
    case "PUT": {
      if (query.has("tagging")) return one("PutObjectTagging", "PutObjectTagging", objectArn);
      if (query.has("acl")) return one("PutObjectAcl", "PutObjectAcl", objectArn);
      const copySource = request.headers["x-amz-copy-source"];
      const operation = query.has("partNumber")
        ? copySource
          ? "UploadPartCopy"
          : "UploadPart"
        : copySource
          ? "CopyObject"
          : "PutObject";
      const checks: AuthRequest[] = [{ action: "s3:PutObject", resource: objectArn }];
      if (copySource) {
        const source = decodeURIComponent(copySource.split("?")[0] ?? "").replace(/^\//, "");
        checks.push({ action: "s3:GetObject", resource: `arn:${partition}:s3:::${source}` });
      }
      return { operation, checks };
    }
    case "POST":
      if (query.has("uploads")) return one("CreateMultipartUpload", "PutObject", objectArn);
      if (query.has("uploadId")) return one("CompleteMultipartUpload", "PutObject", objectArn);
      if (query.has("restore")) return one("RestoreObject", "RestoreObject", objectArn);
      throw new UnparseableRequestError("S3 POST on an object");
    case "DELETE":
      if (query.has("uploadId")) return one("AbortMultipartUpload", "AbortMultipartUpload", objectArn);
      if (query.has("tagging")) return one("DeleteObjectTagging", "DeleteObjectTagging", objectArn);
      return one("DeleteObject", query.has("versionId") ? "DeleteObjectVersion" : "DeleteObject", objectArn);
    default:
      throw new UnparseableRequestError(`S3 ${method} on an object`);
  }
}

function unescapeXml(text: string): string {
  return text
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, "&");
}

/** A presigned request's expiry from X-Amz-Date and X-Amz-Expires, if it is one. */
export function presignedExpiry(request: AwsHttpRequest): number | undefined {
  const query = new URL(request.url, "http://s3.invalid").searchParams;
  const date = query.get("X-Amz-Date");
  const expires = query.get("X-Amz-Expires");
  if (!date || !expires) return undefined;
  const match = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(date);
  if (!match) throw new UnparseableRequestError(`X-Amz-Date ${date} is not a SigV4 date`);
  const [, y, mo, d, h, mi, s] = match.map(Number) as number[];
  return Date.UTC(y!, mo! - 1, d!, h!, mi!, s!) + Number(expires) * 1000;
}
