/**
 * vitest globalSetup: the web console's build (console/dist) for the browser tests and for every
 * runtime the tests start (which serve it at `/`): built when missing or older than its sources, so
 * a change to the console is always what the tests see.
 */
import { ensureConsoleBuilt } from "../../console/build.js";

export default async function setup(): Promise<void> {
  const state = await ensureConsoleBuilt((message) => console.log(`[console] ${message}`));
  if (state === "unavailable") throw new Error("the web console could not be built (npm run build:console)");
}
