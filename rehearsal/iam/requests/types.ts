/** What the request parsers take and give: an HTTP request to an AWS service, and its IAM checks. */
import type { AuthRequest } from "../policy.js";

export interface AwsHttpRequest {
  method: string;
  /** Path and query, as on the request line. */
  url: string;
  /** Lower-case header names. */
  headers: Readonly<Record<string, string | undefined>>;
  body: Buffer;
}

/** Where ARNs are computed: the account that owns every resource, and the partition. */
export interface ArnScope {
  account: string;
  partition?: string;
  /** Used when the request carries no signing region. */
  defaultRegion: string;
}

export type WireProtocol = "json" | "query" | "rest-xml";

export interface ParsedAwsRequest {
  service: string;
  /** The API operation, e.g. TransactWriteItems, SendMessageBatch, PutObject. */
  operation: string;
  protocol: WireProtocol;
  region: string;
  /** Every (action, resource) IAM checks for it; a transaction or batch gives several. */
  checks: AuthRequest[];
  /** A presigned request's expiry (epoch ms), checked by the proxy. */
  expiresAt?: number;
}

export class UnparseableRequestError extends Error {
  override readonly name = "UnparseableRequestError";
}

export function jsonBody(request: AwsHttpRequest): Record<string, unknown> {
  if (request.body.length === 0) return {};
  try {
    const parsed: unknown = JSON.parse(request.body.toString("utf8"));
    if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed))
      return parsed as Record<string, unknown>;
  } catch {
    // fall through
  }
  throw new UnparseableRequestError("the request body is not a JSON object");
}

export function partitionOf(scope: ArnScope): string {
  return scope.partition ?? "aws";
}
