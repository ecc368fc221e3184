/**
 * Large inputs through the real `weft` binary and the in-memory local runtime: an input over the
 * 5 MiB of a request is uploaded (POST /payloads, then a PUT to the runtime's /_blobs/) and sent as
 * inputRef; one over 10 MiB, or a file that is not JSON, is refused before any request.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalRuntime } from "../../local/runtime.js";
import type { BlobStore } from "../../shared/ports.js";
import { type ApiClient, apiClient } from "../support/runtime.js";
import { startExampleRuntime, weft } from "./support.js";

const MiB = 1024 * 1024;

let runtime: LocalRuntime;
let api: ApiClient;
let dir: string;
let workflowFile: string;
/** Upload tickets the engine handed out (`POST /payloads`). */
let uploads = 0;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "weft-cli-payloads-"));
  workflowFile = path.join(dir, "workflow.json");
  await writeFile(workflowFile, JSON.stringify({ name: "cli-pass", nodes: [{ id: "copy", type: "pass" }] }));
  runtime = await startExampleRuntime({
    wrapPorts: (ports) => ({ ...ports, blobs: countingUploads(ports.blobs) }),
  });
  api = apiClient(runtime.url);
});
afterAll(async () => {
  await runtime?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function countingUploads(blobs: BlobStore): BlobStore {
  return new Proxy(blobs, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        if (property === "uploadRequest") uploads += 1;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/**
 * A JSON file of at least `bytes` bytes (UTF-8) written to the temp folder: rows of text with
 * multi-byte characters, so its size in bytes and in UTF-16 units differ. Returns its path and text.
 */
async function jsonFile(name: string, bytes: number): Promise<{ file: string; text: string }> {
  const rows: string[] = [];
  let size = 2 + '"rows":[]'.length;
  for (let i = 0; size < bytes; i++) {
    const row = JSON.stringify({ i, text: `row ${i}: ${"héllo wörld € 😀 ".repeat(50)}` });
    rows.push(row);
    size += Buffer.byteLength(row, "utf8") + 1;
  }
  const text = `{"rows":[${rows.join(",")}]}`;
  const file = path.join(dir, name);
  await writeFile(file, text);
  return { file, text };
}

describe("a large --input", () => {
  it("run --json: an 8 MiB input is uploaded, sent as inputRef, and is the execution's input", async () => {
    const { file, text } = await jsonFile("big.json", 8 * MiB);
    const before = uploads;
    const result = await weft(["run", workflowFile, "--input", `@${file}`, "--api", runtime.url, "--json"]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    // One JSON document on stdout, nothing else.
    const view = JSON.parse(result.stdout) as { executionId: string; status: string; input: unknown };
    expect(view.status).toBe("SUCCEEDED");
    // The local runtime refuses bodies over 6 MiB: this input could only have arrived by upload.
    expect(uploads).toBe(before + 1);

    const expected = JSON.parse(text) as unknown;
    // The watch polled with references; what it prints at the end is the API's own answer, inlined here.
    expect(view.input).toEqual(expected);
    const { body } = await api.call("GET", `/executions/${view.executionId}`);
    expect(body.input).toEqual(expected);
    expect(body.output).toEqual({ copy: expected });

    // status for a person sums the 8 MiB output up instead of printing it.
    const status = await weft(["status", view.executionId, "--api", runtime.url]);
    expect(status.code).toBe(0);
    expect(status.stdout.length).toBeLessThan(2000);
    expect(status.stdout).toMatch(
      /^output: 8(\.\d)? MiB, too large to show here \(weft status \S+ --json prints it\)$/m,
    );
  });

  it("trigger uploads it too, with a note on stderr for a person", async () => {
    const { file, text } = await jsonFile("big-trigger.json", 5.5 * MiB);
    const created = await api.call("POST", "/executions", { workflow: "cli-pass", start: false });
    expect(created.status).toBe(202);
    const id = created.body.executionId as string;
    const before = uploads;

    const result = await weft(["trigger", id, "--input", `@${file}`, "--api", runtime.url]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^execution ${id} (RUNNING|SUCCEEDED)`));
    expect(result.stderr).toMatch(/^uploading the input \(5\.[5-9] MiB, over the 5 MiB of a request\)…$/m);
    expect(uploads).toBe(before + 1);
    const ended = await api.waitForEnd(id);
    expect(ended.status).toBe("SUCCEEDED");
    expect(ended.input).toEqual(JSON.parse(text));
  });

  it("a 5 KiB input goes in the request itself", async () => {
    const { file, text } = await jsonFile("small.json", 5 * 1024);
    const before = uploads;
    const result = await weft(["run", workflowFile, "--input", `@${file}`, "--api", runtime.url]);
    expect(result.code).toBe(0);
    expect(result.stderr).not.toContain("upload");
    expect(uploads).toBe(before);
    const id = /^watching execution (\S+) /m.exec(result.stdout)?.[1];
    expect(id).toBeDefined();
    const { body } = await api.call("GET", `/executions/${id}`);
    expect(body.input).toEqual(JSON.parse(text));
  });

  it("integers and decimals beyond a double keep every digit: --input, the output, a variable, status", async () => {
    const text =
      '{"id":12345678901234567891,"big":123456789012345678901234567890,"d":0.12345678901234567890123}';
    const result = await weft(["run", workflowFile, "--input", text, "--api", runtime.url]);
    expect(result.code, result.stderr).toBe(0);
    // The person's view prints the output with its digits.
    expect(result.stdout).toContain('"id": 12345678901234567891');
    expect(result.stdout).toContain('"big": 123456789012345678901234567890');
    const id = /^watching execution (\S+) /m.exec(result.stdout)?.[1];
    expect(id).toBeDefined();
    // As the API stores it: the raw response text, not a rounding JSON.parse.
    const response = await fetch(`${runtime.url}/executions/${id}`);
    const raw = await response.text();
    expect(raw).toContain(
      '"input":{"id":12345678901234567891,"big":123456789012345678901234567890,"d":0.12345678901234567890123}',
    );
    // A variable assigned from it (an expression that only moves the value) keeps its digits too,
    // and `weft status` shows the execution's variables.
    const assigning = path.join(dir, "assigning.json");
    await writeFile(
      assigning,
      JSON.stringify({
        name: "cli-assign",
        nodes: [{ id: "copy", type: "pass", assign: { lastId: "{% input.id %}" } }],
      }),
    );
    const withVars = await weft(["run", assigning, "--input", text, "--api", runtime.url]);
    expect(withVars.code, withVars.stderr).toBe(0);
    const assignedId = /^watching execution (\S+) /m.exec(withVars.stdout)?.[1];
    const shown = await weft(["status", String(assignedId), "--api", runtime.url]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^vars:\n\{\n {2}"lastId": 12345678901234567891\n\}$/m);
    const status = await weft(["status", String(id), "--api", runtime.url, "--json"]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain("12345678901234567891");
    expect(status.stdout).toContain("0.12345678901234567890123");
    expect(status.stdout).not.toContain("isLosslessNumber");
  });

  it("an 11 MiB input fails before any request, naming the 10 MiB limit", async () => {
    const { file } = await jsonFile("huge.json", 11 * MiB);
    const before = uploads;
    const result = await weft(["run", workflowFile, "--input", `@${file}`, "--api", runtime.url]);
    expect(result.code).toBe(1);
    // Not even the workflow was registered.
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(
      new RegExp(
        `^weft: the input \\(${escapeRegExp(file)}\\) is 11(\\.\\d)? MiB \\(\\d+ bytes\\) as JSON text; an execution input is at most 10 MiB \\(10485760 bytes\\)$`,
        "m",
      ),
    );
    expect(uploads).toBe(before);
  });

  it("a file that is not JSON fails naming the file and the position", async () => {
    const file = path.join(dir, "not-json.json");
    await writeFile(file, '{"rows": [1, 2,, 3]}');
    const before = uploads;
    const result = await weft(["start", "cli-pass", "--input", `@${file}`, "--api", runtime.url, "--json"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`weft: ${file}: invalid JSON at line 1, column 16`);
    expect(JSON.parse(result.stdout)).toMatchObject({ error: { code: "InvalidJson" } });
    expect(uploads).toBe(before);
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
