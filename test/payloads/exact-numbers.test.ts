/**
 * Exact numbers end to end through the local runtime (HTTP → handlers → engine → views), on the
 * embedded backend and on DynamoDB + SQS + S3 (this run's emulators): integers beyond 2^53 and long
 * decimals keep every digit in the input, node outputs (pass, an expression, a merge), a value
 * stored in S3, a definition's params and the views; a handler sees them as LosslessNumbers, small
 * numbers stay plain, and arithmetic on one fails the node with the documented ExpressionError.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import type { LocalRuntime } from "../../local/runtime.js";
import {
  isExactNumber,
  LosslessNumber,
  parseExact,
  stringifyExact,
} from "../../shared/domain/exact-numbers.js";
import { PAYLOAD_LIMITS } from "../../shared/domain/payload.js";
import { createTaskRegistry } from "../../shared/tasks/builtins.js";
import { defineTask } from "../../shared/tasks/task-type.js";
import { BACKEND_KINDS } from "../support/backends.js";
import { PATIENT } from "../support/progress.js";
import { type ApiClient, apiClient, type JsonBody, startRuntime } from "../support/runtime.js";

const BIG = "12345678901234567891";
const HUGE = "123456789012345678901234567890";
const DECIMAL = "0.1000000000000000000000000001";
/** The input's members, as JSON text: the three exact numbers and a plain one. */
const MEMBERS = `"id":${BIG},"huge":${HUGE},"dec":${DECIMAL},"small":42`;
const INPUT = `{${MEMBERS}}`;

/** What a handler sees of the input's numbers: which are exact, and their digits. */
const inspect = defineTask({
  type: "inspect-numbers",
  params: z.optional(z.object({})),
  run: ({ input, deps }) => {
    const value = input as Record<string, unknown>;
    const fromDep = (deps.a as Record<string, unknown>).id;
    return {
      exact: ["id", "huge", "dec", "small"].filter((key) => isExactNumber(value[key])),
      smallType: typeof value.small,
      digits: isExactNumber(value.id) ? value.id.value : null,
      depExact: isExactNumber(fromDep),
      // Returned as is: a handler's output keeps the digits too.
      echo: value.id,
      made: new LosslessNumber(HUGE),
    };
  },
});

const WORKFLOWS = [
  {
    name: "exact-numbers",
    nodes: [
      { id: "a", type: "pass" },
      {
        id: "e",
        type: "pass",
        dependsOn: ["a"],
        params: { value: { id: "{% input.id %}", fromDep: "{% deps.a.id %}", dec: "{% deps.a.dec %}" } },
      },
      { id: "h", type: "inspect-numbers", dependsOn: ["a"] },
      // A definition's params keep their digits too.
      { id: "p", type: "pass", params: { value: { literal: new LosslessNumber(HUGE) } } },
      { id: "j", type: "merge", dependsOn: ["a", "e"] },
    ],
  },
  {
    name: "exact-external",
    nodes: [
      { id: "ext", type: "exact-external-task", runsOn: { pool: "exact-pool" } },
      { id: "after", type: "pass", dependsOn: ["ext"], params: { value: "{% deps.ext %}" } },
    ],
  },
  {
    name: "exact-arithmetic",
    nodes: [{ id: "add", type: "pass", params: { value: "{% input.id + 1 %}" } }],
  },
];

describe.each(BACKEND_KINDS)("exact numbers end to end (%s)", PATIENT, (kind) => {
  let runtime: LocalRuntime;
  let api: ApiClient;

  /** The response's JSON parsed with parseExact (a test client's JSON.parse would round them). */
  async function exactGet(path: string): Promise<{ text: string; body: JsonBody }> {
    const response = await fetch(`${runtime.url}${path}`);
    const text = await response.text();
    expect(response.status).toBe(200);
    return { text, body: parseExact(text) };
  }

  async function run(workflow: string, inputText: string): Promise<{ text: string; body: JsonBody }> {
    const started = await api.raw("POST", "/executions", `{"workflow":"${workflow}","input":${inputText}}`);
    expect(started.status).toBe(202);
    const executionId = started.body.executionId as string;
    const ended = await api.waitForEnd(executionId, 60_000);
    expect(["SUCCEEDED", "FAILED"]).toContain(ended.status);
    return exactGet(`/executions/${executionId}`);
  }

  const node = (view: JsonBody, id: string) => view.nodes.find((n: { id: string }) => n.id === id);

  beforeAll(async () => {
    runtime = await startRuntime(kind, { concurrency: 4, tasks: createTaskRegistry([inspect]) });
    api = apiClient(runtime.url);
    for (const definition of WORKFLOWS) {
      // Written with their digits (a LosslessNumber in params), as a client sends them.
      const response = await fetch(`${runtime.url}/workflows`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: stringifyExact(definition),
      });
      expect([200, 201]).toContain(response.status);
    }
  });
  afterAll(async () => {
    await runtime?.stop();
  });

  it("keeps every digit in the view: input, pass, an expression, a merge and a definition's params", async () => {
    const { text, body: view } = await run("exact-numbers", INPUT);
    expect(view.status).toBe("SUCCEEDED");
    // The response's own text, not only what a parser made of it.
    expect(text).toContain(`"input":${INPUT}`);
    expect(text).toContain(`"output":${INPUT}`);
    expect(view.input.id).toBeInstanceOf(LosslessNumber);
    expect(view.input.id.value).toBe(BIG);
    expect(view.input.huge.value).toBe(HUGE);
    expect(view.input.dec.value).toBe(DECIMAL);
    expect(view.input.small).toBe(42);
    const e = node(view, "e").output;
    expect([e.id.value, e.fromDep.value, e.dec.value]).toEqual([BIG, BIG, DECIMAL]);
    const j = node(view, "j").output;
    expect(j.a.id.value).toBe(BIG);
    expect(j.a.huge.value).toBe(HUGE);
    expect(j.e.fromDep.value).toBe(BIG);
    expect(node(view, "p").output.literal.value).toBe(HUGE);
  });

  it("hands handlers a LosslessNumber for each exact number and a plain number for the rest", async () => {
    const { body: view } = await run("exact-numbers", INPUT);
    const h = node(view, "h").output;
    expect(h.exact).toEqual(["id", "huge", "dec"]);
    expect(h.smallType).toBe("number");
    expect(h.digits).toBe(BIG);
    expect(h.depExact).toBe(true);
    expect(h.echo.value).toBe(BIG);
    expect(h.made.value).toBe(HUGE);
  });

  it("keeps the digits of a value stored in S3 (over the inline size), through a merge", async () => {
    const padding = "x".repeat(PAYLOAD_LIMITS.inlineBytes + 1024);
    const input = `{${MEMBERS},"padding":"${padding}"}`;
    const { text, body: view } = await run("exact-numbers", input);
    expect(view.status).toBe("SUCCEEDED");
    const stored = await runtime.ports.store.getExecution(view.executionId);
    expect(stored?.input).toHaveProperty("blob");
    expect(text).toContain(`"input":${input}`);
    const j = node(view, "j").output;
    expect(j.a.id.value).toBe(BIG);
    expect(j.a.dec.value).toBe(DECIMAL);
    expect(node(view, "e").output.fromDep.value).toBe(BIG);
  });

  it("gives an external worker the digits in its poll, and keeps those it completes with", async () => {
    const registered = await api.call("POST", "/workers", { workerId: `exact-${kind}`, pool: "exact-pool" });
    expect(registered.status).toBe(201);
    const started = await api.raw("POST", "/executions", `{"workflow":"exact-external","input":${INPUT}}`);
    expect(started.status).toBe(202);
    const executionId = started.body.executionId as string;
    let pollText = "";
    // The task reaches the pool once the runtime's poller has handed its message to the engine.
    for (let tries = 0; tries < 120 && pollText === ""; tries++) {
      const poll = await fetch(`${runtime.url}/workers/exact-${kind}/poll`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: `{"waitSeconds":1}`,
      });
      if (poll.status === 200) pollText = await poll.text();
      else expect(poll.status).toBe(204);
    }
    expect(pollText).toContain(`"input":${INPUT}`);
    const task = parseExact(pollText) as { taskToken: string; input: { id: unknown } };
    expect(isExactNumber(task.input.id)).toBe(true);
    const output = `{"id":${BIG},"dec":${DECIMAL},"small":7}`;
    const completed = await fetch(`${runtime.url}/tasks/complete`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: `{"taskToken":${JSON.stringify(task.taskToken)},"output":${output}}`,
    });
    expect(completed.status).toBeLessThan(300);
    const ended = await api.waitForEnd(executionId, 60_000);
    expect(ended.status).toBe("SUCCEEDED");
    const { text } = await exactGet(`/executions/${executionId}`);
    expect(text).toContain(`"output":${output}`);
    const { body: view } = await exactGet(`/executions/${executionId}`);
    expect(node(view, "after").output.id.value).toBe(BIG);
  });

  it("fails arithmetic on an exact number with the documented ExpressionError", async () => {
    const { body: view } = await run("exact-arithmetic", INPUT);
    expect(view.status).toBe("FAILED");
    const add = node(view, "add");
    expect(add.error.name).toBe("ExpressionError");
    expect(add.error.message).toContain("it computes with an exact number");
    expect(add.error.message).not.toContain(BIG);
  });

  it("leaves small numbers plain: the same execution with ordinary numbers succeeds and computes", async () => {
    const { text, body: view } = await run("exact-arithmetic", `{"id":41,"rate":0.25}`);
    expect(view.status).toBe("SUCCEEDED");
    expect(node(view, "add").output).toBe(42);
    expect(text).toContain(`"input":{"id":41,"rate":0.25}`);
  });
});
