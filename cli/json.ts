/**
 * JSON parsing with errors a person can act on: `line 3, column 9: expected ',' or '}'`. Node's own
 * JSON.parse message sometimes names no position at all ("Unexpected token 'x', … is not valid JSON"),
 * so on failure a small scanner finds where the text stops being JSON.
 */

import { parseExact } from "../shared/domain/exact-numbers.js";

export class JsonSyntaxError extends Error {
  override name = "JsonSyntaxError";
  constructor(
    readonly source: string,
    readonly line: number,
    readonly column: number,
    readonly reason: string,
  ) {
    super(`${source}: invalid JSON at line ${line}, column ${column}: ${reason}`);
  }
}

export function parseJsonText(text: string, source: string): unknown {
  try {
    // Exact numbers (shared/domain/exact-numbers.ts): an id beyond 2^53 keeps its digits.
    return parseExact(text);
  } catch (error) {
    const found = locateJsonError(text) ?? {
      offset: text.length,
      reason: error instanceof Error ? error.message : "not valid JSON",
    };
    const { line, column } = lineColumn(text, found.offset);
    throw new JsonSyntaxError(source, line, column, found.reason);
  }
}

function lineColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text[i] === "\n") {
      line += 1;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}

class ScanError {
  constructor(
    readonly offset: number,
    readonly reason: string,
  ) {}
}

/** The offset and a short reason of the first syntax error in `text`, or undefined if it is valid JSON. */
export function locateJsonError(text: string): { offset: number; reason: string } | undefined {
  let i = 0;
  const fail = (reason: string): never => {
    throw new ScanError(i, reason);
  };
  const describe = () => (i >= text.length ? "end of input" : `'${text[i]}'`);
  const ws = () => {
    while (i < text.length && " \t\n\r".includes(text[i] as string)) i++;
  };
  const literal = (word: string) => {
    if (text.startsWith(word, i)) i += word.length;
    else fail(`unexpected ${JSON.stringify(/^[\w.+-]*/.exec(text.slice(i))?.[0] ?? "")} (expected ${word})`);
  };
  const string = () => {
    i++; // opening quote
    for (;;) {
      if (i >= text.length) fail("unterminated string");
      const ch = text[i] as string;
      if (ch === '"') {
        i++;
        return;
      }
      if (ch.charCodeAt(0) < 0x20) fail("control character (e.g. a raw newline) inside a string");
      if (ch === "\\") {
        i++;
        const esc = text[i];
        if (esc === "u") {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 1, i + 5))) fail("bad \\u escape in a string");
          i += 5;
        } else if (esc !== undefined && '"\\/bfnrt'.includes(esc)) i++;
        else fail(`bad escape ${describe()} in a string`);
      } else i++;
    }
  };
  const number = () => {
    const match = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(text.slice(i));
    if (!match) fail(`unexpected ${describe()} (not a number)`);
    i += (match as RegExpExecArray)[0].length;
  };
  const value = (): void => {
    ws();
    const ch = text[i];
    if (ch === "{") object();
    else if (ch === "[") array();
    else if (ch === '"') string();
    else if (ch === "t") literal("true");
    else if (ch === "f") literal("false");
    else if (ch === "n") literal("null");
    else if (ch === "-" || (ch !== undefined && ch >= "0" && ch <= "9")) number();
    else if (ch === "'") fail("strings must use double quotes");
    else fail(`unexpected ${describe()} (expected a value)`);
  };
  const object = () => {
    i++;
    ws();
    if (text[i] === "}") {
      i++;
      return;
    }
    for (;;) {
      ws();
      if (text[i] !== '"') {
        fail(text[i] === "}" ? "trailing comma before '}'" : `expected a double-quoted property name`);
      }
      string();
      ws();
      if (text[i] !== ":") fail(`expected ':' after a property name, found ${describe()}`);
      i++;
      value();
      ws();
      if (text[i] === ",") {
        i++;
        continue;
      }
      if (text[i] === "}") {
        i++;
        return;
      }
      fail(`expected ',' or '}' after a property value, found ${describe()}`);
    }
  };
  const array = () => {
    i++;
    ws();
    if (text[i] === "]") {
      i++;
      return;
    }
    for (;;) {
      ws();
      if (text[i] === "]") fail("trailing comma before ']'");
      value();
      ws();
      if (text[i] === ",") {
        i++;
        continue;
      }
      if (text[i] === "]") {
        i++;
        return;
      }
      fail(`expected ',' or ']' after an array element, found ${describe()}`);
    }
  };
  try {
    ws();
    if (i >= text.length) fail("the text is empty");
    value();
    ws();
    if (i < text.length) fail(`unexpected ${describe()} after the JSON value`);
    return undefined;
  } catch (error) {
    if (error instanceof ScanError) return { offset: error.offset, reason: error.reason };
    throw error;
  }
}
