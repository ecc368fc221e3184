/**
 * The `http` task's connections, checked against its egress policy (egress.ts) on the address
 * actually connected to: names are resolved here and only the permitted addresses are handed to the
 * socket (so a second DNS answer cannot swap in another address: no rebinding gap), a literal
 * address is checked before connecting, and the connected socket's remote address is checked again
 * before a byte is sent. Every request of the task (redirects included) goes through this Agent.
 *
 * undici is pinned to the major Node 20 bundles (6.x): loading undici installs its Agent as the
 * process's global dispatcher when none is set yet, and Node 20's own fetch then runs on it; a 7.x
 * Agent refuses the content-length header Node's fetch passes (every presigned upload broke).
 */

import type { LookupAddress } from "node:dns";
import { lookup as dnsLookup } from "node:dns/promises";
import type { Socket } from "node:net";
import type * as Undici from "undici";
import type { EgressPolicy, EgressRefusal } from "./egress.js";
import { parseAddress } from "./egress.js";
import { TerminalError } from "./errors.js";

/** Resolves a host name to its addresses (default: the system resolver, as Node's own lookup). */
export type Resolve = (hostname: string) => Promise<readonly LookupAddress[]>;

export const systemResolve: Resolve = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/** A connection the egress policy refuses: terminal, since the same address will be refused again. */
export class EgressRefusedError extends TerminalError {
  constructor(
    readonly host: string,
    readonly refusals: readonly EgressRefusal[],
    policy: EgressPolicy,
  ) {
    const explained = refusals.map((r) => policy.explain(r)).join("; ");
    const resolved = refusals.length > 0 && refusals.every((r) => r.address !== host);
    super(resolved ? `${host} resolves only to refused addresses: ${explained}` : explained, {
      code: "EgressRefused",
    });
  }
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/** A `lookup` for net.connect: resolves, keeps the permitted addresses, refuses when none is left. */
function guardedLookup(policy: EgressPolicy, resolve: Resolve) {
  return (
    hostname: string,
    options: { all?: boolean; family?: number | string },
    callback: LookupCallback,
  ) => {
    resolve(hostname).then(
      (addresses) => {
        const wanted =
          options.family === 4 || options.family === "IPv4"
            ? 4
            : options.family === 6 || options.family === "IPv6"
              ? 6
              : 0;
        const candidates = addresses.filter((a) => wanted === 0 || a.family === wanted);
        const refusals: EgressRefusal[] = [];
        const permitted = candidates.filter((a) => {
          const refusal = policy.check(a.address);
          if (refusal) refusals.push(refusal);
          return refusal === undefined;
        });
        if (permitted.length === 0) {
          if (refusals.length > 0) return callback(new EgressRefusedError(hostname, refusals, policy), "");
          const error: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
          error.code = "ENOTFOUND";
          return callback(error, "");
        }
        if (options.all)
          return callback(
            null,
            permitted.map((a) => ({ address: a.address, family: a.family })),
          );
        const first = permitted[0]!;
        callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, ""),
    );
  };
}

/**
 * An undici Agent whose every connection obeys `policy`; names resolved with `resolve`. `undici` is
 * the module, which the http task loads on its first request (http.ts).
 */
export function egressAgent(
  undici: Pick<typeof Undici, "Agent" | "buildConnector">,
  policy: EgressPolicy,
  resolve: Resolve = systemResolve,
): Undici.Agent {
  const connect = undici.buildConnector({
    lookup: guardedLookup(policy, resolve),
  } as Undici.buildConnector.BuildOptions);
  return new undici.Agent({
    connect: (options, callback) => {
      const host = options.hostname.replace(/^\[(.*)\]$/, "$1");
      // A literal address never reaches `lookup`: check it before connecting.
      if (parseAddress(host)) {
        const refusal = policy.check(host);
        if (refusal) return callback(new EgressRefusedError(host, [refusal], policy), null);
      }
      connect(options, (error, socket) => {
        if (error || !socket) return callback(error ?? new Error("no socket"), null);
        // The address connected to, whatever led there.
        const remote = (socket as Socket).remoteAddress;
        if (remote === undefined) {
          socket.destroy();
          return callback(new Error(`the connection to ${host} closed before its address was known`), null);
        }
        const refusal = policy.check(remote);
        if (refusal) {
          socket.destroy();
          return callback(new EgressRefusedError(host, [refusal], policy), null);
        }
        callback(null, socket);
      });
    },
  });
}
