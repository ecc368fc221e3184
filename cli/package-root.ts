/**
 * weft's own package: where it is installed, and its package.json. The CLI runs from source
 * (cli/*.ts) in this repository and compiled (dist/cli/*.js) in the package, so the root is found by
 * walking up to the package.json that names it, not by a fixed number of `..`.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const PACKAGE_NAME = "weft-orchestrator";

export interface OwnPackageJson {
  name: string;
  version: string;
  engines?: { node?: string };
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

let found: { root: string; json: OwnPackageJson } | undefined;

function locate(): { root: string; json: OwnPackageJson } {
  if (found) return found;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const file = path.join(dir, "package.json");
    if (existsSync(file)) {
      const json = JSON.parse(readFileSync(file, "utf8")) as OwnPackageJson;
      if (json.name === PACKAGE_NAME) {
        found = { root: dir, json };
        return found;
      }
    }
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`weft: cannot find the ${PACKAGE_NAME} package this CLI belongs to`);
    dir = parent;
  }
}

/** The folder weft's package.json is in. */
export const packageRoot = (): string => locate().root;
/** weft's package.json: its version, and the versions of what it is built and tested with. */
export const ownPackageJson = (): OwnPackageJson => locate().json;

/** The version weft itself depends on or is developed with, for a project `weft init` makes. */
export function pinnedVersion(dependency: string): string {
  const json = ownPackageJson();
  const version = json.dependencies?.[dependency] ?? json.devDependencies?.[dependency];
  if (version === undefined) throw new Error(`weft: ${PACKAGE_NAME} does not pin ${dependency}`);
  return version;
}
