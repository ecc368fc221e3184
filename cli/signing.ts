/**
 * SigV4 signing for the deployed, IAM-protected API (API Gateway HTTP API, service `execute-api`).
 * Credentials come from the standard AWS chain (environment, SSO, profiles, web identity, instance
 * metadata …) unless given; the local runtime is never signed unless asked to be.
 */
import type { SignatureV4 } from "@smithy/signature-v4";

export const SIGNING_SERVICE = "execute-api";

export interface SignableRequest {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body?: string;
}

/** Adds `authorization`, `x-amz-date` (and `x-amz-security-token`, `x-amz-content-sha256`) headers. */
export type RequestSigner = (request: SignableRequest) => Promise<Record<string, string>>;

/** Static credentials or a provider of them, as the signer takes them. */
export type SigningCredentials = ConstructorParameters<typeof SignatureV4>[0]["credentials"];

export interface SignerOptions {
  region: string;
  /** Static credentials or a provider; default the standard AWS credential chain. */
  credentials?: SigningCredentials;
  /** For tests: a fixed signing time. */
  signingDate?: Date;
}

/**
 * The signer loads the AWS SDK's signing and credential modules on its first request, not on import:
 * every `weft` command imports this module, and most talk to the local runtime, unsigned.
 */
export function createSigner(options: SignerOptions): RequestSigner {
  let loading: Promise<SignatureV4> | undefined;
  const load = async () => {
    const [{ defaultProvider }, { Hash }, { SignatureV4 }] = await Promise.all([
      import("@aws-sdk/credential-provider-node"),
      import("@smithy/hash-node"),
      import("@smithy/signature-v4"),
    ]);
    return new SignatureV4({
      service: SIGNING_SERVICE,
      region: options.region,
      credentials: options.credentials ?? defaultProvider(),
      sha256: Hash.bind(null, "sha256"),
    });
  };
  return async ({ method, url, headers, body }) => {
    loading ??= load();
    const signer = await loading;
    const query: Record<string, string | string[]> = {};
    for (const [key, value] of url.searchParams) {
      const existing = query[key];
      query[key] =
        existing === undefined ? value : [...(Array.isArray(existing) ? existing : [existing]), value];
    }
    const signed = await signer.sign(
      {
        method,
        protocol: url.protocol,
        hostname: url.hostname,
        ...(url.port === "" ? {} : { port: Number(url.port) }),
        // The path exactly as it goes on the wire (already percent-encoded); SigV4 encodes it once more.
        path: url.pathname,
        query,
        headers: { ...headers, host: url.host },
        ...(body === undefined ? {} : { body }),
      },
      options.signingDate === undefined ? {} : { signingDate: options.signingDate },
    );
    const out: Record<string, string> = {};
    for (const [key, value] of Object.entries(signed.headers)) {
      // fetch sets Host itself and refuses to be told.
      if (key.toLowerCase() !== "host") out[key] = value;
    }
    return out;
  };
}

/** True for the local runtime's addresses: localhost, 127.0.0.0/8, ::1. */
export function isLoopback(url: URL): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase();
  return (
    host === "localhost" ||
    host.endsWith(".localhost") ||
    host === "::1" ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)
  );
}

/** `abc123.execute-api.eu-west-1.amazonaws.com` → `eu-west-1`. */
export function regionFromHost(hostname: string): string | undefined {
  return /\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$/i.exec(hostname)?.[1];
}

/**
 * The region to sign for: `--region`, else the one in an execute-api hostname, else AWS_REGION /
 * AWS_DEFAULT_REGION. Undefined when none says (a custom domain and no region configured).
 */
export function resolveSigningRegion(
  url: URL,
  explicit: string | undefined,
  env: Record<string, string | undefined>,
): string | undefined {
  const nonEmpty = (value: string | undefined) => (value === undefined || value === "" ? undefined : value);
  return (
    nonEmpty(explicit) ??
    regionFromHost(url.hostname) ??
    nonEmpty(env.AWS_REGION) ??
    nonEmpty(env.AWS_DEFAULT_REGION)
  );
}
