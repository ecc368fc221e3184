/** Bad input is refused at once, with every problem named: definitions, options, external nodes. */
import { afterAll, describe, expect, it } from "vitest";
import { createTestRuntime, InvalidWorkflowError } from "../../sdk/testing.js";

const weft = await createTestRuntime();
afterAll(() => weft.close());

describe("validation", () => {
  it("throws every problem of a definition, as the API's 400 lists them", async () => {
    const bad = { name: "x", nodes: [{ id: "a", type: "nope", dependsOn: ["a"] }] };
    const error = await weft.register(bad).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidWorkflowError);
    const invalid = error as InvalidWorkflowError;
    expect(invalid.problems.map((p) => p.code).sort()).toEqual([
      "no_entry_node",
      "self_dependency",
      "unknown_task_type",
    ]);
    expect(invalid.message).toContain("the workflow definition has 3 problem(s)");
    for (const problem of invalid.problems) {
      expect(invalid.message).toContain(problem.path);
      expect(invalid.message).toContain(problem.message);
    }
    // run() refuses it the same way, and nothing was registered.
    await expect(weft.run(bad)).rejects.toBeInstanceOf(InvalidWorkflowError);
    await expect(weft.start("x")).rejects.toThrow(/does not exist/);
  });

  it("names a node's params that fail their task type's schema", async () => {
    const error = await weft
      .register({ name: "bad-params", nodes: [{ id: "nap", type: "sleep", params: { ms: "long" } }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidWorkflowError);
    expect((error as InvalidWorkflowError).problems[0]?.path).toContain("nodes[0].params");
  });

  it("refuses nodes on external workers, which it cannot run", async () => {
    await expect(
      weft.register({ name: "ext", nodes: [{ id: "gpu", type: "render", runsOn: { pool: "gpu" } }] }),
    ).rejects.toThrow(/cannot run nodes on external workers \(runsOn\): "gpu"/);
  });

  it("refuses bad options before starting", async () => {
    await expect(createTestRuntime({ tasks: [{ type: "half" } as never] })).rejects.toThrow(
      /invalid options[\s\S]*tasks/,
    );
    await expect(createTestRuntime({ workerTimeoutSeconds: 2 })).rejects.toThrow(/workerTimeoutSeconds/);
  });
});
