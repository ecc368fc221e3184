/**
 * The workflow language's additions end to end through the local runtime, on the embedded backend
 * and on DynamoDB + SQS (emulator): expressions in params, `when` and SKIPPED with its propagation,
 * Choice (`when` + `any`), `onError: "continue"` feeding a branch, and the `onFailure` handler.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalRuntime } from "../../local/runtime.js";
import { ON_FAILURE_NODE_ID } from "../../shared/domain/graph.js";
import { HISTORY } from "../../shared/engine/lifecycle.js";
import { BACKEND_KINDS } from "../support/backends.js";
import { PATIENT, waitForProgress } from "../support/progress.js";
import { type ApiClient, apiClient, type JsonBody, startRuntime } from "../support/runtime.js";

const statuses = (view: JsonBody) =>
  Object.fromEntries(view.nodes.map((n: { id: string; status: string }) => [n.id, n.status]));

describe.each(BACKEND_KINDS)("the workflow language end to end (%s)", PATIENT, (kind) => {
  let runtime: LocalRuntime;
  let api: ApiClient;

  beforeAll(async () => {
    runtime = await startRuntime(kind, { concurrency: 4 });
    api = apiClient(runtime.url);
  });
  afterAll(async () => {
    await runtime?.stop();
  });

  async function start(
    definition: { name: string; [field: string]: unknown },
    input?: unknown,
  ): Promise<string> {
    const registered = await api.call("POST", "/workflows", definition);
    expect([200, 201], JSON.stringify(registered.body)).toContain(registered.status);
    const started = await api.call("POST", "/executions", { workflow: definition.name, input });
    expect(started.status).toBe(202);
    return started.body.executionId;
  }

  async function run(definition: { name: string; [field: string]: unknown }, input?: unknown) {
    return api.waitForEnd(await start(definition, input));
  }

  /**
   * The execution's view once no node is RUNNING any more. An `any` join can end the execution
   * while the branch it did not wait for is still deciding (its `when` being evaluated): that node
   * then settles as SKIPPED or CANCELLED.
   */
  async function settled(executionId: string): Promise<JsonBody> {
    return waitForProgress(`execution ${executionId} to settle`, async () => {
      const { body } = await api.call("GET", `/executions/${executionId}`);
      const running = (body.nodes as Array<{ id: string; status: string }>).filter(
        (n) => n.status === "RUNNING",
      );
      return running.length === 0 ? { done: true, value: body } : { done: false, progress: running };
    });
  }

  async function history(executionId: string): Promise<Array<{ type: string; nodeId?: string }>> {
    const page = await api.call("GET", `/executions/${executionId}/events?limit=500`);
    expect(page.status).toBe(200);
    return page.body.events;
  }

  const choice = (name: string) => ({
    name,
    nodes: [
      { id: "order", type: "pass" },
      {
        id: "big",
        type: "pass",
        dependsOn: ["order"],
        when: "{% deps.order.amount > 100 %}",
        params: { value: "{% 'big order of ' & deps.order.amount %}" },
      },
      {
        id: "small",
        type: "pass",
        dependsOn: ["order"],
        when: "{% deps.order.amount <= 100 %}",
        params: { value: { size: "small", doubled: "{% deps.order.amount * 2 %}" } },
      },
      { id: "done", type: "merge", dependsOn: ["big", "small"], fanIn: "any" },
    ],
  });

  it("chooses a branch with `when` and joins it with `any`: the other branch never runs", async () => {
    // The branch not taken is SKIPPED — or CANCELLED, when the `any` join ended the execution
    // before that branch's condition was looked at (leftovers of an early fan-in are cancelled).
    const notTaken = ["SKIPPED", "CANCELLED"];
    const big = await settled((await run(choice(`choice-${kind}`), { amount: 150 })).executionId);
    expect(big.status).toBe("SUCCEEDED");
    expect(statuses(big)).toMatchObject({ order: "COMPLETED", big: "COMPLETED", done: "COMPLETED" });
    expect(notTaken).toContain(statuses(big).small);
    expect(big.output).toEqual({ done: { big: "big order of 150" } });

    const small = await settled((await run(choice(`choice-${kind}`), { amount: 40 })).executionId);
    expect(statuses(small)).toMatchObject({ small: "COMPLETED", done: "COMPLETED" });
    expect(notTaken).toContain(statuses(small).big);
    expect(small.output).toEqual({ done: { small: { size: "small", doubled: 80 } } });

    // The branch not taken never completed: its handler did not run.
    for (const [view, loser] of [
      [big, "small"],
      [small, "big"],
    ] as const) {
      const events = await history(view.executionId);
      expect(events.filter((e) => e.nodeId === loser && e.type === HISTORY.nodeCompleted)).toEqual([]);
    }
  });

  it("propagates skips: a node whose dependencies were all skipped is SKIPPED, and the execution SUCCEEDS", async () => {
    const view = await run(
      {
        name: `skip-chain-${kind}`,
        nodes: [
          { id: "gate", type: "pass", when: "{% input.go = true %}" },
          { id: "next", type: "pass", dependsOn: ["gate"] },
          { id: "also", type: "noop", when: "{% false %}" },
          { id: "all", type: "merge", dependsOn: ["next", "also"] },
          { id: "kept", type: "pass", params: { value: 1 } },
          { id: "some", type: "merge", dependsOn: ["all", "kept"] },
        ],
      },
      { go: false },
    );
    expect(view.status).toBe("SUCCEEDED");
    expect(statuses(view)).toEqual({
      gate: "SKIPPED",
      next: "SKIPPED",
      also: "SKIPPED",
      all: "SKIPPED",
      kept: "COMPLETED",
      some: "COMPLETED",
    });
    // `all` is met by one completed dependency and one skipped: the skipped one is absent from deps.
    expect(view.output).toEqual({ some: { kept: 1 } });
  });

  it('feeds a failure under `onError: "continue"` to a `when` branch; the execution goes on', async () => {
    const view = await run({
      name: `on-error-${kind}`,
      nodes: [
        {
          id: "charge",
          type: "fail",
          params: { message: "card declined", retryable: false },
          onError: "continue",
        },
        {
          id: "apologise",
          type: "pass",
          dependsOn: ["charge"],
          when: "{% $exists(deps.charge.error) %}",
          params: { value: "{% 'sorry: ' & deps.charge.error.message %}" },
        },
        {
          id: "ship",
          type: "pass",
          dependsOn: ["charge"],
          when: "{% $not($exists(deps.charge.error)) %}",
          params: { value: "shipped" },
        },
      ],
    });
    expect(view.status).toBe("SUCCEEDED");
    expect(statuses(view)).toEqual({ charge: "FAILED", apologise: "COMPLETED", ship: "SKIPPED" });
    expect(view.output).toEqual({ apologise: "sorry: card declined" });
    // A handled failure is no dead letter.
    const dlq = await api.call("GET", "/dlq?limit=100");
    expect(
      dlq.body.deadLetters.filter((d: { executionId: string }) => d.executionId === view.executionId),
    ).toEqual([]);
  });

  it("runs `onFailure` once when the execution fails, with the error; its outcome leaves the status FAILED", async () => {
    const executionId = await start({
      name: `on-failure-${kind}`,
      onFailure: {
        type: "pass",
        params: { value: { alert: "{% error.message %}", saw: "{% $keys(deps) %}" } },
      },
      nodes: [
        { id: "reserve", type: "pass", params: { value: "room 7" } },
        {
          id: "pay",
          type: "fail",
          dependsOn: ["reserve"],
          params: { message: "no funds", retryable: false },
        },
      ],
    });
    const view = await api.waitForEnd(executionId);
    expect(view.status).toBe("FAILED");
    const handlerEvents = await waitForProgress("the onFailure handler to complete", async () => {
      const events = (await history(executionId)).filter((e) => e.nodeId === ON_FAILURE_NODE_ID);
      return events.some((e) => e.type === HISTORY.nodeCompleted)
        ? { done: true, value: events }
        : { done: false, progress: events.map((e) => e.type) };
    });
    expect(handlerEvents.filter((e) => e.type === HISTORY.nodeStarted)).toHaveLength(1);
    const described = (await api.call("GET", `/executions/${executionId}`)).body;
    expect(described.status).toBe("FAILED");
    expect(described.onFailure).toMatchObject({
      id: ON_FAILURE_NODE_ID,
      status: "COMPLETED",
      attempt: 1,
      output: { alert: expect.stringContaining("no funds"), saw: "reserve" },
    });
  });

  it("skips a map or a child workflow whose `when` is false, like any node", async () => {
    await api.call("POST", "/workflows", { name: `leaf-${kind}`, nodes: [{ id: "x", type: "noop" }] });
    const view = await run(
      {
        name: `skip-composites-${kind}`,
        nodes: [
          {
            id: "each",
            type: "map",
            when: "{% input.map = true %}",
            params: { items: [1, 2], task: { type: "noop" } },
          },
          {
            id: "child",
            type: "workflow",
            when: "{% input.child = true %}",
            params: { name: `leaf-${kind}` },
          },
          { id: "after", type: "merge", dependsOn: ["each", "child"] },
        ],
      },
      { map: false, child: true },
    );
    expect(view.status).toBe("SUCCEEDED");
    expect(statuses(view)).toEqual({ each: "SKIPPED", child: "COMPLETED", after: "COMPLETED" });
    expect(view.output).toEqual({ after: { child: { x: null } } });
  });

  it("fails a node whose `when` gives no boolean with a terminal ExpressionError", async () => {
    const view = await run({
      name: `bad-when-${kind}`,
      nodes: [{ id: "a", type: "pass", when: "{% 42 %}" }],
    });
    expect(view.status).toBe("FAILED");
    expect(view.nodes[0]).toMatchObject({ status: "FAILED", attempt: 1, error: { name: "ExpressionError" } });
  });

  it("refuses a definition whose expression does not compile, naming the node and the position", async () => {
    const refused = await api.call("POST", "/workflows", {
      name: `bad-expression-${kind}`,
      nodes: [{ id: "a", type: "pass", params: { value: "{% input.( %}" } }],
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.details).toEqual([
      expect.objectContaining({
        path: "nodes[0].params.value",
        code: "invalid_expression",
        message: expect.stringContaining("position"),
      }),
    ]);
  });
});
