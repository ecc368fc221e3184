/**
 * The simulation's reference evaluator (sim/reference.ts) on hand-written definitions: skips by
 * `when` and by fan-in, continued failures, ExpressionErrors and params expressions, as the
 * definition format's semantics say — the checker is only as good as this.
 */
import { describe, expect, it } from "vitest";
import type { WorkflowDefinition } from "../../shared/domain/definition.js";
import { generateWorkflow } from "../../sim/dag.js";
import { type ReferenceFacts, referenceRun } from "../../sim/reference.js";

function facts(overrides: Partial<ReferenceFacts> = {}): ReferenceFacts {
  return {
    input: { x: 1 },
    okDepsOf: () => [],
    passingAttemptOf: (_id, times) => times + 1,
    ...overrides,
  };
}

const wf = (nodes: WorkflowDefinition["nodes"]): WorkflowDefinition => ({
  name: "wf",
  defaults: { retry: { maxAttempts: 2 } },
  nodes,
});

async function statuses(definition: WorkflowDefinition, f: ReferenceFacts = facts()) {
  const run = await referenceRun(definition, f);
  return { run, status: Object.fromEntries([...run.nodes].map(([id, n]) => [id, n.status])) };
}

describe("reference evaluator", () => {
  it("a false `when` skips the node, and skips propagate down a chain without failing anything", async () => {
    const { run, status } = await statuses(
      wf([
        { id: "a", type: "pass", params: { value: 1 } },
        { id: "b", type: "noop", dependsOn: ["a"], when: "{% false %}" },
        { id: "c", type: "merge", dependsOn: ["b"] },
      ]),
    );
    expect(status).toEqual({ a: "COMPLETED", b: "SKIPPED", c: "SKIPPED" });
    expect(run.nodes.get("b")?.why).toMatch(/when gave false/);
    expect(run.nodes.get("c")?.why).toMatch(/every dependency was skipped/);
    expect(run.status).toBe("SUCCEEDED");
    expect(run.output).toEqual({});
  });

  it("an `all` fan-in sees its done parents only; a `when` over deps decides on what it saw", async () => {
    const { run, status } = await statuses(
      wf([
        { id: "a", type: "pass", params: { value: "A" } },
        { id: "b", type: "pass", when: "{% input = null %}" },
        { id: "m", type: "merge", dependsOn: ["a", "b"] },
        { id: "t", type: "pass", dependsOn: ["a", "b"], when: "{% $exists(deps.b) %}" },
        { id: "u", type: "noop", dependsOn: ["a", "b"], when: "{% $count($keys(deps)) > 0 %}" },
      ]),
    );
    expect(status).toEqual({ a: "COMPLETED", b: "SKIPPED", m: "COMPLETED", t: "SKIPPED", u: "COMPLETED" });
    expect(run.nodes.get("m")?.output).toEqual({ a: "A" });
    expect(run.output).toEqual({ m: { a: "A" }, u: null });
  });

  it("`any`/`count:N`: ready on the recorded deps; skipped when skips alone make it unmeetable", async () => {
    const definition = wf([
      { id: "a", type: "pass", params: { value: 1 } },
      { id: "b", type: "pass", params: { value: 2 }, when: "{% false %}" },
      { id: "c", type: "pass", params: { value: 3 }, when: "{% false %}" },
      { id: "any", type: "merge", dependsOn: ["a", "b", "c"], fanIn: "any" },
      { id: "two", type: "merge", dependsOn: ["a", "b", "c"], fanIn: "count:2" },
    ]);
    const { run, status } = await statuses(
      definition,
      facts({ okDepsOf: (id) => (id === "any" ? ["a"] : []) }),
    );
    expect(status).toMatchObject({ any: "COMPLETED", two: "SKIPPED" });
    expect(run.nodes.get("any")?.output).toEqual({ a: 1 });
    expect(run.nodes.get("two")?.why).toMatch(/1 of 2 dependencies done \(2 skipped, 0 bad\)/);
  });

  it("a skip and a failure both making a `count:N` unmeetable: cancelled, or skipped had the skip come first", async () => {
    const { run } = await statuses(
      wf([
        { id: "a", type: "pass", when: "{% false %}" },
        { id: "b", type: "pass", when: "{% false %}" },
        { id: "c", type: "fail", params: { retryable: false } },
        { id: "j", type: "merge", dependsOn: ["a", "b", "c"], fanIn: "count:2" },
        { id: "k", type: "merge", dependsOn: ["a", "c"], fanIn: "any" },
      ]),
    );
    expect(run.nodes.get("j")).toMatchObject({ status: "CANCELLED", alternatives: ["SKIPPED"] });
    // one skip cannot make an `any` of two unmeetable while the other parent may complete: cancelled
    expect(run.nodes.get("k")).toMatchObject({ status: "CANCELLED", alternatives: [] });
    expect(run.status).toBe("FAILED");
  });

  it('`onError: "continue"`: the failure does not fail the execution; dependants see {error}', async () => {
    const definition = wf([
      { id: "f", type: "fail", params: { times: 5, message: "boom" }, onError: "continue" },
      { id: "h", type: "fail", params: { retryable: false, message: "hard" }, onError: "continue" },
      { id: "m", type: "merge", dependsOn: ["f", "h"] },
      {
        id: "p",
        type: "pass",
        dependsOn: ["f"],
        params: { value: '{% $exists(deps.f.error) ? "error" : "ok" %}' },
      },
    ]);
    const predicted = await referenceRun(definition, facts());
    expect(predicted.nodes.get("f")).toMatchObject({ status: "FAILED", failsForGood: true });
    expect(predicted.nodes.get("m")?.output).toEqual({
      f: { error: { name: "RetryableError", message: "boom" } },
      h: { error: { name: "TerminalError", message: "hard" } },
    });
    expect(predicted.nodes.get("m")?.continued).toEqual(["f", "h"]);
    expect(predicted.nodes.get("p")?.output).toBe("error");
    expect(predicted.status).toBe("SUCCEEDED");
    // The run's own error, once known (e.g. a dead letter), is what the dependants saw.
    const ran = await referenceRun(
      definition,
      facts({
        endedAs: (id) =>
          id === "f" ? { status: "FAILED", error: { name: "DeadLettered", message: "lost" } } : undefined,
      }),
    );
    expect(ran.output).toMatchObject({ m: { f: { error: { name: "DeadLettered", message: "lost" } } } });
  });

  it("a `when` giving a non-boolean fails the node with ExpressionError; undefined skips it", async () => {
    const { run, status } = await statuses(
      wf([
        { id: "a", type: "noop", when: "{% 1 %}" },
        { id: "b", type: "noop", when: "{% input.nowhere.at.all %}" },
        { id: "c", type: "noop", when: '{% "yes" %}', onError: "continue" },
        { id: "d", type: "merge", dependsOn: ["c"] },
      ]),
    );
    expect(status).toEqual({ a: "FAILED", b: "SKIPPED", c: "FAILED", d: "COMPLETED" });
    expect(run.nodes.get("a")?.error?.name).toBe("ExpressionError");
    expect(run.nodes.get("b")?.why).toMatch(/undefined/);
    expect(run.status).toBe("FAILED");
  });

  it("maps `{% %}` params anywhere, over input, deps and execution", async () => {
    const { run } = await statuses(
      wf([
        { id: "a", type: "pass", params: { value: [3, 1] } },
        {
          id: "b",
          type: "pass",
          dependsOn: ["a"],
          params: {
            value: {
              n: "{% $count($keys(deps)) %}",
              keys: "{% [$sort($keys(deps))] %}",
              wf: "{% execution.workflow %}",
              copy: "{% deps.a %}",
              kept: ["{% input.x + 1 %}", "plain"],
            },
          },
        },
        { id: "s", type: "sleep", dependsOn: ["a"], params: { ms: "{% $count($keys(deps)) * 7 %}" } },
      ]),
    );
    expect(run.nodes.get("b")?.output).toEqual({
      n: 1,
      keys: ["a"],
      wf: "wf",
      copy: [3, 1],
      kept: [2, "plain"],
    });
    expect(run.nodes.get("s")?.output).toEqual({ sleptMs: 7 });
  });

  it("takes the run's ends outside the definition as given: a cancelled parent cancels its `all` child", async () => {
    const { status } = await statuses(
      wf([
        { id: "a", type: "noop" },
        { id: "b", type: "noop", dependsOn: ["a"] },
      ]),
      facts({ endedAs: (id) => (id === "a" ? { status: "CANCELLED" } : undefined) }),
    );
    expect(status).toEqual({ a: "CANCELLED", b: "CANCELLED" });
  });

  it("the generator draws flow control in a share of the workflows only, and never when told not to", () => {
    let withFlow = 0;
    for (let seed = 1; seed <= 200; seed++) {
      // Maps carry expressions and onError of their own (below): left out here.
      const text = JSON.stringify(generateWorkflow(seed, "wf", { maps: false }).definition);
      if (/"when"|"onError"|\{%/.test(text)) withFlow++;
      const plain = JSON.stringify(
        generateWorkflow(seed, "wf", { flowControl: false, maps: false }).definition,
      );
      expect(plain).not.toMatch(/"when"|"onError"|\{%/);
    }
    expect(withFlow).toBeGreaterThan(30);
    expect(withFlow).toBeLessThan(120);
  });

  it("the generator draws maps in a share of the workflows only, leaving the others as they were", () => {
    let withMaps = 0;
    for (let seed = 1; seed <= 300; seed++) {
      const drawn = generateWorkflow(seed, "wf");
      const plain = generateWorkflow(seed, "wf", { maps: false });
      const maps = drawn.definition.nodes.filter((n) => n.type === "map");
      expect(plain.definition.nodes.some((n) => n.type === "map")).toBe(false);
      if (maps.length > 0) withMaps++;
      else expect(drawn).toEqual(plain);
    }
    expect(withMaps).toBeGreaterThan(50);
    expect(withMaps).toBeLessThan(140);
  });

  const mapOf = (params: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    wf([
      { id: "list", type: "pass", params: { value: [10, 20, 30, 40] } },
      {
        id: "m",
        type: "map",
        dependsOn: ["list"],
        params: { items: "{% deps.list %}", ...params },
        ...extra,
      },
    ]);

  it("a map's output is its items' outputs in item order, `$item` and `$index` bound", async () => {
    const { run } = await statuses(
      mapOf({ task: { type: "pass", params: { value: { i: "{% $index %}", v: "{% $item * 2 %}" } } } }),
    );
    const m = run.nodes.get("m")!;
    expect(m.status).toBe("COMPLETED");
    expect(m.output).toEqual([
      { i: 0, v: 20 },
      { i: 1, v: 40 },
      { i: 2, v: 60 },
      { i: 3, v: 80 },
    ]);
    expect(m.map?.items.map((item) => item.id)).toEqual(["m[1.0]", "m[1.1]", "m[1.2]", "m[1.3]"]);
    expect(m.map?.lanes).toBe(4);
  });

  it("a map fails with MapFailed once more items fail than tolerated (the smaller of count and percentage)", async () => {
    // every other item fails for good: 2 of 4
    const task = { type: "fail", params: { times: "{% $index % 2 = 0 ? 99 : 0 %}" } };
    const failed = (await statuses(mapOf({ task, toleratedFailureCount: 1 }))).run.nodes.get("m")!;
    expect(failed.status).toBe("FAILED");
    expect(failed.error?.name).toBe("MapFailed");
    const both = (await statuses(mapOf({ task, toleratedFailureCount: 3, toleratedFailurePercentage: 25 })))
      .run;
    expect(both.nodes.get("m")!.status).toBe("FAILED"); // ⌊25 % of 4⌋ = 1 < 2
    const tolerated = (await statuses(mapOf({ task, toleratedFailurePercentage: 50 }))).run.nodes.get("m")!;
    expect(tolerated.status).toBe("COMPLETED");
    expect(tolerated.output).toEqual([
      { error: { name: "RetryableError", message: "fail task failed on attempt 2" } },
      { attempt: 1 },
      { error: { name: "RetryableError", message: "fail task failed on attempt 2" } },
      { attempt: 1 },
    ]);
  });

  it("a map takes its items' ends from the run (an item's attempts lost), and no array is InvalidMapItems", async () => {
    const { run } = await statuses(
      mapOf({
        task: { type: "pass", params: { value: "{% $item %}" } },
        toleratedFailureCount: 1,
        maxConcurrency: 2,
      }),
      facts({
        mapAttemptOf: () => 2,
        endedAs: (id) =>
          id === "m[2.1]"
            ? { status: "FAILED", error: { name: "LeaseExpired", message: "lost" } }
            : undefined,
      }),
    );
    const m = run.nodes.get("m")!;
    expect(m.output).toEqual([10, { error: { name: "LeaseExpired", message: "lost" } }, 30, 40]);
    expect(m.map?.lanes).toBe(2);
    const empty = (await statuses(mapOf({ items: [], task: { type: "noop" } }))).run.nodes.get("m")!;
    expect(empty.output).toEqual([]);
    const bad = (await statuses(mapOf({ items: "{% 42 %}", task: { type: "noop" } }))).run.nodes.get("m")!;
    expect(bad.status).toBe("FAILED");
    expect(bad.error?.name).toBe("InvalidMapItems");
  });
  it("a `workflow` node ends as its last attempt's child did, and maps its child's input", async () => {
    const definition = wf([
      { id: "a", type: "pass", params: { value: 7 } },
      { id: "ok", type: "workflow", dependsOn: ["a"], params: { name: "lib", input: "{% deps.a + 1 %}" } },
      { id: "bad", type: "workflow", dependsOn: ["a"], params: { name: "lib" }, onError: "continue" },
      {
        id: "each",
        type: "map",
        dependsOn: ["a"],
        params: { items: [1, 2], workflow: { name: "lib", input: "{% {'i': $index, 'v': $item} %}" } },
      },
    ]);
    const ends: Record<string, { executionId: string; status: string; output?: unknown }> = {
      ok: { executionId: "c1", status: "SUCCEEDED", output: { sum: 8 } },
      bad: { executionId: "c2", status: "FAILED" },
      "each[1.0]": { executionId: "c3", status: "SUCCEEDED", output: "first" },
      "each[1.1]": { executionId: "c4", status: "CANCELLED" },
    };
    const { run, status } = await statuses(
      definition,
      facts({ childOf: (id) => ends[id], okDepsOf: () => ["a"] }),
    );
    expect(status).toEqual({ a: "COMPLETED", ok: "COMPLETED", bad: "FAILED", each: "FAILED" });
    expect(run.nodes.get("ok")).toMatchObject({ output: { sum: 8 }, childInput: 8 });
    expect(run.nodes.get("bad")).toMatchObject({ error: { name: "ChildWorkflowFailed" }, childInput: null });
    const items = run.nodes.get("each")?.map?.items ?? [];
    expect(items.map((item) => [item.status, item.childInput])).toEqual([
      ["COMPLETED", { i: 0, v: 1 }],
      ["FAILED", { i: 1, v: 2 }],
    ]);
    expect(items[1]?.error?.name).toBe("ChildWorkflowCancelled");
    expect(run.status).toBe("FAILED");
  });

  it("a `workflow` node at the depth limit fails with WorkflowDepthExceeded, child or not", async () => {
    const { run, status } = await statuses(
      wf([{ id: "deeper", type: "workflow", params: { name: "lib" } }]),
      {
        ...facts(),
        depth: 8,
      },
    );
    expect(status).toEqual({ deeper: "FAILED" });
    expect(run.nodes.get("deeper")?.error?.name).toBe("WorkflowDepthExceeded");
  });
  it("a `callback` node ends as its settler ended its last attempt, or times out; placed nodes run as any", async () => {
    const definition = wf([
      { id: "ok", type: "callback", params: { timeoutSeconds: 10 } },
      { id: "no", type: "callback", params: { timeoutSeconds: 10 }, onError: "continue" },
      { id: "late", type: "callback", params: { timeoutSeconds: 10 }, onError: "continue" },
      {
        id: "far",
        type: "pass",
        dependsOn: ["ok", "no", "late"],
        params: { value: "{% deps %}" },
        runsOn: { pool: "p0", labels: ["gpu"] },
        heartbeatSeconds: 2,
      },
    ]);
    const { run, status } = await statuses(
      definition,
      facts({
        okDepsOf: () => ["ok", "no", "late"],
        callbackOf: (id) =>
          id === "ok"
            ? { status: "COMPLETED", output: { approved: true } }
            : id === "no"
              ? { status: "FAILED", error: { name: "Rejected", message: "no" } }
              : undefined,
      }),
    );
    expect(status).toEqual({ ok: "COMPLETED", no: "FAILED", late: "FAILED", far: "COMPLETED" });
    expect(run.nodes.get("ok")?.output).toEqual({ approved: true });
    expect(run.nodes.get("no")?.error?.name).toBe("Rejected");
    expect(run.nodes.get("late")?.error?.name).toBe("CallbackTimedOut");
    expect(run.nodes.get("far")?.output).toEqual({
      ok: { approved: true },
      no: { error: { name: "Rejected", message: "no" } },
      late: { error: { name: "CallbackTimedOut" } },
    });
  });
});
