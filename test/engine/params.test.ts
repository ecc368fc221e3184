/** Handlers receive their params as their schema parsed them: defaults and transforms apply. */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTask } from "../../shared/tasks/task-type.js";
import { createBackend } from "../support/backends.js";
import { runToEnd } from "../support/harness.js";

const greet = defineTask({
  type: "greet",
  params: z.object({ name: z.string().trim(), greeting: z.string().default("hello") }).strict(),
  run: ({ params }) => `${params.greeting}, ${params.name}`,
});

describe("task params", () => {
  it("reach the handler parsed by the task type's schema (defaults filled, transforms applied)", async () => {
    const backend = await createBackend("memory", { tasks: [greet] });
    const { engine, store, consumer } = backend;
    await engine.registerWorkflow({
      name: "greeting",
      nodes: [{ id: "g", type: "greet", params: { name: "  ada " } }],
    });
    const { executionId } = await engine.createExecution({ workflow: "greeting" });
    expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED");
    expect((await engine.describeExecution(executionId)).output).toEqual({ g: "hello, ada" });
    // The stored definition keeps what the user wrote.
    expect((await engine.getWorkflow("greeting")).definition.nodes[0]?.params).toEqual({ name: "  ada " });
  });
});
