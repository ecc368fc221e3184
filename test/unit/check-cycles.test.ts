/**
 * tools/check-cycles.ts, the CI check that shared/engine's modules import one another in no circle:
 * it finds a planted cycle (type-only, through a module outside the directory, by re-export) and
 * fails the run with the cycle named; it ignores imports in comments; and shared/engine has none.
 */
import { spawnSync } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { findCycles, importedSpecifiers } from "../../tools/check-cycles.js";

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const SCRIPT = path.join(REPO_ROOT, "tools/check-cycles.ts");
/** tsx by its own path: the planted modules' directory, the runs' cwd, has no node_modules. */
const TSX = path.join(REPO_ROOT, "node_modules", ".bin", "tsx");

let root: string;

beforeEach(async () => {
  root = await mkdtemp(path.join(tmpdir(), "weft-cycles-"));
  await mkdir(path.join(root, "mods"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function write(files: Record<string, string>): Promise<void> {
  for (const [name, text] of Object.entries(files)) await writeFile(path.join(root, name), text);
}

describe("check-cycles", () => {
  it("fails on two modules that import each other, a type-only import included, naming them", async () => {
    await write({
      "mods/a.ts": 'import type { B } from "./b.js";\nexport interface A { b?: B }\n',
      "mods/b.ts": 'import {\n  type A,\n} from "./a.js";\nexport type B = A;\n',
      "mods/c.ts": 'import type { A } from "./a.js";\nexport type C = A;\n',
    });
    expect(findCycles("mods", root)).toEqual([
      { cycle: ["mods/a.ts", "mods/b.ts"], knot: ["mods/a.ts", "mods/b.ts"] },
    ]);

    const run = spawnSync(process.execPath, [TSX, SCRIPT, "mods"], {
      cwd: root,
      encoding: "utf8",
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain("import cycle: mods/a.ts > mods/b.ts > mods/a.ts");
  });

  it("passes, exit code 0, when the imports only go down", async () => {
    await write({
      "mods/a.ts": 'import { b } from "./b.js";\nexport const a = b;\n',
      "mods/b.ts": 'import { c } from "./c.js";\nexport const b = c;\n',
      "mods/c.ts": "export const c = 1;\n",
    });
    expect(findCycles("mods", root)).toEqual([]);
    const run = spawnSync(process.execPath, [TSX, SCRIPT, "mods"], {
      cwd: root,
      encoding: "utf8",
    });
    expect(run.status).toBe(0);
    expect(run.stdout).toContain("mods: no import cycle");
  });

  it("finds a cycle that leaves the directory and comes back, and one made by a re-export or import()", async () => {
    await write({
      // mods/x.ts > contract.ts > mods/y.ts > mods/x.ts, as shared/http/contract.ts once closed one.
      "mods/x.ts": 'import type { Route } from "../contract.js";\nexport type X = Route;\n',
      "contract.ts": 'export type { Y as Route } from "./mods/y.js";\n',
      "mods/y.ts": 'export type Y = import("./x.js").X | string;\n',
      // A module outside the directory in a cycle of its own is not the directory's to answer for.
      "outside-a.ts": 'import "./outside-b.js";\n',
      "outside-b.ts": 'import * as a from "./outside-a.js";\nexport const b = a;\n',
      "mods/z.ts": 'export * from "../outside-a.js";\n',
    });
    expect(findCycles("mods", root)).toEqual([
      { cycle: ["mods/x.ts", "contract.ts", "mods/y.ts"], knot: ["contract.ts", "mods/x.ts", "mods/y.ts"] },
    ]);
  });

  it("ignores imports written in comments, and packages", () => {
    const text = [
      "// import { a } from './a.js';",
      '/* export * from "./b.js" */',
      "/**",
      ' * import type { C } from "./c.js";',
      " */",
      'import { z } from "zod";',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of a template literal, on purpose
      "const url = `https://example.com/${'x'}`; // not a comment start inside the template",
      'import { d } from "./d.js";',
    ].join("\n");
    expect(importedSpecifiers(text)).toEqual(["./d.js"]);
  });

  it("finds no cycle among shared/engine's modules", () => {
    expect(findCycles("shared/engine", REPO_ROOT)).toEqual([]);
  });
});
