import { describe, expect, it } from "vitest";
import { canonicalJson, definitionHash } from "../../shared/domain/hash.js";
import { node, workflow } from "./domain-fixtures.js";

describe("canonicalJson", () => {
  it("sorts object keys recursively, keeping array order", () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}',
    );
  });

  it("does not depend on key insertion order", () => {
    const one = { name: "x", nodes: [{ id: "a", type: "noop", params: { p: 1, q: [1, 2] } }] };
    const two = { nodes: [{ params: { q: [1, 2], p: 1 }, type: "noop", id: "a" }], name: "x" };
    expect(canonicalJson(one)).toBe(canonicalJson(two));
  });

  it("keeps array order significant", () => {
    expect(canonicalJson([1, 2])).not.toBe(canonicalJson([2, 1]));
  });

  it("drops undefined members like JSON.stringify", () => {
    expect(canonicalJson({ a: undefined, b: 1 })).toBe('{"b":1}');
    expect(canonicalJson([undefined, 1])).toBe("[null,1]");
    expect(canonicalJson(undefined)).toBe("null");
  });

  it("matches JSON.stringify for primitives and strings needing escapes, but keeps -0 and 1e400 exact", () => {
    for (const value of ['a"b\n', 1.5, true, null, "é"])
      expect(canonicalJson(value)).toBe(JSON.stringify(value));
    expect(canonicalJson(Number.NaN)).toBe("null");
    // Params holding -0 or 1e400 are other content than 0 or null: another version.
    expect(canonicalJson({ a: -0, b: Number.POSITIVE_INFINITY })).toBe('{"a":-0,"b":1e400}');
  });

  it("refuses circular structures", () => {
    const loop: Record<string, unknown> = {};
    loop.self = loop;
    expect(() => canonicalJson(loop)).toThrow(TypeError);
  });

  it("allows the same object twice when it is not circular", () => {
    const shared = { a: 1 };
    expect(canonicalJson({ x: shared, y: shared })).toBe('{"x":{"a":1},"y":{"a":1}}');
  });
});

describe("definitionHash", () => {
  it("is a sha256 hex digest that ignores key order", () => {
    const a = workflow([node("a"), node("b", ["a"])], { description: "d" });
    const b = {
      nodes: a.nodes.map((n) => Object.fromEntries(Object.entries(n).reverse())),
      description: "d",
      name: a.name,
    };
    expect(definitionHash(a)).toMatch(/^[0-9a-f]{64}$/);
    expect(definitionHash(b as typeof a)).toBe(definitionHash(a));
  });

  it("changes when the content changes", () => {
    expect(definitionHash(workflow([node("a")]))).not.toBe(definitionHash(workflow([node("b")])));
  });
});
