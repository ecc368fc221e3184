/**
 * What API Gateway's IAM authorizer checks first: a SigV4 signature for `execute-api`, made with
 * known credentials, that matches the request. (The caller's execute-api:Invoke permission is
 * outside the stack; the rehearsal's caller is allowed.) Verified by signing the request again with
 * the same date and signed headers and comparing.
 */
import { Hash } from "@smithy/hash-node";
import { SignatureV4 } from "@smithy/signature-v4";

export interface SignedRequest {
  method: string;
  /** Path and query as on the request line. */
  url: string;
  host: string;
  headers: Readonly<Record<string, string | string[] | undefined>>;
  body: Buffer;
}

export interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** undefined when the signature is good, else why API Gateway would answer 403. */
export async function verifySigV4(
  request: SignedRequest,
  region: string,
  credentials: Credentials,
): Promise<string | undefined> {
  const header = (name: string) => {
    const value = request.headers[name];
    return Array.isArray(value) ? value.join(",") : value;
  };
  const authorization = header("authorization");
  if (!authorization) return "Missing Authentication Token";
  const match = /^AWS4-HMAC-SHA256 Credential=([^,]+), ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]+)$/.exec(
    authorization,
  );
  if (!match) return "Authorization header requires 'Credential', 'SignedHeaders' and 'Signature'";
  const [, credential = "", signedHeaders = "", signature = ""] = match;
  const [accessKey, , scopeRegion, service] = credential.split("/");
  if (accessKey !== credentials.accessKeyId) return "The security token included in the request is invalid.";
  if (service !== "execute-api" || scopeRegion !== region)
    return `Credential should be scoped to ${region}/execute-api`;
  const date = header("x-amz-date");
  if (!date) return "Missing X-Amz-Date";
  const when = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(date);
  if (!when) return "X-Amz-Date is not a SigV4 date";
  const [, y, mo, d, h, mi, s] = when.map(Number) as number[];
  const signingDate = new Date(Date.UTC(y!, mo! - 1, d!, h!, mi!, s!));
  if (Math.abs(Date.now() - signingDate.getTime()) > 5 * 60_000) return "Signature expired";

  const url = new URL(request.url, `http://${request.host}`);
  const headers: Record<string, string> = {};
  for (const name of signedHeaders.split(";")) {
    if (name === "x-amz-date" || name === "x-amz-security-token") continue;
    const value = name === "host" ? request.host : header(name);
    if (value !== undefined) headers[name] = value;
  }
  const query: Record<string, string | string[]> = {};
  for (const [key, value] of url.searchParams) {
    const existing = query[key];
    query[key] =
      existing === undefined ? value : [...(Array.isArray(existing) ? existing : [existing]), value];
  }
  const signer = new SignatureV4({
    service: "execute-api",
    region,
    credentials,
    sha256: Hash.bind(null, "sha256"),
  });
  const resigned = await signer.sign(
    {
      method: request.method.toUpperCase(),
      protocol: "http:",
      hostname: url.hostname,
      ...(url.port === "" ? {} : { port: Number(url.port) }),
      path: url.pathname,
      query,
      headers,
      ...(request.body.length > 0 ? { body: request.body.toString("utf8") } : {}),
    },
    { signingDate },
  );
  const expected = /Signature=([0-9a-f]+)/.exec(String(resigned.headers.authorization))?.[1];
  return expected === signature
    ? undefined
    : "The request signature we calculated does not match the signature you provided.";
}
