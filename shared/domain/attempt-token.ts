/**
 * The token that stands for one attempt of one node held outside the engine: an external worker's
 * task (engine/external.ts) or a callback's wait (engine/callbacks.ts). It names the attempt and
 * carries the attempt's lease token, which is unguessable and is the fence of every write made
 * with it: once the attempt is over (or another holds the node), the token is stale. Opaque to its
 * holder; it travels in request bodies only, never in paths, so access logs never hold it.
 */
import type { Lease } from "./records.js";
import * as z from "./zod.js";

export interface AttemptToken {
  executionId: string;
  nodeId: string;
  attempt: number;
  leaseToken: string;
}

const PREFIX = "wt1.";

const tokenSchema = z.strictObject({
  e: z.string().check(z.minLength(1), z.maxLength(200)),
  n: z.string().check(z.minLength(1), z.maxLength(200)),
  a: z.number().check(z.int(), z.gte(1)),
  t: z.string().check(z.minLength(1), z.maxLength(200)),
});

export function encodeAttemptToken(token: AttemptToken): string {
  const body = { e: token.executionId, n: token.nodeId, a: token.attempt, t: token.leaseToken };
  return PREFIX + Buffer.from(JSON.stringify(body), "utf8").toString("base64url");
}

/** The attempt a token names, or undefined when the text is no token this engine gave. */
export function decodeAttemptToken(text: string): AttemptToken | undefined {
  if (!text.startsWith(PREFIX) || text.length > 2048) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(text.slice(PREFIX.length), "base64url").toString("utf8"));
  } catch {
    return undefined;
  }
  const parsed = tokenSchema.safeParse(body);
  if (!parsed.success) return undefined;
  return {
    executionId: parsed.data.e,
    nodeId: parsed.data.n,
    attempt: parsed.data.a,
    leaseToken: parsed.data.t,
  };
}

/** The token of a waiting callback attempt: what settles it. */
export function callbackToken(executionId: string, nodeId: string, attempt: number, lease: Lease): string {
  return encodeAttemptToken({ executionId, nodeId, attempt, leaseToken: lease.token });
}
