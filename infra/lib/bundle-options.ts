/**
 * How each weft function is bundled by esbuild: the construct (functions.ts, through NodejsFunction)
 * and the cold-start bench (bench/cold-start.ts) read these, so the bench measures what deploys.
 * No CDK import here: the bench loads this without aws-cdk-lib.
 */

/**
 * ESM bundles still meet CommonJS dependencies that call `require` (some AWS SDK and Powertools
 * internals do): give them one.
 */
export const ESM_REQUIRE_BANNER =
  "import { createRequire as __weftCreateRequire } from 'node:module';" +
  "const require = __weftCreateRequire(import.meta.url);";

/** The esbuild options NodejsFunction passes for the functions (ESM, node22, minified, linked source map). */
export const FUNCTION_BUNDLE = {
  format: "esm",
  target: "node22",
  platform: "node",
  mainFields: ["module", "main"],
  banner: ESM_REQUIRE_BANNER,
  minify: true,
  sourcemap: true,
  sourcesContent: false,
  /** Nothing external: the functions run the exact AWS SDK versions pinned in package-lock.json. */
  external: [],
  /** NodejsFunction's output file for ESM. */
  outfile: "index.mjs",
} as const;
