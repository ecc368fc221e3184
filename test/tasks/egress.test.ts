/**
 * The `http` task's address rules (shared/tasks/egress.ts): every refused range, its IPv6 and
 * IPv4-in-IPv6 forms, the allow-list's words and CIDRs, and the runtimes' defaults.
 */
import { describe, expect, it } from "vitest";
import {
  ALLOW_LOOPBACK,
  ALLOW_NOTHING,
  classifyAddress,
  EgressPolicy,
  egressPolicy,
  formatEgressAllow,
  parseAddress,
  parseCidr,
  parseEgressAllow,
} from "../../shared/tasks/egress.js";

function allow(text: string) {
  const parsed = parseEgressAllow(text);
  if (!parsed.ok) throw new Error(parsed.problems.join("; "));
  return new EgressPolicy(parsed.value, "WEFT_HTTP_ALLOW");
}

describe("address classification", () => {
  it.each([
    // loopback
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["::1", "loopback"],
    // unspecified
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["::", "unspecified"],
    // link-local, with the metadata service on its own
    ["169.254.169.254", "metadata"],
    ["169.254.170.2", "link-local"],
    ["169.254.0.1", "link-local"],
    ["fd00:ec2::254", "metadata"],
    ["fe80::1", "link-local"],
    ["febf:ffff::1", "link-local"],
    ["fe80::1%eth0", "link-local"],
    // private
    ["10.0.0.1", "private"],
    ["10.255.255.255", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["100.64.0.1", "private"],
    ["100.127.255.255", "private"],
    ["fc00::1", "private"],
    ["fd12:3456::1", "private"],
    // IPv4 inside IPv6: judged by the IPv4 address
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["::ffff:169.254.169.254", "metadata"],
    ["::ffff:a9fe:a9fe", "metadata"],
    ["::ffff:10.1.2.3", "private"],
    ["::ffff:192.168.0.1", "private"],
    ["::ffff:0:10.1.2.3", "private"],
    ["64:ff9b::169.254.169.254", "metadata"],
    ["64:ff9b::a00:1", "private"],
    ["::127.0.0.1", "loopback"],
    ["::ffff:0.0.0.0", "unspecified"],
    ["[::ffff:127.0.0.1]", "loopback"],
  ])("%s is %s", (address, category) => {
    expect(classifyAddress(address)?.category).toBe(category);
  });

  it.each([
    "8.8.8.8",
    "1.1.1.1",
    "172.15.255.255",
    "172.32.0.0",
    "100.63.255.255",
    "100.128.0.0",
    "169.253.255.255",
    "192.169.0.1",
    "11.0.0.1",
    "2001:4860:4860::8888",
    "2600:1f18::1",
    "fec0::1",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
  ])("%s is public", (address) => {
    expect(classifyAddress(address)).toBeUndefined();
  });

  it("parses IPv4 and IPv6 strictly", () => {
    expect(parseAddress("1.2.3.4")).toEqual({ version: 4, value: 0x01020304n });
    expect(parseAddress("::1")).toEqual({ version: 6, value: 1n });
    expect(parseAddress("1::")).toEqual({ version: 6, value: 1n << 112n });
    expect(parseAddress("1:2:3:4:5:6:7:8")?.value).toBe(0x00010002000300040005000600070008n);
    for (const bad of [
      "256.0.0.1",
      "1.2.3",
      "01.2.3.4",
      "1.2.3.4.5",
      "1:2:3:4:5:6:7:8:9",
      "1::2::3",
      ":1::",
      "g::1",
      "localhost",
      "",
    ])
      expect(parseAddress(bad), bad).toBeUndefined();
  });
});

describe("the allow-list", () => {
  it("parses words, CIDRs and single addresses, and writes them back", () => {
    const parsed = parseEgressAllow(" loopback , private,10.1.0.0/16,fd12::/16, 169.254.169.254 ");
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.value.loopback).toBe(true);
    expect(parsed.value.private).toBe(true);
    expect(parsed.value.cidrs.map((c) => c.text)).toEqual(["10.1.0.0/16", "fd12::/16", "169.254.169.254/32"]);
    expect(formatEgressAllow(parsed.value)).toBe("loopback,private,10.1.0.0/16,fd12::/16,169.254.169.254/32");
    expect(parseEgressAllow("none")).toEqual({ ok: true, value: ALLOW_NOTHING });
    expect(formatEgressAllow(ALLOW_NOTHING)).toBe("none");
  });

  it("refuses anything else, naming every bad entry", () => {
    const parsed = parseEgressAllow("loopback,link-local,10.0.0.1/8,1.2.3.4/33,none");
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.problems).toEqual([
      expect.stringContaining('"link-local" is neither'),
      expect.stringContaining('"10.0.0.1/8" is neither'), // host bits set
      expect.stringContaining('"1.2.3.4/33" is neither'),
      '"none" cannot be combined with other entries',
    ]);
    expect(parseCidr("10.0.0.0/8")?.prefix).toBe(8);
    expect(parseCidr("::/0")?.prefix).toBe(0);
    expect(parseCidr("10.0.0.0/x")).toBeUndefined();
  });

  it("lets through what it lists, and nothing else", () => {
    const policy = allow("loopback,10.1.0.0/16,fd12::/16");
    expect(policy.check("127.0.0.1")).toBeUndefined();
    expect(policy.check("::1")).toBeUndefined();
    expect(policy.check("::ffff:127.0.0.1")).toBeUndefined();
    expect(policy.check("10.1.200.3")).toBeUndefined();
    // An IPv4 CIDR covers the IPv4-mapped form of its addresses too.
    expect(policy.check("::ffff:10.1.0.9")).toBeUndefined();
    expect(policy.check("fd12:1::5")).toBeUndefined();
    expect(policy.check("10.2.0.1")).toMatchObject({
      category: "private",
      allowWith: '"private" (or the CIDR 10.0.0.0/8)',
    });
    expect(policy.check("fd13::1")).toMatchObject({ category: "private" });
    expect(policy.check("169.254.169.254")).toMatchObject({
      category: "metadata",
      allowWith: "the CIDR 169.254.169.254/32",
    });
    expect(policy.check("fe80::1")).toMatchObject({
      category: "link-local",
      allowWith: "the CIDR fe80::1/128",
    });
    expect(policy.check("0.0.0.0")).toMatchObject({ category: "unspecified" });
    expect(policy.check("93.184.216.34")).toBeUndefined();
  });

  it('"private" lets private ranges through, but never link-local or the metadata service', () => {
    const policy = allow("private");
    for (const address of [
      "10.0.0.1",
      "172.20.1.1",
      "192.168.9.9",
      "100.64.1.1",
      "fd00::1",
      "::ffff:10.0.0.1",
    ])
      expect(policy.check(address), address).toBeUndefined();
    expect(policy.check("fd00:ec2::254")).toMatchObject({ category: "metadata" });
    expect(policy.check("169.254.169.254")).toMatchObject({ category: "metadata" });
    expect(policy.check("127.0.0.1")).toMatchObject({ category: "loopback", allowWith: '"loopback"' });
  });

  it("only a CIDR naming it lets the metadata service through", () => {
    expect(allow("169.254.169.254/32").check("169.254.169.254")).toBeUndefined();
    expect(allow("169.254.169.254/32").check("169.254.169.253")).toMatchObject({ category: "link-local" });
  });

  it("checks a URL host as written: literal addresses and localhost; other names wait for DNS", () => {
    const policy = new EgressPolicy(ALLOW_NOTHING, "WEFT_HTTP_ALLOW");
    expect(policy.checkHost("169.254.169.254")).toMatchObject({ category: "metadata" });
    expect(policy.checkHost("[::1]")).toMatchObject({ category: "loopback" });
    expect(policy.checkHost("[::ffff:7f00:1]")).toMatchObject({ category: "loopback" });
    expect(policy.checkHost("localhost")).toMatchObject({ category: "loopback", address: "localhost" });
    expect(policy.checkHost("LOCALHOST.")).toMatchObject({ category: "loopback" });
    expect(policy.checkHost("api.localhost")).toMatchObject({ category: "loopback" });
    expect(policy.checkHost("example.com")).toBeUndefined();
    expect(policy.explain(policy.checkHost("localhost")!)).toBe(
      'localhost is loopback (127.0.0.0/8), which the http task refuses unless WEFT_HTTP_ALLOW lists "loopback"',
    );
  });

  it("defaults: public only when deployed, loopback too in the local runtime; a configured list is exactly that", () => {
    expect(egressPolicy(undefined, "deployed").allow).toEqual(ALLOW_NOTHING);
    expect(egressPolicy(undefined, "local").allow).toEqual(ALLOW_LOOPBACK);
    const configured = parseEgressAllow("private");
    if (!configured.ok) throw new Error("private");
    expect(egressPolicy(configured.value, "local").check("127.0.0.1")).toMatchObject({
      category: "loopback",
    });
  });
});
