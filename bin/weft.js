#!/usr/bin/env node
// The `weft` command: the compiled CLI in dist/ (`npm run build`, which `npm ci` runs in this
// repository through `prepare`), so starting it compiles nothing.
import { existsSync } from "node:fs";

const main = new URL("../dist/cli/main.js", import.meta.url);
if (!existsSync(main)) {
  console.error("weft: the CLI is not built (dist/ is missing): run `npm run build` in weft's folder");
  process.exit(1);
}
globalThis.__weftCliLaunch = true;
await import(main.href);
