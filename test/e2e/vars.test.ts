/**
 * Execution variables end to end, in memory and on DynamoDB (emulator): `assign` seen downstream and
 * in the view, 100 parallel `incr` nodes totalling 100, each limit refused with its own code (at
 * registration where static, at run time from an expression), secret-looking values refused without
 * the value in the message, and `metrics.aggregate` over three dependencies.
 */
import { afterEach, describe, expect, it } from "vitest";
import { hasCode } from "../../shared/domain/errors.js";
import { detailCode, VARS_ERRORS, VARS_LIMITS } from "../../shared/domain/vars.js";
import { BACKEND_KINDS, type Backend, createBackend } from "../support/backends.js";
import { runToEnd } from "../support/harness.js";
import { PATIENT, waitForProgress } from "../support/progress.js";

const AWS_KEY = "AKIAIOSFODNN7EXAMPLE";
const JWT =
  "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";

describe.each(BACKEND_KINDS)("execution variables (%s)", PATIENT, (kind) => {
  let backend: Backend | undefined;
  afterEach(async () => {
    await backend?.cleanup();
    backend = undefined;
  });

  async function run(definition: { name: string; [key: string]: unknown }, input?: unknown) {
    backend = await createBackend(kind);
    await backend.engine.registerWorkflow(definition);
    const { executionId } = await backend.engine.createExecution({ workflow: definition.name, input });
    const status = await runToEnd(backend.engine, backend.consumer, backend.store, executionId);
    const view = await backend.engine.describeExecution(executionId);
    return { status, view, node: (id: string) => view.nodes.find((n) => n.id === id)! };
  }

  /** The details of a refused registration (none when it was registered). */
  async function refusal(definition: { name: string; [key: string]: unknown }) {
    backend ??= await createBackend(kind);
    try {
      await backend.engine.registerWorkflow(definition);
      return [];
    } catch (error) {
      if (!hasCode(error, "InvalidDefinition")) throw error;
      return [...error.details];
    }
  }

  it("assign: visible to later expressions as vars and in the view", async () => {
    const { status, view, node } = await run(
      {
        name: "assign",
        nodes: [
          { id: "price", type: "pass", params: { value: { amount: 21 } } },
          {
            id: "double",
            type: "pass",
            dependsOn: ["price"],
            params: { value: { ok: true } },
            assign: { total: "{% deps.price.amount * 2 %}", "order.ok": "{% $output.ok %}", tag: "gold" },
          },
          {
            id: "use",
            type: "pass",
            dependsOn: ["double"],
            when: "{% vars.total = 42 %}",
            params: {
              value: { total: "{% vars.total %}", ok: "{% vars.order.ok %}", tag: "{% vars.tag %}" },
            },
          },
        ],
      },
      {},
    );
    expect(status).toBe("SUCCEEDED");
    expect(node("use").output).toEqual({ total: 42, ok: true, tag: "gold" });
    expect(view.vars).toEqual({ total: 42, order: { ok: true }, tag: "gold" });
  });

  it("assign on map, workflow and callback nodes: from the items' outputs, the child's, the settler's", async () => {
    backend = await createBackend(kind);
    const { engine } = backend;
    await engine.registerWorkflow({
      name: "child",
      nodes: [{ id: "c", type: "pass", params: { value: 7 } }],
    });
    await engine.registerWorkflow({
      name: "composite-assign",
      nodes: [
        {
          id: "m",
          type: "map",
          params: { items: [1, 2, 3], task: { type: "pass", params: { value: "{% $item * 10 %}" } } },
          assign: { mapped: "{% $sum($output) %}" },
        },
        {
          id: "w",
          type: "workflow",
          dependsOn: ["m"],
          params: { name: "child" },
          assign: { child: "{% $output.c %}" },
        },
        {
          id: "cb",
          type: "callback",
          dependsOn: ["w"],
          params: { timeoutSeconds: 3600 },
          assign: { by: "{% $output.by %}", sum: "{% vars.mapped + vars.child %}" },
        },
        { id: "end", type: "pass", dependsOn: ["cb"], params: { value: "{% vars %}" } },
      ],
    });
    const { executionId } = await engine.createExecution({ workflow: "composite-assign" });
    // Drive until the callback waits, settle it, then drive to the end.
    const token = await waitForProgress("the callback to wait", async () => {
      await runToEnd(engine, backend!.consumer, backend!.store, executionId, 300).catch(() => undefined);
      await engine.sweep({ force: true });
      const cb = (await engine.describeExecution(executionId)).nodes.find((n) => n.id === "cb");
      return cb?.callbackToken
        ? { done: true, value: cb.callbackToken }
        : { done: false, progress: cb?.status };
    });
    await engine.completeCallback(token, { by: "ana" });
    expect(await runToEnd(engine, backend.consumer, backend.store, executionId)).toBe("SUCCEEDED");
    const view = await engine.describeExecution(executionId);
    const expected = { mapped: 60, child: 7, by: "ana", sum: 67 };
    expect(view.vars).toEqual(expected);
    expect(view.nodes.find((n) => n.id === "end")?.output).toEqual(expected);
  });

  it("assign on a node run by external workers: from the output its worker reported; a secret in it fails the attempt", async () => {
    backend = await createBackend(kind);
    const { engine } = backend;
    await engine.registerWorkflow({
      name: "external-assign",
      nodes: [
        {
          id: "gpu",
          type: "transcode",
          runsOn: { pool: "render" },
          heartbeatSeconds: 5,
          retry: { maxAttempts: 1 },
          assign: { frames: "{% $output.frames %}", key: "{% $output.key %}" },
        },
        { id: "after", type: "pass", dependsOn: ["gpu"], params: { value: "{% vars.frames %}" } },
      ],
    });
    const { workerId } = await engine.registerWorker({
      workerId: `w-${kind}`,
      pool: "render",
      executors: [],
      capabilities: {},
      labels: [],
      maxParallel: 1,
    });
    const runOnce = async (output: unknown) => {
      const { executionId } = await engine.createExecution({ workflow: "external-assign" });
      const task = await waitForProgress("the external task to be taken", async () => {
        await runToEnd(engine, backend!.consumer, backend!.store, executionId, 200).catch(() => undefined);
        const taken = await engine.pollTask(workerId, { waitSeconds: 0 });
        return taken ? { done: true, value: taken } : { done: false, progress: "not offered yet" };
      });
      await engine.completeTask(task.taskToken, output);
      await runToEnd(engine, backend!.consumer, backend!.store, executionId);
      return engine.describeExecution(executionId);
    };
    const done = await runOnce({ frames: 12 });
    expect(done.status).toBe("SUCCEEDED");
    expect(done.vars).toEqual({ frames: 12 });
    expect(done.nodes.find((n) => n.id === "after")?.output).toBe(12);
    const refused = await runOnce({ frames: 1, key: AWS_KEY });
    expect(refused.status).toBe("FAILED");
    const error = refused.nodes.find((n) => n.id === "gpu")?.error;
    expect(error?.name).toBe(VARS_ERRORS.sensitive);
    expect(error?.message).not.toContain(AWS_KEY);
  });

  it("100 parallel vars nodes incrementing one counter end at exactly 100", PATIENT, async () => {
    const width = 100;
    const { status, view, node } = await run({
      name: "incr-100",
      nodes: [
        { id: "start", type: "noop" },
        ...Array.from({ length: width }, (_, i) => ({
          id: `inc${i}`,
          type: "vars",
          dependsOn: ["start"],
          params: { op: "incr", path: "counter", by: 1 },
        })),
        {
          id: "end",
          type: "pass",
          dependsOn: Array.from({ length: width }, (_, i) => `inc${i}`),
          params: { value: "{% vars.counter %}" },
        },
      ],
    });
    expect(status).toBe("SUCCEEDED");
    expect(view.vars).toEqual({ counter: width });
    expect(node("end").output).toBe(width);
    // Each saw its own increment: the values 1..100, each once.
    const seen = Array.from({ length: width }, (_, i) => (node(`inc${i}`).output as { value: number }).value);
    expect(seen.sort((a, b) => a - b)).toEqual(Array.from({ length: width }, (_, i) => i + 1));
  });

  it("set, merge, incr and unset in a chain", async () => {
    const { status, view, node } = await run({
      name: "ops",
      nodes: [
        { id: "set", type: "vars", params: { op: "set", values: { "a.b": 1, c: "x" } } },
        { id: "one", type: "vars", dependsOn: ["set"], params: { op: "set", path: "d", value: [1, 2] } },
        {
          id: "merge",
          type: "vars",
          dependsOn: ["one"],
          params: { op: "merge", path: "a", value: { e: { f: true }, b: 2 } },
        },
        { id: "incr", type: "vars", dependsOn: ["merge"], params: { op: "incr", path: "a.b", by: 5 } },
        { id: "unset", type: "vars", dependsOn: ["incr"], params: { op: "unset", paths: ["c", "nope"] } },
      ],
    });
    expect(status).toBe("SUCCEEDED");
    expect(view.vars).toEqual({ a: { b: 7, e: { f: true } }, d: [1, 2] });
    expect(node("incr").output).toEqual({ value: 7 });
    expect(node("unset").output).toEqual({ unset: 1 });
    expect(node("set").output).toEqual({ set: 2 });
  });

  it("refuses each static limit at registration with its own code", async () => {
    const long = "x".repeat(VARS_LIMITS.maxSegmentLength + 1);
    const cases: Array<[string, unknown, string]> = [
      [
        "keys",
        {
          op: "set",
          values: Object.fromEntries(
            Array.from({ length: VARS_LIMITS.maxKeysPerOperation + 1 }, (_, i) => [`k${i}`, i]),
          ),
        },
        VARS_ERRORS.tooManyKeys,
      ],
      [
        "depth",
        {
          op: "set",
          path: Array.from({ length: VARS_LIMITS.maxDepth + 1 }, (_, i) => `l${i}`).join("."),
          value: 1,
        },
        VARS_ERRORS.tooDeep,
      ],
      [
        "nested",
        { op: "set", path: "a", value: JSON.parse(`${"[".repeat(16)}1${"]".repeat(16)}`) },
        VARS_ERRORS.tooDeep,
      ],
      [
        "path",
        { op: "incr", path: Array.from({ length: 120 }, () => "abcd").join(".") },
        VARS_ERRORS.pathTooLong,
      ],
      ["segment", { op: "unset", paths: [long] }, VARS_ERRORS.segmentTooLong],
      ["dollar", { op: "set", path: "a.$b", value: 1 }, VARS_ERRORS.invalidSegment],
      ["dot-key", { op: "merge", value: { "a.b": 1 } }, VARS_ERRORS.invalidSegment],
      ["nul", { op: "set", path: "a\u0000b", value: 1 }, VARS_ERRORS.invalidSegment],
      ["empty", { op: "set", path: "a..b", value: 1 }, VARS_ERRORS.invalidSegment],
      [
        "string",
        { op: "set", path: "big", value: "a b ".repeat(VARS_LIMITS.maxStringBytes / 4 + 1) },
        VARS_ERRORS.stringTooLong,
      ],
      ["aws", { op: "set", path: "creds.key", value: AWS_KEY }, VARS_ERRORS.sensitive],
      ["jwt", { op: "merge", path: "session", value: { token: JWT } }, VARS_ERRORS.sensitive],
    ];
    for (const [name, params, code] of cases) {
      const details = await refusal({ name: `limit-${name}`, nodes: [{ id: "v", type: "vars", params }] });
      expect(
        details.map((d) => d.code),
        name,
      ).toContain(detailCode(code as never));
      for (const detail of details) {
        expect(detail.message).not.toContain(AWS_KEY);
        expect(detail.message).not.toContain(JWT.slice(0, 30));
      }
    }
    // The same rules on assign, and blockSensitive: false lets a secret-looking value through.
    const assign = await refusal({
      name: "limit-assign",
      nodes: [{ id: "a", type: "noop", assign: { "x.$y": 1, key: AWS_KEY } }],
    });
    expect(assign.map((d) => [d.path, d.code])).toEqual([
      ['nodes[0].assign["x.$y"]', "vars_invalid_segment"],
      ["nodes[0].assign.key", "sensitive_value"],
    ]);
    expect(
      await refusal({
        name: "limit-off",
        nodes: [
          { id: "v", type: "vars", params: { op: "set", path: "k", value: AWS_KEY, blockSensitive: false } },
        ],
      }),
    ).toEqual([]);
  });

  it("refuses a secret-looking value from an expression at run time, naming the path but never the value", async () => {
    for (const secret of [AWS_KEY, JWT]) {
      const { status, node } = await run(
        {
          name: `secret-${secret.length}`,
          nodes: [
            { id: "v", type: "vars", params: { op: "set", values: { "creds.token": "{% input.secret %}" } } },
          ],
        },
        { secret },
      );
      expect(status).toBe("FAILED");
      const error = node("v").error!;
      expect(error.name).toBe(VARS_ERRORS.sensitive);
      expect(error.message).toContain('values["creds.token"]');
      expect(error.message).not.toContain(secret);
      expect(error.message).not.toContain(secret.slice(4, 16));
    }
  });

  it("fails a node whose expression gives a value past a limit, with the limit's code", async () => {
    const { status, node } = await run(
      {
        name: "runtime-limit",
        nodes: [{ id: "v", type: "vars", params: { op: "set", path: "{% input.path %}", value: 1 } }],
      },
      { path: "a.$b" },
    );
    expect(status).toBe("FAILED");
    expect(node("v").error?.name).toBe(VARS_ERRORS.invalidSegment);
    const notNumber = await run({
      name: "incr-string",
      nodes: [
        { id: "s", type: "vars", params: { op: "set", path: "n", value: "seven" } },
        { id: "i", type: "vars", dependsOn: ["s"], params: { op: "incr", path: "n" } },
      ],
    });
    expect(notNumber.status).toBe("FAILED");
    expect(notNumber.node("i").error?.name).toBe(VARS_ERRORS.notANumber);
    // A shape only an expression makes wrong: InvalidParams, naming the param.
    const shape = await run({
      name: "incr-by-text",
      nodes: [{ id: "i", type: "vars", params: { op: "incr", path: "{% 'a.$b' %}", by: "{% 'one' %}" } }],
    });
    expect(shape.status).toBe("FAILED");
    expect(shape.node("i").error?.name).toBe("InvalidParams");
    expect(shape.node("i").error?.message).toContain("params.by");
  });

  it("metrics.aggregate: sum, min, max, avg and count over three dependencies", async () => {
    const { status, node } = await run({
      name: "aggregate",
      nodes: [
        { id: "a", type: "pass", params: { value: { order: { amount: 10 } } } },
        { id: "b", type: "pass", params: { value: { order: { amount: 5 } } } },
        { id: "c", type: "pass", params: { value: { order: { amount: 30 } } } },
        { id: "d", type: "pass", params: { value: { order: { amount: "n/a" } } } },
        {
          id: "total",
          type: "metrics.aggregate",
          dependsOn: ["a", "b", "c", "d"],
          params: { field: "order.amount" },
        },
      ],
    });
    expect(status).toBe("SUCCEEDED");
    expect(node("total").output).toEqual({ sum: 45, min: 5, max: 30, avg: 15, count: 3, skipped: ["d"] });
  });
});
