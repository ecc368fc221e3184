/** `npm start`: the local runtime from this repository's sources (local/serve.ts; `weft dev` is the same). */
import { serveLocalRuntime } from "./serve.js";

await serveLocalRuntime(process.argv.slice(2), "npm start --");
