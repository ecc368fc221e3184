/** The redaction of injected secret values (shared/domain/redact.ts): its forms, its length rule, cuts. */
import { describe, expect, it } from "vitest";
import { RetryableError, TerminalError } from "../../shared/domain/errors.js";
import { MIN_REDACTED_LENGTH, REDACTED, secretForms, secretRedactor } from "../../shared/domain/redact.js";

const basic = `Basic ${Buffer.from("alice:open-sesame").toString("base64")}`;

describe("secretForms", () => {
  it("derives the credentials after a scheme, and for Basic the decoded pair and the password", () => {
    const forms = secretForms(basic);
    expect(forms).toContain(basic);
    expect(forms).toContain(Buffer.from("alice:open-sesame").toString("base64"));
    expect(forms).toContain("alice:open-sesame");
    expect(forms).toContain("open-sesame");
    // The user name alone is an identifier, not a secret.
    expect(forms).not.toContain("alice");
  });

  it("adds the JSON-escaped, URL-encoded and HTML-escaped forms", () => {
    const forms = secretForms('Bearer a"b/c d<e>');
    expect(forms).toContain('a\\"b/c d<e>');
    expect(forms).toContain(encodeURIComponent('a"b/c d<e>'));
    expect(forms).toContain(encodeURIComponent('a"b/c d<e>').replace(/%20/g, "+"));
    expect(forms).toContain("a&quot;b/c d&lt;e&gt;");
  });

  it(`leaves out values shorter than ${MIN_REDACTED_LENGTH} characters`, () => {
    expect(secretForms("abc12")).toEqual([]);
    expect(secretForms("Token abc")).toContain("Token abc");
    expect(secretForms("Token abc")).not.toContain("abc");
    expect(MIN_REDACTED_LENGTH).toBeGreaterThan(REDACTED.length);
  });
});

describe("secretRedactor", () => {
  const redactor = secretRedactor([basic, "Bearer tok-123456", "short"]);

  it("replaces every form in a text, the longest first", () => {
    expect(redactor.text(`got ${basic} and Bearer tok-123456 and tok-123456 and short`)).toBe(
      "got *** and *** and *** and short",
    );
    expect(redactor.text('{"auth":"alice:open-sesame"}')).toBe('{"auth":"***"}');
  });

  it("redacts the strings, keys and spelled-out numbers of a value, keeping the rest", () => {
    const numeric = secretRedactor(["12345678"]);
    expect(numeric.value({ a: [12345678, 1234, "x 12345678 y"], "12345678": true, b: null })).toEqual({
      a: [REDACTED, 1234, "x *** y"],
      [REDACTED]: true,
      b: null,
    });
    expect(redactor.value({ status: 401, body: { who: "alice" } })).toEqual({
      status: 401,
      body: { who: "alice" },
    });
  });

  it("redacts a trailing fragment of a secret where a text was cut", () => {
    expect(redactor.cutText("denied: Bearer tok-12")).toBe("denied: ***");
    expect(redactor.cutText("denied: open-se")).toBe("denied: ***");
    // Two characters say nothing: kept.
    expect(redactor.cutText("denied: op")).toBe("denied: op");
    // Not cut: no fragment is looked for.
    expect(redactor.text("denied: open-se")).toBe("denied: open-se");
  });

  it("redacts an error in place, keeping its class, code and retry hint, and its causes", () => {
    const cause = new Error("socket said open-sesame");
    const terminal = new TerminalError(`answered 401: ${basic}`, { code: "Denied", cause });
    expect(redactor.error(terminal)).toBe(terminal);
    expect(terminal).toBeInstanceOf(TerminalError);
    expect(terminal.name).toBe("Denied");
    expect(terminal.message).toBe("answered 401: ***");
    expect(terminal.stack).not.toContain("open-sesame");
    expect(cause.message).toBe("socket said ***");

    const retryable = new RetryableError("503: tok-123456", { retryAfterSeconds: 5 });
    redactor.error(retryable);
    expect(retryable.message).toBe("503: ***");
    expect(retryable.retryAfterSeconds).toBe(5);
    expect(redactor.error("thrown tok-123456")).toBe("thrown ***");
  });

  it("is the identity when no secret is long enough", () => {
    const none = secretRedactor(["abc"]);
    expect(none.empty).toBe(true);
    const value = { a: "abc" };
    expect(none.value(value)).toBe(value);
    expect(none.text("abc")).toBe("abc");
  });
});
