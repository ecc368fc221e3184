/**
 * The isolated evaluator (shared/adapters/expressions/isolated.ts): expressions that used to abort
 * the process (V8's "invalid size" and heap-limit crashes) or block its event loop for minutes (a
 * backtracking regex) fail with ExpressionError naming the bound, while this process's event loop
 * keeps turning and other evaluations, at the same time and after, give their values.
 */
import { afterAll, describe, expect, it } from "vitest";
import { IsolatedExpressions } from "../../shared/adapters/expressions/isolated.js";
import {
  DEFAULT_EXPRESSION_LIMITS,
  ExpressionError,
  type ExpressionScope,
} from "../../shared/domain/expressions.js";
import { expressionRejection } from "../support/expression-errors.js";

const NOW = Date.UTC(2026, 10, 28, 12, 0, 0);
const scope: ExpressionScope = {
  input: { name: "Ada", items: [1, 2, 3] },
  deps: { a: { n: 2 } },
  execution: { id: "e-1", workflow: "w", version: 1 },
};
const options = { now: () => NOW };

/** Counts the turns of this thread's event loop while `work` runs: a blocked loop counts none. */
async function turnsDuring<T>(work: Promise<T>): Promise<{ result: PromiseSettledResult<T>; turns: number }> {
  let turns = 0;
  let running = true;
  const tick = () => {
    if (!running) return;
    turns++;
    setImmediate(tick);
  };
  setImmediate(tick);
  const [result] = await Promise.allSettled([work]);
  running = false;
  return { result: result!, turns };
}

describe("the isolated evaluator", () => {
  const evaluator = new IsolatedExpressions({ threads: 2, heapMb: 256, graceMs: 200 });
  afterAll(() => evaluator.close());

  it("evaluates params and conditions over the scope, $now() from the engine's clock", async () => {
    const params = {
      greeting: "{% 'hello ' & input.name %}",
      total: "{% $sum(input.items) * deps.a.n %}",
      at: "{% $millis() %}",
      kept: 7,
      item: "{% $item %}",
    };
    expect(await evaluator.resolve(params, scope, { ...options, bindings: { item: "x" } })).toEqual({
      greeting: "hello Ada",
      total: 12,
      at: NOW,
      kept: 7,
      item: "x",
    });
    expect(await evaluator.condition("{% deps.a.n = 2 %}", scope, options)).toBe(true);
    expect(await evaluator.condition("{% deps.a.n = 3 %}", scope, options)).toBe(false);
  });

  it("fails the $pad bomb with the string bound; the process was not aborted", async () => {
    const error = await expressionRejection(
      evaluator.resolve({ value: "{% $length($pad('', 500000000, 'a')) %}" }, scope, options),
    );
    expect(error.message).toBe(
      `params.value: the expression {% $length($pad('', 500000000, 'a')) %} was stopped: it made a string of more than ${DEFAULT_EXPRESSION_LIMITS.maxStringLength} characters`,
    );
    expect(error.path).toBe("params.value");
  });

  it("fails the sort bomb with the array bound", async () => {
    const error = await expressionRejection(
      evaluator.resolve({ value: "{% $count($sort($reverse([1..9000000]))) %}" }, scope, options),
    );
    expect(error.message).toContain(
      `it made an array of more than ${DEFAULT_EXPRESSION_LIMITS.maxArrayLength} members`,
    );
  });

  it("stops a backtracking regex by ending its thread, with this event loop turning all along", async () => {
    // 33 characters blocked the runtime's event loop for about four minutes before.
    const expression = "{% $contains($pad('', 33, 'a') & 'b', /^(a+)+$/) %}";
    const { result, turns } = await turnsDuring(
      evaluator.resolve({ first: "{% 1 + 1 %}", bomb: expression }, scope, {
        ...options,
        limits: { maxMs: 300 },
      }),
    );
    expect(result.status).toBe("rejected");
    const error = (result as PromiseRejectedResult).reason;
    expect(error).toBeInstanceOf(ExpressionError);
    // Named at the expression that was running when the thread was ended, not the first one.
    expect(error.message).toBe(
      `params.bomb: the expression ${expression} was stopped: it ran for more than 300 ms (a loop that does not end?)`,
    );
    expect(turns).toBeGreaterThan(10);
    // The same regex as a `when`.
    const when = await expressionRejection(
      evaluator.condition("{% $contains($pad('', 33, 'a') & 'b', /^(a+)+$/) %}", scope, {
        ...options,
        limits: { maxMs: 300 },
      }),
    );
    expect(when.message).toContain("when: the expression");
    expect(when.message).toContain("was stopped: it ran for more than 300 ms");
    // A fresh thread answers next.
    expect(await evaluator.resolve("{% input.name %}", scope, options, "params.name")).toBe("Ada");
  });

  it("ends a thread that reaches its heap limit: the bound is named, the next evaluation runs", async () => {
    const small = new IsolatedExpressions({ threads: 1, heapMb: 64, graceMs: 200 });
    try {
      // The guard's own memory bound lifted, so the thread's hard limit is what stops it.
      const error = await expressionRejection(
        small.resolve({ value: "{% $count([1..900000].{'k': $string($), 'v': [$, $, $]}) %}" }, scope, {
          ...options,
          limits: { maxMemoryMb: 100_000, maxMs: 60_000 },
        }),
      );
      expect(error.message).toContain("was stopped: it used more than 64 MiB of memory");
      expect(await small.resolve("{% 6 * 7 %}", scope, options)).toBe(42);
    } finally {
      await small.close();
    }
  });

  it("gives each expression of a request its own time bound, as the guard inside does", async () => {
    const timed = new IsolatedExpressions({ threads: 1, heapMb: 256, graceMs: 50 });
    try {
      const slow = "{% $count([1..30000].($string($) & 'x')) %}";
      const roomy = { ...options, limits: { maxMs: 60_000 } };
      await timed.resolve(slow, scope, roomy); // the thread started and warm
      const started = performance.now();
      await timed.resolve(slow, scope, roomy);
      const oneMs = performance.now() - started;
      // Twelve such expressions in one request: together far past the bound (12 > 5 + the grace),
      // each far within it.
      const maxMs = Math.max(100, Math.ceil(oneMs * 5));
      const params = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`e${i}`, slow]));
      const value = await timed.resolve(params, scope, { ...options, limits: { maxMs } });
      expect(value).toEqual(Object.fromEntries(Object.keys(params).map((key) => [key, 30000])));
    } finally {
      await timed.close();
    }
  });

  it("keeps other evaluations going while one is stopped", async () => {
    const bomb = expressionRejection(
      evaluator.resolve({ bomb: "{% $contains($pad('', 30, 'a') & 'b', /^(a+)+$/) %}" }, scope, {
        ...options,
        limits: { maxMs: 500 },
      }),
    );
    const others = await Promise.all(
      Array.from({ length: 20 }, (_, i) => evaluator.resolve(`{% ${i} + input.items[0] %}`, scope, options)),
    );
    expect(others).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect((await bomb).message).toContain("it ran for more than 500 ms");
  });
});
