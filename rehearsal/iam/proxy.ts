/**
 * The IAM-enforcing endpoint one function's AWS SDK talks to (its AWS_ENDPOINT_URL): a loopback HTTP
 * server that parses every request into IAM checks, evaluates them against the function's role,
 * answers AccessDenied in the service's own format when refused (recorded as a denial, which fails
 * the rehearsal), and forwards every allowed request to the emulator unchanged.
 *
 * One S3 rule is modelled on top: a GetObject or HeadObject of a missing key is a 404 only for a
 * caller that may s3:ListBucket the bucket (with the key as s3:prefix); anyone else gets 403.
 */
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Faults } from "../faults.js";
import { accessDenied } from "./errors.js";
import type { GrantLedger } from "./ledger.js";
import { type AuthRequest, evaluate, type Grant } from "./policy.js";
import {
  type ArnScope,
  type AwsHttpRequest,
  accessKeyOf,
  type ParsedAwsRequest,
  parseAwsRequest,
} from "./requests/index.js";
import { s3Target } from "./requests/s3.js";
import type { RolePolicies } from "./roles.js";

export interface IamProxyOptions {
  /** Whose grants these are (the function), and who calls (the handler, or the event source mapping). */
  principal: string;
  caller: string;
  policies: RolePolicies;
  ledger: GrantLedger;
  /** The emulator every allowed request goes to. */
  upstream: string;
  scope: ArnScope;
  /** Called with a one-line description of each refused call (no payloads). */
  onDenied?: (line: string) => void;
  /** Crashes a scenario asked for, and how to kill the environment that signed with an access key. */
  faults?: Faults;
  crash?: (accessKeyId: string) => void;
}

export interface IamProxy {
  url: string;
  stop(): Promise<void>;
}

const MAX_BODY_BYTES = 64 * 1024 * 1024;
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "transfer-encoding",
  "expect",
  "upgrade",
  "proxy-connection",
]);

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new Error("request body too large for the rehearsal proxy"));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function flatHeaders(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : value;
  }
  return headers;
}

interface Upstream {
  status: number;
  headers: Record<string, string | string[]>;
  body: Buffer;
}

function forward(upstream: URL, req: AwsHttpRequest): Promise<Upstream> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
  }
  headers.host = upstream.host;
  headers["content-length"] = String(req.body.length);
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      { hostname: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          const out: Record<string, string | string[]> = {};
          for (const [name, value] of Object.entries(res.headers)) {
            if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
          }
          resolve({ status: res.statusCode ?? 502, headers: out, body: Buffer.concat(chunks) });
        });
        res.on("error", reject);
      },
    );
    outgoing.on("error", reject);
    outgoing.end(req.body);
  });
}

export async function startIamProxy(options: IamProxyOptions): Promise<IamProxy> {
  const upstream = new URL(options.upstream);
  const { policies, ledger, principal, caller } = options;
  const statements = [...policies.identity, ...policies.resourceDenies];
  const roleName = policies.roleArn.split("/").pop() ?? policies.roleLogicalId;

  const check = (auth: AuthRequest) =>
    evaluate(statements, { ...auth, context: { "aws:SecureTransport": "true", ...auth.context } });

  const deny = (
    res: ServerResponse,
    parsed: Pick<ParsedAwsRequest, "service" | "protocol" | "operation">,
    method: string,
    auth: AuthRequest,
    reason: string,
  ) => {
    ledger.recordDenied({
      principal,
      caller,
      operation: parsed.operation,
      action: auth.action,
      resource: auth.resource,
      reason,
    });
    options.onDenied?.(
      `${principal} (${caller}): ${parsed.operation} → ${auth.action} on ${auth.resource}: ${reason}`,
    );
    const message =
      `User: arn:aws:sts::${options.scope.account}:assumed-role/${roleName}/${principal} is not authorized to perform: ` +
      `${auth.action} on resource: ${auth.resource} (${reason})`;
    const answer = accessDenied(parsed.service, parsed.protocol, message, method);
    res.writeHead(answer.status, {
      ...answer.headers,
      "content-length": String(Buffer.byteLength(answer.body)),
    });
    res.end(answer.body);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const request: AwsHttpRequest = {
      method: req.method ?? "GET",
      url: req.url ?? "/",
      headers: flatHeaders(req),
      body: await readBody(req),
    };
    let parsed: ParsedAwsRequest;
    try {
      parsed = parseAwsRequest(request, options.scope);
    } catch (error) {
      const reason = `not understood: ${error instanceof Error ? error.message : String(error)}`;
      const target = request.headers["x-amz-target"] ?? `${request.method} ${request.url.split("?")[0]}`;
      return deny(
        res,
        { service: "unknown", protocol: "json", operation: target },
        request.method,
        { action: "?", resource: "?" },
        reason,
      );
    }
    if (parsed.expiresAt !== undefined && Date.now() > parsed.expiresAt) {
      const first = parsed.checks[0] ?? { action: "?", resource: "?" };
      return deny(res, parsed, request.method, first, "the presigned URL has expired");
    }
    const allowed: Array<{ auth: AuthRequest; grants: Grant[] }> = [];
    for (const auth of parsed.checks) {
      const decision = check(auth);
      if (!decision.allowed) {
        const reason =
          decision.reason === "explicit-deny"
            ? `explicitly denied by ${decision.deniedBy}`
            : "no identity-based policy allows it";
        return deny(res, parsed, request.method, auth, reason);
      }
      allowed.push({ auth, grants: decision.grants });
    }
    const fault = options.faults?.take(principal, {
      operation: parsed.operation,
      body: request.body.toString("utf8"),
    });
    const crash = () => {
      options.crash?.(accessKeyOf(request) ?? "");
      res.destroy();
    };
    if (fault === "before") return crash();
    const answer = await forward(upstream, request);
    if (fault === "after") return crash();
    if (
      parsed.service === "s3" &&
      answer.status === 404 &&
      (parsed.operation === "GetObject" || parsed.operation === "HeadObject")
    ) {
      const { bucket, key } = s3Target(request);
      const list: AuthRequest = {
        action: "s3:ListBucket",
        resource: `arn:${options.scope.partition ?? "aws"}:s3:::${bucket}`,
        context: { "s3:prefix": key },
      };
      const decision = check(list);
      if (!decision.allowed) {
        return deny(
          res,
          parsed,
          request.method,
          list,
          "S3 hides a missing key (403, not 404) from a caller without s3:ListBucket",
        );
      }
      allowed.push({ auth: list, grants: decision.grants });
    }
    for (const { auth, grants } of allowed) ledger.recordAllowed(principal, caller, auth.action, grants);
    const headers = { ...answer.headers };
    if (request.method.toUpperCase() !== "HEAD") headers["content-length"] = String(answer.body.length);
    res.writeHead(answer.status, headers);
    res.end(request.method.toUpperCase() === "HEAD" ? undefined : answer.body);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) {
        res.writeHead(502, { "content-type": "text/plain" });
        res.end(`rehearsal proxy: ${error instanceof Error ? error.message : String(error)}`);
      } else res.destroy();
    });
  });
  // Longer than an SQS long poll, and than the SDK's idle sockets usually live.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 70_000;
  server.requestTimeout = 0;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
