/**
 * Where the `http` task may connect: every address is public unless it falls in one of the ranges
 * below, and those are refused unless the allow-list lets them through. Pure (no I/O): the same
 * rules check a literal host when a workflow is registered and the address actually connected to
 * at run time (http-connect.ts).
 *
 * Refused ranges:
 * - loopback: 127.0.0.0/8, ::1, and the name `localhost` (and `*.localhost`);
 * - unspecified: 0.0.0.0/8, ::;
 * - link-local: 169.254.0.0/16, fe80::/10 — with the cloud metadata service (169.254.169.254 and
 *   AWS's fd00:ec2::254) named on its own;
 * - private: 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10 (shared address space),
 *   fc00::/7 (unique local);
 * - and each of these inside IPv6: IPv4-mapped (::ffff:a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d),
 *   IPv4-compatible (::a.b.c.d) and NAT64 (64:ff9b::a.b.c.d) forms are judged by their IPv4 address.
 *
 * The allow-list is a comma-separated list of the words `loopback` and `private` (each lets a whole
 * category through) and CIDRs or single addresses (`10.1.0.0/16`, `fd12::/16`, `169.254.169.254`),
 * or `none`. Link-local, metadata and unspecified addresses have no word: only a CIDR naming them
 * lets them through.
 */
export type AddressCategory = "loopback" | "unspecified" | "link-local" | "metadata" | "private";

interface IpAddress {
  version: 4 | 6;
  value: bigint;
}

export interface Cidr extends IpAddress {
  prefix: number;
  /** As written in the allow-list, normalised (`10.0.0.0/8`). */
  text: string;
}

interface Range {
  cidr: Cidr;
  category: AddressCategory;
  /** What the range is, for messages. */
  label: string;
}

const bits = (version: 4 | 6) => (version === 4 ? 32 : 128);

function parseIPv4(text: string): bigint | undefined {
  const match = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (!match) return undefined;
  let value = 0n;
  for (const part of match.slice(1)) {
    // No leading zeros: "010" reads as octal in some parsers and decimal in others.
    if (part.length > 1 && part.startsWith("0")) return undefined;
    const octet = Number(part);
    if (octet > 255) return undefined;
    value = (value << 8n) | BigInt(octet);
  }
  return value;
}

function parseIPv6(text: string): bigint | undefined {
  // A zone index (fe80::1%eth0) names an interface, not part of the address.
  let s = text.includes("%") ? text.slice(0, text.indexOf("%")) : text;
  if (!/^[0-9A-Fa-f:.]+$/.test(s)) return undefined;
  if (s.includes(".")) {
    const cut = s.lastIndexOf(":");
    const v4 = parseIPv4(s.slice(cut + 1));
    if (v4 === undefined) return undefined;
    s = `${s.slice(0, cut + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const halves = s.split("::");
  if (halves.length > 2) return undefined;
  const groups = (part: string) => (part === "" ? [] : part.split(":"));
  const head = groups(halves[0] ?? "");
  const tail = halves.length === 2 ? groups(halves[1] ?? "") : [];
  if (![...head, ...tail].every((group) => /^[0-9A-Fa-f]{1,4}$/.test(group))) return undefined;
  if (halves.length === 1 ? head.length !== 8 : head.length + tail.length > 7) return undefined;
  const all = [...head, ...Array<string>(8 - head.length - tail.length).fill("0"), ...tail];
  return all.reduce((value, group) => (value << 16n) | BigInt(Number.parseInt(group, 16)), 0n);
}

/** An IPv4 or IPv6 address (IPv6 optionally in brackets or with a zone index); undefined when not one. */
export function parseAddress(text: string): IpAddress | undefined {
  const bare = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  const v4 = parseIPv4(bare);
  if (v4 !== undefined) return { version: 4, value: v4 };
  const v6 = bare.includes(":") ? parseIPv6(bare) : undefined;
  return v6 === undefined ? undefined : { version: 6, value: v6 };
}

/** `a.b.c.d/n`, `x::y/n`, or a single address (a /32 or /128). Host bits must be zero. */
export function parseCidr(text: string): Cidr | undefined {
  const [addressText = "", prefixText, extra] = text.trim().split("/");
  if (extra !== undefined) return undefined;
  const address = parseAddress(addressText);
  if (!address) return undefined;
  const max = bits(address.version);
  if (prefixText !== undefined && !/^\d{1,3}$/.test(prefixText)) return undefined;
  const prefix = prefixText === undefined ? max : Number(prefixText);
  if (prefix > max) return undefined;
  if ((address.value & ~mask(address.version, prefix) & ((1n << BigInt(max)) - 1n)) !== 0n) return undefined;
  return { ...address, prefix, text: `${addressText}/${prefix}` };
}

function mask(version: 4 | 6, prefix: number): bigint {
  const width = BigInt(bits(version));
  return prefix === 0 ? 0n : ((1n << BigInt(prefix)) - 1n) << (width - BigInt(prefix));
}

function contains(cidr: Cidr, address: IpAddress): boolean {
  return (
    cidr.version === address.version &&
    (address.value & mask(cidr.version, cidr.prefix)) === (cidr.value & mask(cidr.version, cidr.prefix))
  );
}

function cidr(text: string): Cidr {
  const parsed = parseCidr(text);
  if (!parsed) throw new Error(`bad built-in CIDR ${text}`);
  return parsed;
}

/** Most specific first: the metadata addresses sit inside link-local and unique-local ranges. */
const RANGES: readonly Range[] = [
  { cidr: cidr("169.254.169.254/32"), category: "metadata", label: "the cloud metadata service" },
  { cidr: cidr("fd00:ec2::254/128"), category: "metadata", label: "the cloud metadata service (IPv6)" },
  { cidr: cidr("0.0.0.0/8"), category: "unspecified", label: "unspecified (0.0.0.0/8)" },
  { cidr: cidr("127.0.0.0/8"), category: "loopback", label: "loopback (127.0.0.0/8)" },
  { cidr: cidr("169.254.0.0/16"), category: "link-local", label: "link-local (169.254.0.0/16)" },
  { cidr: cidr("10.0.0.0/8"), category: "private", label: "private (10.0.0.0/8)" },
  { cidr: cidr("172.16.0.0/12"), category: "private", label: "private (172.16.0.0/12)" },
  { cidr: cidr("192.168.0.0/16"), category: "private", label: "private (192.168.0.0/16)" },
  { cidr: cidr("100.64.0.0/10"), category: "private", label: "shared address space (100.64.0.0/10)" },
  { cidr: cidr("::/128"), category: "unspecified", label: "unspecified (::)" },
  { cidr: cidr("::1/128"), category: "loopback", label: "loopback (::1)" },
  { cidr: cidr("fe80::/10"), category: "link-local", label: "link-local (fe80::/10)" },
  { cidr: cidr("fc00::/7"), category: "private", label: "unique local (fc00::/7)" },
];

/** IPv6 forms that carry an IPv4 address in their last 32 bits, which is what they reach. */
const EMBEDDING_IPV4: readonly Cidr[] = [
  cidr("::ffff:0:0/96"), // IPv4-mapped
  cidr("::ffff:0:0:0/96"), // IPv4-translated (SIIT)
  cidr("64:ff9b::/96"), // NAT64, well-known prefix
  cidr("::/96"), // IPv4-compatible (deprecated); :: and ::1 themselves are matched first
];

/** The IPv4 address an IPv6 address stands for, if it is one of the forms above. */
function embeddedIPv4(address: IpAddress): IpAddress | undefined {
  if (address.version !== 6) return undefined;
  if (address.value <= 1n) return undefined; // :: and ::1
  if (!EMBEDDING_IPV4.some((range) => contains(range, address))) return undefined;
  return { version: 4, value: address.value & 0xffffffffn };
}

export interface Classification {
  category: AddressCategory;
  label: string;
  /** The range to name in an allow-list to let exactly this kind of address through. */
  cidr: string;
}

/** The refused range an address is in (IPv6 forms of IPv4 judged by their IPv4 address); undefined when public. */
export function classifyAddress(text: string): Classification | undefined {
  const address = parseAddress(text);
  if (!address) return undefined;
  const judged = embeddedIPv4(address) ?? address;
  const range = RANGES.find((r) => contains(r.cidr, judged));
  return range && { category: range.category, label: range.label, cidr: range.cidr.text };
}

// ---------------------------------------------------------------------------------------------
// The allow-list.

export interface EgressAllow {
  loopback: boolean;
  private: boolean;
  cidrs: readonly Cidr[];
}

export const ALLOW_NOTHING: EgressAllow = Object.freeze({ loopback: false, private: false, cidrs: [] });
export const ALLOW_LOOPBACK: EgressAllow = Object.freeze({ loopback: true, private: false, cidrs: [] });

/**
 * Parses `loopback,private,10.1.0.0/16,fd00::/8` (spaces allowed; `none` alone for an empty list).
 * Returns every problem at once.
 */
export function parseEgressAllow(
  text: string,
): { ok: true; value: EgressAllow } | { ok: false; problems: string[] } {
  const items = text
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
  const problems: string[] = [];
  const value = { loopback: false, private: false, cidrs: [] as Cidr[] };
  for (const item of items) {
    const word = item.toLowerCase();
    if (word === "loopback") value.loopback = true;
    else if (word === "private") value.private = true;
    else if (word === "none") {
      if (items.length > 1) problems.push('"none" cannot be combined with other entries');
    } else {
      const parsed = parseCidr(item);
      if (parsed) value.cidrs.push(parsed);
      else
        problems.push(
          `"${item}" is neither "loopback", "private", "none" nor a CIDR such as 10.1.0.0/16 (host bits zero)`,
        );
    }
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, value };
}

/** The allow-list written back as the setting's text. */
export function formatEgressAllow(allow: EgressAllow): string {
  const items = [
    ...(allow.loopback ? ["loopback"] : []),
    ...(allow.private ? ["private"] : []),
    ...allow.cidrs.map((c) => c.text),
  ];
  return items.length === 0 ? "none" : items.join(",");
}

// ---------------------------------------------------------------------------------------------
// The policy the http task applies.

export interface EgressRefusal {
  /** The address refused (or the name, for `localhost`). */
  address: string;
  category: AddressCategory;
  label: string;
  /** What to add to the allow-list to let it through. */
  allowWith: string;
}

export class EgressPolicy {
  /**
   * @param allow what is let through beyond public addresses.
   * @param setting how the allow-list is configured, for messages (e.g. the variable and the prop).
   */
  constructor(
    readonly allow: EgressAllow,
    readonly setting: string = "the http task's egress allow-list",
  ) {}

  /** Why a connection to this IP address is refused; undefined when allowed (public, or listed). */
  check(addressText: string): EgressRefusal | undefined {
    const address = parseAddress(addressText);
    // Not an address at all: nothing to connect to, so nothing to refuse here.
    if (!address) return undefined;
    const found = classifyAddress(addressText);
    if (!found) return undefined;
    if (found.category === "loopback" && this.allow.loopback) return undefined;
    if (found.category === "private" && this.allow.private) return undefined;
    const v4 = embeddedIPv4(address);
    if (this.allow.cidrs.some((c) => contains(c, address) || (v4 !== undefined && contains(c, v4))))
      return undefined;
    const allowWith =
      found.category === "loopback"
        ? '"loopback"'
        : found.category === "private"
          ? `"private" (or the CIDR ${found.cidr})`
          : `the CIDR ${found.category === "metadata" ? found.cidr : `${canonical(address)}/${bits(address.version)}`}`;
    return { address: addressText, category: found.category, label: found.label, allowWith };
  }

  /**
   * A URL's host as written, before any DNS: a literal address, or `localhost` (which resolves to
   * loopback without asking DNS). Other names are checked at run time, on the addresses they resolve to.
   */
  checkHost(hostname: string): EgressRefusal | undefined {
    const host = hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname;
    if (parseAddress(host)) return this.check(host);
    const name = host.toLowerCase().replace(/\.$/, "");
    if (name === "localhost" || name.endsWith(".localhost")) {
      const refusal = this.check("127.0.0.1");
      return refusal && { ...refusal, address: hostname };
    }
    return undefined;
  }

  /** "… is loopback (127.0.0.0/8); the http task refuses it unless <setting> lists "loopback"". */
  explain(refusal: EgressRefusal): string {
    return `${refusal.address} is ${refusal.label}, which the http task refuses unless ${this.setting} lists ${refusal.allowWith}`;
  }
}

/** The address in its usual text form (for messages): IPv4 dotted, IPv6 as eight groups. */
function canonical(address: IpAddress): string {
  if (address.version === 4)
    return [24n, 16n, 8n, 0n].map((shift) => String((address.value >> shift) & 0xffn)).join(".");
  const groups: string[] = [];
  for (let shift = 112n; shift >= 0n; shift -= 16n)
    groups.push(((address.value >> shift) & 0xffffn).toString(16));
  // The longest run of two or more zero groups becomes "::" (RFC 5952).
  let best = { start: -1, length: 1 };
  for (let start = 0; start < 8; start++) {
    let length = 0;
    while (start + length < 8 && groups[start + length] === "0") length++;
    if (length > best.length) best = { start, length };
  }
  if (best.start === -1) return groups.join(":");
  return `${groups.slice(0, best.start).join(":")}::${groups.slice(best.start + best.length).join(":")}`;
}

/** Where the http task may connect when the allow-list is not configured. */
export type EgressRuntime = "deployed" | "local";

/**
 * The policy for a runtime: the configured allow-list when there is one (exactly that list), else the
 * runtime's default — deployed, public addresses only; the local runtime (`npm start`), loopback too.
 */
export function egressPolicy(
  allow: EgressAllow | undefined,
  runtime: EgressRuntime,
  setting?: string,
): EgressPolicy {
  return new EgressPolicy(allow ?? (runtime === "local" ? ALLOW_LOOPBACK : ALLOW_NOTHING), setting);
}
