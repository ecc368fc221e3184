/**
 * Hostile expressions on the local runtime, on the embedded backend and on the emulator: each
 * expression below used to end or freeze the whole process (V8's "invalid size" abort, a heap
 * crash, a regex blocking the event loop for minutes). Now each fails its own node with a terminal
 * ExpressionError naming the bound, the process keeps answering its API, and an execution started
 * while the bomb runs succeeds.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalRuntime } from "../../local/runtime.js";
import { BACKEND_KINDS } from "../support/backends.js";
import { PATIENT } from "../support/progress.js";
import { type ApiClient, apiClient, startRuntime } from "../support/runtime.js";

const BOMBS = [
  {
    name: "pad",
    node: { params: { value: "{% $length($pad('', 500000000, 'a')) %}" } },
    says: "it made a string of more than 16777216 characters",
  },
  {
    name: "sort",
    node: { params: { value: "{% $count($sort($reverse([1..9000000]))) %}" } },
    says: "it made an array of more than 1000000 members",
  },
  {
    name: "regex",
    node: { params: { value: "{% $contains($pad('', 33, 'a') & 'b', /^(a+)+$/) %}" } },
    says: "it ran for more than 1000 ms",
  },
  {
    name: "map-items",
    node: { type: "map", params: { items: "{% [1..9000000] %}", task: { type: "noop" } } },
    says: "it made an array of more than 1000000 members",
  },
  {
    name: "regex-when",
    node: { when: "{% $contains($pad('', 33, 'a') & 'b', /^(a+)+$/) %}" },
    says: "it ran for more than 1000 ms",
  },
] as const;

describe.each(BACKEND_KINDS)("hostile expressions fail their node, not the process (%s)", PATIENT, (kind) => {
  let runtime: LocalRuntime;
  let api: ApiClient;

  beforeAll(async () => {
    runtime = await startRuntime(kind, { concurrency: 4 });
    api = apiClient(runtime.url);
    const calm = {
      name: `calm-${kind}`,
      nodes: [
        { id: "a", type: "pass", params: { value: "{% input.n * 2 %}" } },
        { id: "b", type: "sleep", dependsOn: ["a"], params: { ms: 50 } },
        { id: "c", type: "pass", dependsOn: ["b"], params: { value: "{% deps.b.sleptMs + 1 %}" } },
      ],
    };
    expect((await api.call("POST", "/workflows", calm)).status).toBe(201);
  });
  afterAll(async () => {
    await runtime?.stop();
  });

  it.each(BOMBS)("$name", async ({ name, node, says }) => {
    const workflow = `bomb-${name}-${kind}`;
    const registered = await api.call("POST", "/workflows", {
      name: workflow,
      nodes: [{ id: "bomb", type: "pass", ...node }],
    });
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    const bomb = await api.call("POST", "/executions", { workflow });
    expect(bomb.status).toBe(202);
    // Meanwhile: another execution starts, the API answers, and it succeeds.
    const calm = await api.call("POST", "/executions", { workflow: `calm-${kind}`, input: { n: 21 } });
    expect(calm.status).toBe(202);
    expect((await api.call("GET", "/workflows")).status).toBe(200);

    const ended = await api.waitForEnd(bomb.body.executionId);
    expect(ended.status).toBe("FAILED");
    const failed = ended.nodes.find((n) => n.id === "bomb");
    expect(failed?.status).toBe("FAILED");
    expect(failed?.error?.name).toBe("ExpressionError");
    expect(failed?.error?.message).toContain(says);
    // Terminal: tried once.
    expect(failed?.attempt).toBe(1);

    const done = await api.waitForEnd(calm.body.executionId);
    expect(done.status).toBe("SUCCEEDED");
    expect(done.output).toEqual({ c: 51 });
  });
});
