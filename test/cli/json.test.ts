/** The CLI's JSON errors name the line and column, even where Node's own message names no position. */
import { describe, expect, it } from "vitest";
import { JsonSyntaxError, locateJsonError, parseJsonText } from "../../cli/json.js";
import { truncateAnsi } from "../../cli/watch.js";

describe("parseJsonText", () => {
  it("parses valid JSON", () => {
    expect(parseJsonText('{"a":[1,true,null,"x\\n"]}', "t")).toEqual({ a: [1, true, null, "x\n"] });
  });

  it.each([
    ['{\n  "a": tru\n}', 2, 8, "expected true"],
    ['{"a":}', 1, 6, "expected a value"],
    ['{"a":1,}', 1, 8, "trailing comma"],
    ["[1 2]", 1, 4, "expected ',' or ']'"],
    ["{'a':1}", 1, 2, "double-quoted property name"],
    ['{"a":1} x', 1, 9, "after the JSON value"],
    ["", 1, 1, "empty"],
    ['{"a":"b\nc"}', 1, 8, "control character"],
  ])("locates the error in %j", (text, line, column, reason) => {
    let caught: unknown;
    try {
      parseJsonText(text, "input.json");
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(JsonSyntaxError);
    const error = caught as JsonSyntaxError;
    expect([error.line, error.column]).toEqual([line, column]);
    expect(error.message).toContain(`input.json: invalid JSON at line ${line}, column ${column}`);
    expect(error.reason).toContain(reason);
  });

  it("finds no error in valid JSON", () => {
    expect(locateJsonError(' { "n": -1.5e3, "s": "\\u00e9", "l": [ ] } ')).toBeUndefined();
  });
});

describe("truncateAnsi", () => {
  it("cuts visible characters only and keeps color codes intact", () => {
    expect(truncateAnsi("abcdef", 10)).toBe("abcdef");
    expect(truncateAnsi("abcdef", 4)).toBe("abc…");
    const colored = "\x1b[32mabcdef\x1b[0m";
    expect(truncateAnsi(colored, 10)).toBe(colored);
    expect(truncateAnsi(colored, 4)).toBe("\x1b[32mabc…\x1b[0m");
  });
});
