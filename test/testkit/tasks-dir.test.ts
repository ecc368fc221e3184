/** `tasksDir`: a folder of task modules loaded as `weft dev` and the worker load `tasks/`. */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestRuntime, type TestRuntime } from "../../sdk/testing.js";

// The folder sits outside this repository, so its modules import nothing: a stand-in for a zod
// schema (anything with parse and safeParse counts) keeps them self-contained.
const schema = "{ parse: (v) => v ?? {}, safeParse: (v) => ({ success: true, data: v ?? {} }) }";
const files: Record<string, string> = {
  "shout.mjs": `export const shout = { type: "shout", params: ${schema}, run: ({ input }) => ({ text: String(input.text).toUpperCase() }) };\n`,
  // TypeScript, loaded through tsx as in a user's project.
  "count.ts": `const params = ${schema};\nexport const count = { type: "count", params, run: ({ deps }: { deps: Record<string, { text: string }> }): number => deps.shout?.text.length ?? 0 };\n`,
  // Not a task module: left alone.
  "notes.md": "# not code\n",
  // As in a project: its modules are ES modules.
  "package.json": '{ "type": "module" }\n',
};

let dir: string;
let weft: TestRuntime;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "weft-testkit-tasks-"));
  for (const [name, text] of Object.entries(files)) await writeFile(path.join(dir, name), text);
  weft = await createTestRuntime({ tasksDir: dir });
});
afterAll(async () => {
  await weft?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("tasksDir", () => {
  it("registers every task module of the folder and runs them", async () => {
    const run = await weft.run(
      {
        name: "from-folder",
        nodes: [
          { id: "shout", type: "shout" },
          { id: "count", type: "count", dependsOn: ["shout"] },
        ],
      },
      { text: "weft" },
    );
    expect(run.status).toBe("SUCCEEDED");
    expect(run.nodes.shout?.output).toEqual({ text: "WEFT" });
    expect(run.output).toEqual({ count: 4 });
  });

  it("names a folder it cannot read", async () => {
    await expect(createTestRuntime({ tasksDir: path.join(dir, "missing") })).rejects.toThrow(
      /custom tasks folder .*missing cannot be read/,
    );
  });
});
