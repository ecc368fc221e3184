/**
 * weft-orchestrator/testing as a user's test uses it: a custom task run to its end, a failure, a
 * map, a choice, a `lambda` node and a cancellation, each asserted on the run it returns.
 */
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTask, TerminalError } from "../../sdk/tasks.js";
import { createTestRuntime, type WorkflowDefinition } from "../../sdk/testing.js";

const greet = defineTask({
  type: "greet",
  params: z
    .object({ greeting: z.string().default("Hello") })
    .strict()
    .prefault({}),
  run: ({ params, input }) => {
    const parsed = z.object({ name: z.string().min(1) }).safeParse(input);
    if (!parsed.success) throw new TerminalError('greet needs an input like {"name": "Ada"}');
    return { message: `${params.greeting}, ${parsed.data.name}!` };
  },
});

const double = defineTask({
  type: "double",
  params: z.object({ n: z.number() }).strict(),
  run: ({ params }) => params.n * 2,
});

const weft = await createTestRuntime({
  tasks: [greet, double],
  lambda: {
    "score-order": (event) => {
      const { amount } = z.object({ amount: z.number() }).parse(event.input);
      return { score: amount > 1000 ? "high" : "low", node: event.context.nodeId };
    },
    "always-fails": () => {
      throw new TerminalError("the function refused");
    },
  },
});
afterAll(() => weft.close());

const hello: WorkflowDefinition = {
  name: "hello",
  nodes: [
    { id: "english", type: "greet" },
    { id: "french", type: "greet", params: { greeting: "Bonjour" } },
    { id: "both", type: "merge", dependsOn: ["english", "french"] },
  ],
};

describe("a custom task type", () => {
  it("runs to SUCCEEDED with its output", async () => {
    const run = await weft.run(hello, { name: "Ada" });
    expect(run.status).toBe("SUCCEEDED");
    expect(run.output).toEqual({
      both: { english: { message: "Hello, Ada!" }, french: { message: "Bonjour, Ada!" } },
    });
    expect(run.nodes.english).toMatchObject({
      status: "COMPLETED",
      attempt: 1,
      output: { message: "Hello, Ada!" },
    });
    expect(run.error).toBeUndefined();
    expect(run.input).toEqual({ name: "Ada" });
    // The history as the API lists it, in causal order.
    const types = run.history.map((event) => event.type);
    expect(types[0]).toBe("ExecutionStarted");
    expect(types.at(-1)).toBe("ExecutionSucceeded");
    expect(run.history.filter((e) => e.nodeId === "english").map((e) => e.type)).toEqual([
      "NodeQueued",
      "NodeStarted",
      "NodeCompleted",
    ]);
  });

  it("registers idempotently: the same definition twice is one version", async () => {
    const first = await weft.register(hello);
    const again = await weft.register(hello);
    expect(again).toMatchObject({ name: "hello", version: first.version, created: false });
    // Started by name, at the version registered.
    const run = await weft.runToEnd(await weft.start("hello", { name: "Grace" }));
    expect(run).toMatchObject({ status: "SUCCEEDED", version: first.version });
  });
});

describe("a failing workflow", () => {
  it("ends FAILED with the node's error, and what depended on it does not run", async () => {
    const run = await weft.run(hello, { nobody: true });
    expect(run.status).toBe("FAILED");
    expect(run.error?.message).toContain("greet needs an input");
    const failed = Object.values(run.nodes).filter((node) => node.status === "FAILED");
    expect(failed.length).toBeGreaterThan(0);
    expect(failed[0]?.error).toMatchObject({ name: "TerminalError" });
    expect(failed[0]?.attempt).toBe(1); // terminal: never retried
    expect(run.nodes.both?.status).not.toBe("COMPLETED");
    expect(run.history.at(-1)?.type).not.toBe("ExecutionSucceeded");
  });

  it("runs its onFailure handler before the run is answered", async () => {
    const run = await weft.run({
      name: "with-handler",
      onFailure: { type: "pass", params: { value: { compensated: true } } },
      nodes: [{ id: "boom", type: "fail", params: { retryable: false, message: "boom" } }],
    });
    expect(run.status).toBe("FAILED");
    expect(run.error?.message).toContain("boom");
    expect(run.onFailure).toMatchObject({ status: "COMPLETED", output: { compensated: true } });
  });
});

describe("the language", () => {
  it("runs a map over a list from the input", async () => {
    const run = await weft.run(
      {
        name: "doubles",
        nodes: [
          {
            id: "each",
            type: "map",
            params: { items: "{% input.numbers %}", task: { type: "double", params: { n: "{% $item %}" } } },
          },
        ],
      },
      { numbers: [1, 2, 3, 4] },
    );
    expect(run.status).toBe("SUCCEEDED");
    expect(run.output).toEqual({ each: [2, 4, 6, 8] });
    expect(run.history.find((event) => event.type === "MapStarted")?.detail).toMatchObject({ items: 4 });
  });

  it("takes one branch of a choice and skips the other", async () => {
    const routing: WorkflowDefinition = {
      name: "order-routing",
      nodes: [
        { id: "order", type: "pass" },
        {
          id: "review",
          type: "pass",
          dependsOn: ["order"],
          when: "{% deps.order.amount > 1000 %}",
          params: { value: { route: "review" } },
        },
        {
          id: "auto",
          type: "pass",
          dependsOn: ["order"],
          when: "{% deps.order.amount <= 1000 %}",
          params: { value: { route: "auto" } },
        },
        { id: "route", type: "merge", dependsOn: ["review", "auto"], fanIn: "any" },
      ],
    };
    const big = await weft.run(routing, { amount: 2400 });
    expect(big.status).toBe("SUCCEEDED");
    expect(big.output).toEqual({ route: { review: { route: "review" } } });
    const small = await weft.run(routing, { amount: 10 });
    expect(small.output).toEqual({ route: { auto: { route: "auto" } } });
    expect(small.nodes.review?.status).toMatch(/^(SKIPPED|CANCELLED)$/);
  });
});

describe("fan-in and child workflows", () => {
  it("ends at an `any` join and stops the branch still running, its cancellation in the history", async () => {
    const run = await weft.run({
      name: "first-wins",
      nodes: [
        { id: "fast", type: "pass", params: { value: "fast" } },
        { id: "nap", type: "sleep", params: { ms: 240_000 } },
        { id: "first", type: "merge", dependsOn: ["fast", "nap"], fanIn: "any" },
      ],
    });
    expect(run.status).toBe("SUCCEEDED");
    expect(run.output).toEqual({ first: { fast: "fast" } });
    // Answered once settled: the sleeping branch was told to stop and did.
    expect(run.nodes.nap?.status).toBe("CANCELLED");
    expect(run.history.some((event) => event.type === "NodeCancelled" && event.nodeId === "nap")).toBe(true);
  });

  it("runs a child workflow and completes with its output", async () => {
    await weft.register({
      name: "child-greeting",
      nodes: [{ id: "hi", type: "greet", params: { greeting: "Hi" } }],
    });
    const run = await weft.run(
      {
        name: "parent",
        nodes: [{ id: "call", type: "workflow", params: { name: "child-greeting", input: "{% input %}" } }],
      },
      { name: "Ada" },
    );
    expect(run.status).toBe("SUCCEEDED");
    expect(run.output).toEqual({ call: { hi: { message: "Hi, Ada!" } } });
    const child = await weft.execution(run.nodes.call?.childExecutionId ?? "");
    expect(child).toMatchObject({ status: "SUCCEEDED", workflow: "child-greeting" });
  });
});

describe("the lambda task", () => {
  it("calls the test's function for the function name", async () => {
    const run = await weft.run(
      {
        name: "score",
        nodes: [{ id: "score", type: "lambda", params: { functionName: "score-order" } }],
      },
      { amount: 2400 },
    );
    expect(run.status).toBe("SUCCEEDED");
    expect(run.output).toEqual({ score: { score: "high", node: "score" } });
  });

  it("fails the node as Lambda would: a terminal error, or a function nobody gave", async () => {
    const refused = await weft.run({
      name: "refused",
      nodes: [{ id: "call", type: "lambda", params: { functionName: "always-fails" } }],
    });
    expect(refused.status).toBe("FAILED");
    expect(refused.nodes.call).toMatchObject({ attempt: 1, error: { name: "TerminalError" } });
    expect(refused.nodes.call?.error?.message).toContain("the function refused");

    const missing = await weft.run({
      name: "missing",
      nodes: [{ id: "call", type: "lambda", params: { functionName: "nobody-home" } }],
    });
    expect(missing.status).toBe("FAILED");
    expect(missing.nodes.call?.error?.message).toContain('no handler for Lambda function "nobody-home"');
  });
});

describe("cancelling", () => {
  it("cancels a waiting execution and answers it settled", async () => {
    const id = await weft.start({
      name: "long-wait",
      nodes: [
        { id: "wait", type: "wait", params: { seconds: 3600 } },
        { id: "after", type: "pass", dependsOn: ["wait"] },
      ],
    });
    const run = await weft.cancel(id, "changed my mind");
    expect(run.status).toBe("CANCELLED");
    expect(run.nodes.wait?.status).toBe("CANCELLED");
    expect(run.nodes.after?.status).not.toBe("COMPLETED");
    expect(run.history.some((event) => event.type === "ExecutionCancelled")).toBe(true);
  });
});
