/**
 * How each weft function is bundled by esbuild: the construct (functions.ts, which runs esbuild
 * itself at synth time) and the cold-start bench (bench/cold-start.ts) both build with
 * functionBuildOptions, so the bench measures what deploys.
 * No CDK import here: the bench loads this without aws-cdk-lib.
 *
 * Code splitting: what a function reaches only through `import()` (undici for the first `http`
 * request, the S3 client for the first payload over the inline threshold, the SDK's credential
 * providers Lambda never asks for...) goes into chunks beside the entry, loaded when first used, so
 * a new Lambda instance loads at init the entry and the chunks it imports statically, and nothing
 * else. NodejsFunction writes one file and cannot split, hence the construct's own esbuild call.
 */
import type { BuildOptions } from "esbuild";

/**
 * ESM bundles still meet CommonJS dependencies that call `require` (some AWS SDK and Powertools
 * internals do): give them one. Every output file (entry and chunks) starts with it.
 */
export const ESM_REQUIRE_BANNER =
  "import { createRequire as __weftCreateRequire } from 'node:module';" +
  "const require = __weftCreateRequire(import.meta.url);";

/** The entry module in a function's asset: Lambda's handler is `index.handler`. */
export const FUNCTION_ENTRY_FILE = "index.mjs";
/** Where the chunks go, beside the entry. */
export const FUNCTION_CHUNK_DIR = "chunks";

/**
 * The esbuild options of one function (ESM, node22, minified, split, linked source maps without
 * sources): `entry` bundled to `outdir/index.mjs`, its lazily imported code to `outdir/chunks/`.
 * Nothing external: the functions run the exact AWS SDK versions pinned in package-lock.json, not
 * whatever the Lambda runtime happens to ship.
 */
export function functionBuildOptions(options: {
  entry: string;
  outdir: string;
  /** The folder esbuild resolves packages from (the project's). */
  absWorkingDir: string;
}): BuildOptions & { metafile: true } {
  return {
    entryPoints: { index: options.entry },
    absWorkingDir: options.absWorkingDir,
    outdir: options.outdir,
    bundle: true,
    splitting: true,
    format: "esm",
    target: "node22",
    platform: "node",
    mainFields: ["module", "main"],
    outExtension: { ".js": ".mjs" },
    chunkNames: `${FUNCTION_CHUNK_DIR}/[name]-[hash]`,
    banner: { js: ESM_REQUIRE_BANNER },
    minify: true,
    // Linked maps: esbuild adds the sourceMappingURL comment that --enable-source-maps follows.
    sourcemap: "linked",
    sourcesContent: false,
    external: [],
    metafile: true,
    logLevel: "silent",
  };
}
