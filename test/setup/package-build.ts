/**
 * vitest globalSetup: the package's build (dist/), which `bin/weft.js` runs, built when missing or
 * older than its sources, so the CLI the tests spawn is always the code under test.
 */
import { ensurePackageBuilt } from "../../tools/build-package.js";

export default async function setup(): Promise<void> {
  await ensurePackageBuilt((line) => console.log(`[package] ${line}`));
}
