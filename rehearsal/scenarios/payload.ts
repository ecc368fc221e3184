/**
 * A 5 MiB input through the bundled handlers: uploaded with POST /payloads (a presigned S3 PUT,
 * signed by the api function's role and checked against it), started by inputRef, passed through a
 * node whose output (> 4 KiB) is stored as an S3 blob (the same value: no new write), then through
 * the custom `uppercase` task (a new 5 MiB value the worker writes), and read back with ?resolve=true — inline
 * where the response has room, else through the download URLs it gives — byte for byte. An inputRef
 * that was never uploaded is a 400 (S3's 404, which needs the api's s3:ListBucket).
 */
import { createHash } from "node:crypto";
import type { RehearsalContext, Scenario } from "./context.js";
import { check, describe, expectStatus, nodeOf, register, start, waitForEnd } from "./helpers.js";

const MiB = 1024 * 1024;
const INPUT_BYTES = 5 * MiB;

type Ref = {
  sha256?: string;
  bytes: number;
  url?: string;
  parts?: Record<string, { value: unknown } | { ref: Ref }>;
};

/** A JSON object whose text (as JSON.stringify writes it) is exactly `bytes` bytes of UTF-8, with some unicode. */
export function exactJsonText(bytes: number): string {
  const base = { id: "rehearsal", unicode: "ünïcödé · ✓ · 𝄞", text: "ünïcödé · ✓ · " };
  const empty = Buffer.byteLength(JSON.stringify(base));
  const text = JSON.stringify({ ...base, text: base.text + "x".repeat(bytes - empty) });
  if (Buffer.byteLength(text) !== bytes) throw new Error("could not build an input of the exact size");
  return text;
}

const sha = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

async function download(url: string): Promise<string> {
  const response = await fetch(url, { signal: AbortSignal.timeout(60_000) });
  const text = await response.text();
  check(response.ok, `download answered HTTP ${response.status}`);
  return text;
}

/** The value a view gives inline, or the one its reference points to (parts assembled). */
async function materialize(
  value: unknown,
  ref: Ref | undefined,
): Promise<{ value: unknown; downloaded: number }> {
  if (ref === undefined) return { value, downloaded: 0 };
  if (ref.url) {
    const text = await download(ref.url);
    if (ref.sha256) check(sha(text) === ref.sha256, "a downloaded value does not match its sha256");
    return { value: JSON.parse(text), downloaded: 1 };
  }
  if (ref.parts) {
    const out: Record<string, unknown> = {};
    let downloaded = 0;
    for (const [key, part] of Object.entries(ref.parts)) {
      const got =
        "ref" in part ? await materialize(undefined, part.ref) : { value: part.value, downloaded: 0 };
      out[key] = got.value;
      downloaded += got.downloaded;
    }
    return { value: out, downloaded };
  }
  throw new Error(`a reference with neither url nor parts: ${JSON.stringify(ref)}`);
}

async function missingUpload(ctx: RehearsalContext, workflow: string): Promise<void> {
  const ticket = expectStatus(
    await ctx.api.post<{ inputRef: string }>("/payloads", { bytes: 100 }),
    201,
    "POST /payloads",
  );
  const answer = await ctx.api.post("/executions", { workflow, inputRef: ticket.inputRef });
  expectStatus(answer, 400, "POST /executions with an inputRef never uploaded");
}

export const payloadScenario: Scenario = {
  name: "5 MiB payload: POST /payloads upload, inputRef, > 4 KiB output as an S3 blob, read back exactly",
  timeoutMs: 180_000,
  async run(ctx) {
    const name = ctx.unique("large");
    await register(ctx, {
      name,
      nodes: [
        { id: "copy", type: "pass" },
        { id: "shout", type: "uppercase", dependsOn: ["copy"], params: {} },
      ],
    });
    const text = exactJsonText(INPUT_BYTES);
    const ticket = expectStatus(
      await ctx.api.post<{
        inputRef: string;
        upload: { url: string; method: string; headers: Record<string, string> };
      }>("/payloads", { bytes: Buffer.byteLength(text) }),
      201,
      "POST /payloads",
    );
    const put = await fetch(ticket.upload.url, {
      method: ticket.upload.method,
      headers: ticket.upload.headers,
      body: text,
      signal: AbortSignal.timeout(120_000),
    });
    check(put.ok, `the presigned upload answered HTTP ${put.status}: ${(await put.text()).slice(0, 200)}`);
    const executionId = await start(ctx, { workflow: name, inputRef: ticket.inputRef });
    const ended = await waitForEnd(ctx, executionId, 150_000);
    check(ended.status === "SUCCEEDED", `ended ${ended.status}: ${JSON.stringify(ended.error)}`);

    const byReference = await describe(ctx, executionId, false);
    const ref = nodeOf(byReference, "copy").outputRef;
    check(ref !== undefined && ref.bytes > 4096, "the node's output is not kept as a blob reference");

    const view = await describe(ctx, executionId, true);
    const input = await materialize(view.input, view.inputRef);
    const copy = nodeOf(view, "copy");
    const output = await materialize(copy.output, copy.outputRef);
    const shout = nodeOf(view, "shout");
    const shouted = await materialize(shout.output, shout.outputRef);
    const result = await materialize(view.output, view.outputRef);
    const expectedShout = JSON.stringify({ text: (JSON.parse(text) as { text: string }).text.toUpperCase() });
    check(JSON.stringify(input.value) === text, "the input read back differs");
    check(JSON.stringify(output.value) === text, "the pass node's output differs from the input");
    check(JSON.stringify(shouted.value) === expectedShout, "the uppercase node's output differs");
    check(JSON.stringify(result.value) === `{"shout":${expectedShout}}`, "the execution's output differs");
    await missingUpload(ctx, name);
    const downloads = input.downloaded + output.downloaded + shouted.downloaded + result.downloaded;
    return `5 MiB uploaded, passed and uppercased, read back exactly (${downloads} values by download URL); a missing upload is a 400`;
  },
};
