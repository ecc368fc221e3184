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
      const text = JSON.stringify(generateWorkflow(seed, "wf").definition);
      if (/"when"|"onError"|\{%/.test(text)) withFlow++;
      const plain = JSON.stringify(generateWorkflow(seed, "wf", { flowControl: false }).definition);
      expect(plain).not.toMatch(/"when"|"onError"|\{%/);
    }
    expect(withFlow).toBeGreaterThan(30);
    expect(withFlow).toBeLessThan(120);
  });
});
