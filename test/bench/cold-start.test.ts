/**
 * `npm run bench -- --cold-start` (bench/cold-start.ts) in quick mode: the four functions and the
 * minimal handler are bundled and loaded, and the table names each. The figures themselves are the
 * bench's to report (bench/results/cold-start-latest.md), not asserted here.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  bundleFunction,
  COLD_START_TARGETS,
  loadedWhen,
  MINIMAL_BUNDLE,
  measureColdStart,
  packageOf,
  renderColdStart,
  renderColdStartComparison,
} from "../../bench/cold-start.js";
import { WEFT_FUNCTION_KINDS } from "../../infra/lib/functions.js";

describe("bench: cold start", () => {
  it("names the package of an esbuild input, scoped or not, and weft's own modules", () => {
    expect(packageOf("node_modules/zod/v4/core/schemas.js")).toBe("zod");
    expect(packageOf("node_modules/@aws-sdk/client-s3/dist-es/index.js")).toBe("@aws-sdk/client-s3");
    expect(packageOf("node_modules/a/node_modules/@smithy/core/dist-es/x.js")).toBe("@smithy/core");
    expect(packageOf("shared/engine/engine.ts")).toBe("weft");
  });

  it("says when a lazy chunk loads: by its packages, else with the chunks that import it", () => {
    const chunk = (file: string, names: string[], importedBy: string[]) => ({
      file,
      bytes: 1000,
      packages: names.map((name) => ({ name, bytes: 1000 })),
      importedBy,
    });
    const chunks = [
      chunk("chunks/s3.mjs", ["@aws-sdk/client-s3"], ["index.mjs"]),
      chunk("chunks/shared.mjs", ["@smithy/core"], ["chunks/s3.mjs"]),
      chunk("chunks/other.mjs", ["weft"], ["index.mjs"]),
    ];
    expect(loadedWhen(chunks[0]!, chunks)).toBe("first payload over the inline threshold (S3)");
    expect(loadedWhen(chunks[1]!, chunks)).toBe("first payload over the inline threshold (S3)");
    expect(loadedWhen(chunks[2]!, chunks)).toBe("on first use");
  });

  it("sets each bundle's bytes and load beside its baseline's", () => {
    const row = (bundle: string, bytes: number, load: number) => ({
      bundle,
      bytes,
      entryBytes: bytes,
      totalBytes: bytes,
      runs: 3,
      loadMs: { median: load, min: load, max: load },
      loadMsWithSourceMaps: load + 1,
      cpuMs: load,
      packages: [],
      lazyChunks: [],
    });
    const run = (rows: ReturnType<typeof row>[]) => ({
      date: "2026-11-29T00:00:00.000Z",
      node: "v22.0.0",
      cores: 2,
      targets: COLD_START_TARGETS,
      rows,
    });
    const table = renderColdStartComparison(
      run([row("api", 2_076_000, 240)]),
      run([row("api", 1_117_000, 150), row("new", 1000, 10)]),
    );
    expect(table).toContain("| api | 2076 | 1117 | 240 | 150 | 241 | 151 |");
    expect(table).toContain("| new | – | 1 | – | 10 | – | 11 |");
  });

  it("bundles and loads every function and the minimal handler, and renders the table", {
    timeout: 300_000,
  }, async () => {
    const result = await measureColdStart({ quick: true });

    expect(result.rows.map((r) => r.bundle)).toEqual([...WEFT_FUNCTION_KINDS, MINIMAL_BUNDLE]);
    for (const row of result.rows) {
      expect(row.runs).toBe(3);
      expect(row.bytes).toBeGreaterThan(0);
      for (const x of [
        row.loadMs.median,
        row.loadMs.min,
        row.loadMs.max,
        row.cpuMs,
        row.loadMsWithSourceMaps,
      ]) {
        expect(Number.isFinite(x) && x > 0, String(x)).toBe(true);
      }
      // Split: the entry, then what init loads with it, then every chunk of the asset.
      expect(row.entryBytes).toBeLessThanOrEqual(row.bytes);
      expect(row.bytes).toBeLessThan(row.totalBytes);
      expect(row.totalBytes).toBe(row.bytes + row.lazyChunks.reduce((sum, c) => sum + c.bytes, 0));
      expect(row.loadMs.min).toBeLessThanOrEqual(row.loadMs.median);
      expect(row.loadMs.median).toBeLessThanOrEqual(row.loadMs.max);
      // The packages account for the whole module but the banner and esbuild's glue.
      const counted = row.packages.reduce((sum, p) => sum + p.bytes, 0);
      expect(counted).toBeGreaterThan(0);
      expect(counted).toBeLessThanOrEqual(row.bytes);
    }
    // Every bundle carries the DynamoDB client (the minimal handler is nothing else).
    for (const row of result.rows)
      expect(row.packages.map((p) => p.name)).toContain("@aws-sdk/client-dynamodb");

    const table = renderColdStart(result);
    expect(table).toContain(
      "| bundle | KB at init | entry KB | all chunks KB | load ms (median) | min–max ms | CPU ms | load ms with source maps | top 5 packages at init (KB) |",
    );
    for (const row of result.rows)
      expect(table.some((line) => line.startsWith(`| ${row.bundle} | `))).toBe(true);
    // The worker's lazy chunks, each with when it loads.
    expect(table).toContain("| bundle | chunk KB | loads on | top 3 packages (KB) |");
    expect(table.some((line) => line.startsWith("| worker | ") && line.includes("first `http` task"))).toBe(
      true,
    );
  });

  it("bundles into each function only what it runs (issue 27)", { timeout: 300_000 }, async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "weft-bundles-"));
    try {
      for (const kind of WEFT_FUNCTION_KINDS) {
        const { packages, allPackages, allInputs, lazyChunks } = await bundleFunction(
          kind,
          path.join(dir, kind),
        );
        const atInit = packages.map((p) => p.name);
        const inAsset = allPackages.map((p) => p.name);
        // zod's locales: only English, which zod configures itself (import * as z, not { z }).
        expect(
          allInputs.filter((input) => /zod\/v4\/locales\/(?!en\.js)/.test(input)),
          kind,
        ).toEqual([]);
        // The http task's runtime (undici, the secret stores) and the lambda task's client: the
        // worker's alone, and even there loaded on first use, not at init.
        const workerOnly = [
          "undici",
          "@aws-sdk/client-lambda",
          "@aws-sdk/client-ssm",
          "@aws-sdk/client-secrets-manager",
        ];
        if (kind === "worker") expect(inAsset).toEqual(expect.arrayContaining(workerOnly));
        else
          expect(
            inAsset.filter((name) => workerOnly.includes(name)),
            kind,
          ).toEqual([]);
        // Loaded on first use by every function: S3 (payloads over the inline threshold), the
        // credential providers Lambda's environment never needs.
        const lazy = [
          ...workerOnly,
          "@aws-sdk/client-s3",
          "@aws-sdk/nested-clients",
          "@aws-sdk/credential-provider-ini",
        ];
        expect(
          atInit.filter((name) => lazy.includes(name)),
          kind,
        ).toEqual([]);
        expect(lazyChunks.length, kind).toBeGreaterThan(0);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
