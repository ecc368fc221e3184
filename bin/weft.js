#!/usr/bin/env node
// The `weft` command: runs cli/main.ts through tsx (a dependency), so no build step is needed.
import { register } from "tsx/esm/api";

register();
globalThis.__weftCliLaunch = true;
await import("../cli/main.ts");
