/**
 * The `http` task type: one HTTP request with the node's idempotency key. 5xx, 429, network errors
 * and timeouts are retryable (honouring Retry-After); any other unexpected status is terminal.
 *
 * Egress is guarded (egress.ts): loopback, link-local (the metadata service included), unspecified
 * and private addresses are refused unless the allow-list lets them through — a literal address or
 * `localhost` in the URL at registration, and at run time the address actually connected to, after
 * DNS, on every hop of a redirect (http-connect.ts). Header values may be secret references
 * (`{"secret": "ssm:/weft/api-token"}`), resolved at run time and never stored or returned;
 * credential headers must be references (http-headers.ts), and a value a server echoes back is
 * redacted from the output and the error (shared/domain/redact.ts). The request carries the attempt's
 * `traceparent` (shared/domain/trace.ts) unless the node's headers set one.
 */
import { type EgressPolicy, egressPolicy } from "./egress.js";
import type { Resolve } from "./http-connect.js";
import { type HttpParams, httpParamsSchema, httpRegistrationParams } from "./http-params.js";
import type { HttpOutput, httpRequester } from "./http-request.js";
import { DEFAULT_SECRET_TTL_MS, SecretCache, type SecretStore } from "./secrets.js";
import { defineTask, type TaskType } from "./task-type.js";

// The params live apart (http-params.ts): the functions that only validate definitions bundle them without undici.
export { HTTP_METHODS, type HttpParams, httpParamsSchema } from "./http-params.js";

export const DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024;
export type { HttpOutput } from "./http-request.js";

export interface HttpTaskOptions {
  /** Larger response bodies fail the node with a TerminalError. Default 256 KiB. */
  maxResponseBytes?: number;
  /**
   * Where requests may go (egress.ts); checked at registration and on every connection. Default: the
   * deployed default, public addresses only.
   */
  egress?: EgressPolicy;
  /** Resolves host names at run time (default the system resolver); tests inject their own. */
  resolve?: Resolve;
  /** Where secret references in headers are read. Without one, a reference fails its node. */
  secrets?: SecretStore;
  /** How long a resolved secret is reused, on the engine's clock. Default 60 s. */
  secretTtlMs?: number;
}

/**
 * The requests' code (http-request.ts, with undici) is loaded with the first request, not with this
 * module: a worker that runs no http node never evaluates it (bench/cold-start.ts).
 */
let requestModule: Promise<typeof import("./http-request.js")> | undefined;
const loadRequests = () => {
  requestModule ??= import("./http-request.js");
  return requestModule;
};

export function httpTask(options: HttpTaskOptions = {}): TaskType<HttpParams> {
  const maxBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  if (!Number.isInteger(maxBytes) || maxBytes < 0)
    throw new Error(`http task: maxResponseBytes must be a whole number ≥ 0, got ${maxBytes}`);
  const egress = options.egress ?? egressPolicy(undefined, "deployed");
  const secrets = new SecretCache(options.secrets, options.secretTtlMs ?? DEFAULT_SECRET_TTL_MS);
  // One requester per task type (one agent), made with the first request.
  let requester: ReturnType<typeof httpRequester> | undefined;

  return defineTask({
    type: "http",
    params: httpParamsSchema,
    registrationParams: httpRegistrationParams(egress),
    async run({ params: raw, context }): Promise<HttpOutput> {
      // Params arrive as stored in the definition: parse them for the defaults and normalised URL.
      const params = httpParamsSchema.parse(raw);
      requester ??= (await loadRequests()).httpRequester({
        egress,
        resolve: options.resolve,
        secrets,
        maxBytes,
      });
      return requester.run(params, context);
    },
  });
}

/** `http` with the default options. */
export const defaultHttpTask = httpTask();

/** Sends the request (following redirects) and reads the answer; errors are thrown as the retry policy wants them. */
