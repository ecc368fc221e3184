/** How `weft status` and `weft watch` show values the API answered as references (pure functions, no runtime). */
import { describe, expect, it } from "vitest";
import type { ExecutionView } from "../../cli/client.js";
import { formatSize, renderExecution, resultText } from "../../cli/render.js";

const plain = { color: false };
const sha = "ab12cd34ef56".padEnd(64, "0");
const other = "99ff".padEnd(64, "1");
const url = "https://weft-payloads.s3.amazonaws.com/ex/e-1/x.json?X-Amz-Signature=abc";

function view(fields: Partial<ExecutionView>): ExecutionView {
  return {
    executionId: "e-1",
    workflow: "big",
    version: 1,
    status: "SUCCEEDED",
    createdAt: "2026-01-02T03:04:05.000Z",
    nodes: [],
    ...fields,
  };
}

describe("formatSize", () => {
  it("speaks bytes, KiB and MiB, whole numbers without a decimal", () => {
    expect(formatSize(1)).toBe("1 byte");
    expect(formatSize(512)).toBe("512 bytes");
    expect(formatSize(5 * 1024)).toBe("5 KiB");
    expect(formatSize(4608)).toBe("4.5 KiB");
    expect(formatSize(10 * 1024 * 1024)).toBe("10 MiB");
    expect(formatSize(8.04 * 1024 * 1024)).toBe("8.0 MiB");
  });
});

describe("references", () => {
  it("status shows the input, a node's output and the execution's output as size, hash and download URL", () => {
    const text = renderExecution(
      plain,
      view({
        inputRef: { sha256: sha, bytes: 8 * 1024 * 1024 + 100, url },
        outputRef: {
          bytes: 8 * 1024 * 1024 + 120,
          parts: { copy: { ref: { sha256: sha, bytes: 8 * 1024 * 1024 + 100 } }, tag: { value: { a: 1 } } },
        },
        nodes: [
          {
            id: "copy",
            type: "pass",
            status: "COMPLETED",
            attempt: 1,
            outputRef: { sha256: sha, bytes: 8 * 1024 * 1024 + 100, url },
          },
          { id: "tag", type: "pass", status: "COMPLETED", attempt: 1, output: { a: 1 } },
        ],
      }),
      Date.now(),
      undefined,
    );
    const lines = text.split("\n");
    expect(lines).toContain(`  input: 8.0 MiB (sha256 ab12cd34ef56…), download: ${url}`);
    const copyRow = lines.findIndex((line) => /^ {2}✔ copy /.test(line));
    expect(lines[copyRow + 1]).toBe(`      output: 8.0 MiB (sha256 ab12cd34ef56…), download: ${url}`);
    // A small output is not repeated under its node (--json has it).
    expect(lines[copyRow + 2]).toMatch(/^ {2}✔ tag /);
    expect(lines.slice(-3)).toEqual([
      "output: 8.0 MiB in 2 parts:",
      "  copy: 8.0 MiB (sha256 ab12cd34ef56…)",
      '  tag: {"a":1}',
    ]);
  });

  it("an execution output kept whole, and parts nested in parts, on the watch's last lines", () => {
    expect(resultText(plain, view({ outputRef: { sha256: other, bytes: 6 * 1024 * 1024 } }))).toBe(
      "output: 6 MiB (sha256 99ff11111111…)",
    );
    const nested = resultText(
      plain,
      view({
        outputRef: {
          bytes: 7 * 1024 * 1024,
          parts: {
            join: {
              ref: {
                bytes: 7 * 1024 * 1024,
                parts: { a: { ref: { sha256: other, bytes: 7 * 1024 * 1024, url } }, b: { value: null } },
              },
            },
          },
        },
      }),
    );
    expect(nested.split("\n")).toEqual([
      "output: 7 MiB in 1 part:",
      "  join: 7 MiB in 2 parts:",
      `    a: 7 MiB (sha256 99ff11111111…), download: ${url}`,
      "    b: null",
    ]);
  });

  it("a large inline output (the local runtime inlines everything) is summed up, not printed", () => {
    const output = { copy: "x".repeat(200_000) };
    expect(resultText(plain, view({ output }))).toBe(
      "output: 195.3 KiB, too large to show here (weft status e-1 --json prints it)",
    );
    expect(resultText(plain, view({ output: { copy: 1 } }))).toBe('output:\n{\n  "copy": 1\n}');
  });
});

describe("stopping nodes", () => {
  it("status shows a running node told to stop as STOPPING, in its row and in the counts", () => {
    const text = renderExecution(
      plain,
      view({
        nodes: [
          { id: "first", type: "noop", status: "COMPLETED", attempt: 1 },
          { id: "slow", type: "sleep", status: "RUNNING", attempt: 1, stopping: true },
        ],
      }),
      Date.now(),
      undefined,
    );
    const lines = text.split("\n");
    expect(lines.find((line) => line.includes(" slow "))).toMatch(/◐ slow\s+STOPPING/);
    expect(lines[0]).toContain("1 completed, 1 stopping");
  });
});

describe("nodes waiting for a concurrency slot", () => {
  it("status says what a QUEUED node waits for, and on which key", () => {
    const text = renderExecution(
      plain,
      view({
        nodes: [
          {
            id: "sync",
            type: "sleep",
            status: "QUEUED",
            attempt: 1,
            waitingFor: { reason: "concurrency", key: "acme" },
          },
          {
            id: "all",
            type: "sleep",
            status: "QUEUED",
            attempt: 1,
            waitingFor: { reason: "concurrency", key: "" },
          },
        ],
      }),
      Date.now(),
      undefined,
    );
    const lines = text.split("\n");
    expect(lines.find((line) => line.includes(" sync "))).toMatch(
      /sync\s+QUEUED\s+attempt 1\s+waiting for a concurrency slot \(key acme\)$/,
    );
    expect(lines.find((line) => line.includes(" all "))).toMatch(/waiting for a concurrency slot$/);
  });
});
