/**
 * The functions are bundled split (infra/lib/bundle-options.ts): code reached by `import()` goes
 * into chunks beside the entry. Two things must still work from a chunk: the isolated expression
 * evaluator, whose thread runs the very file its code is in (shared/adapters/expressions/isolated.ts),
 * and the S3 blob store the functions load on first use (shared/config/function-engine.ts).
 */
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  FUNCTION_CHUNK_DIR,
  FUNCTION_ENTRY_FILE,
  functionBuildOptions,
} from "../../infra/lib/bundle-options.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const source = (file: string) => JSON.stringify(path.join(ROOT, file).split(path.sep).join("/"));

const ENTRY = `
import { LazyBlobStore } from ${source("shared/adapters/s3/lazy.ts")};
export async function evaluate(value, input) {
  const { sharedIsolatedExpressions } = await import(${source("shared/adapters/expressions/isolated.ts")});
  const scope = { input, deps: {}, execution: { id: "ex", workflow: "wf", version: 1 } };
  return sharedIsolatedExpressions().resolve(value, scope, { now: () => 0 });
}
export async function missingBlob(endpoint) {
  const config = { payloadBucket: "weft-split-bundle-test" };
  const store = new LazyBlobStore(async () =>
    (await import(${source("shared/config/s3-clients.ts")})).createS3BlobStore(config, {
      endpoint,
      region: "us-east-1",
      credentials: { accessKeyId: "test", secretAccessKey: "test" },
      maxAttempts: 1,
    }),
  );
  return store.get("no-such-key").catch((error) => "failed: " + error.name + ": " + error.message);
}
`;

describe("a split function bundle", () => {
  let dir = "";
  let bundle: {
    evaluate(value: unknown, input: unknown): Promise<unknown>;
    missingBlob(endpoint: string): Promise<unknown>;
  };
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "weft-split-"));
    const entry = path.join(dir, "entry.mjs");
    await writeFile(entry, ENTRY);
    await build(functionBuildOptions({ entry, outdir: path.join(dir, "out"), absWorkingDir: ROOT }));
    bundle = await import(pathToFileURL(path.join(dir, "out", FUNCTION_ENTRY_FILE)).href);
  }, 120_000);
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("puts what import() reaches into chunks beside the entry", async () => {
    const chunks = await readdir(path.join(dir, "out", FUNCTION_CHUNK_DIR));
    expect(chunks.some((file) => file.startsWith("isolated-") && file.endsWith(".mjs"))).toBe(true);
    expect(chunks.some((file) => file.startsWith("s3-clients-") && file.endsWith(".mjs"))).toBe(true);
  });

  it("evaluates expressions in the isolated thread, which runs the chunk its code is in", async () => {
    expect(await bundle.evaluate({ total: "{% $sum(input.items) %}" }, { items: [1, 2, 3] })).toEqual({
      total: 6,
    });
  });

  it("loads the S3 blob store from its chunk on first use", async () => {
    // Nothing listens on port 9: the client loaded and made its call, which could not connect.
    const outcome = await bundle.missingBlob("http://127.0.0.1:9");
    expect(String(outcome)).toMatch(/^failed: /);
    expect(String(outcome)).not.toMatch(/ERR_MODULE_NOT_FOUND|Cannot find module/);
  });
});
