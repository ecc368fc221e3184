/**
 * The web console's build: `vite build console` (npm run build:console) writes console/dist, which
 * the local runtime and `weft console` serve. `npx vite console` serves it for development, its API
 * calls proxied to the local runtime (WEFT_API_URL or http://127.0.0.1:3000).
 */
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";
import { API_ROUTES } from "../shared/http/contract.js";

const root = fileURLToPath(new URL(".", import.meta.url));
const api = process.env.WEFT_API_URL || "http://127.0.0.1:3000";
// Every first path segment of the contract's routes (/workflows, /executions, /dlq, …).
const apiPrefixes = [...new Set(Object.values(API_ROUTES).map((route) => `/${route.path.split("/")[1]}`))];

export default defineConfig({
  root,
  // Relative asset URLs: the same build works at `/` and behind any prefix.
  base: "./",
  logLevel: "warn",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    // elkjs's layout worker is one large script, loaded only by the graph views.
    chunkSizeWarningLimit: 2048,
  },
  server: {
    proxy: Object.fromEntries(apiPrefixes.map((prefix) => [prefix, { target: api, changeOrigin: true }])),
  },
});
