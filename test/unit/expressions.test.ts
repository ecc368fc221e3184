import { describe, expect, it } from "vitest";
import { TerminalError } from "../../shared/domain/errors.js";
import {
  checkExpressions,
  evaluateCondition,
  resolveExpressions,
} from "../../shared/domain/expression-evaluation.js";
import {
  DEFAULT_EXPRESSION_LIMITS,
  type EvaluationOptions,
  type ExpressionScope,
  findExpressions,
  hasExpressions,
  isExpression,
} from "../../shared/domain/expressions.js";
import { expressionRejection } from "../support/expression-errors.js";

const SECRET = "s3cr3t-t0ken-do-not-leak";
const NOW = Date.UTC(2026, 10, 22, 8, 30, 0);

const scope: ExpressionScope = {
  input: {
    order: {
      id: "o-1",
      amount: 42,
      lines: [
        { sku: "a", qty: 2 },
        { sku: "b", qty: 3 },
      ],
    },
    token: SECRET,
  },
  deps: { fetch: { status: 200, body: { ok: true } }, "fetch-b": { rows: 3 } },
  execution: { id: "exec-1", workflow: "orders", version: 7 },
};
const options: EvaluationOptions = { now: () => NOW };

describe("isExpression / hasExpressions / findExpressions", () => {
  it.each([
    ["{% input.a %}", true],
    ["{%input%}", true],
    ["{%\n  input.a\n%}", true],
    ["{% %}", true],
    ["{%}", false],
    [" {% input.a %}", false],
    ["{% input.a %} ", false],
    ["input.a", false],
    ["{{ input.a }}", false],
  ])("isExpression(%j) is %s", (text, expected) => {
    expect(isExpression(text)).toBe(expected);
  });

  it("isExpression is false for non-strings", () => {
    expect(isExpression(42)).toBe(false);
    expect(isExpression(null)).toBe(false);
    expect(isExpression(["{% a %}"])).toBe(false);
  });

  it("hasExpressions looks deep into arrays and plain objects", () => {
    expect(hasExpressions({ a: 1, b: [2, { c: "text" }] })).toBe(false);
    expect(hasExpressions({ a: 1, b: [2, { c: "{% input %}" }] })).toBe(true);
    expect(hasExpressions("{% input %}")).toBe(true);
    expect(hasExpressions(undefined)).toBe(false);
  });

  it("findExpressions gives each expression's path, in document order", () => {
    expect(findExpressions({ a: "{% 1 %}", b: [0, "{% 2 %}", { c: "{% 3 %}" }], d: "x" })).toEqual([
      { path: ["a"], expression: "{% 1 %}" },
      { path: ["b", 1], expression: "{% 2 %}" },
      { path: ["b", 2, "c"], expression: "{% 3 %}" },
    ]);
  });

  it("walks a value nested far deeper than the stack could recurse", () => {
    let deep: unknown = "{% input %}";
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(hasExpressions(deep)).toBe(true);
    expect(findExpressions(deep)).toHaveLength(1);
  });
});

describe("resolveExpressions", () => {
  it("replaces expressions deep in objects and arrays, leaving other values as they are", async () => {
    const params = {
      method: "POST",
      url: "{% 'https://api.test/orders/' & input.order.id %}",
      headers: { "x-run": "{% execution.id %}", accept: "application/json" },
      body: {
        total: "{% $sum(input.order.lines.qty) %}",
        rows: ["{% deps.`fetch-b`.rows %}", 1, "{% deps.fetch.body.ok %}"],
        meta: { workflow: "{% execution.workflow %}", version: "{% execution.version %}" },
      },
      fixed: { untouched: [1, 2, 3] },
    };
    const resolved = await resolveExpressions(params, scope, options);
    expect(resolved).toEqual({
      method: "POST",
      url: "https://api.test/orders/o-1",
      headers: { "x-run": "exec-1", accept: "application/json" },
      body: { total: 5, rows: [3, 1, true], meta: { workflow: "orders", version: 7 } },
      fixed: { untouched: [1, 2, 3] },
    });
    // The definition's params are not changed; a part without expressions is passed on as it is.
    expect(params.url).toBe("{% 'https://api.test/orders/' & input.order.id %}");
    expect((resolved as typeof params).fixed).toBe(params.fixed);
  });

  it("returns a value without expressions as it is", async () => {
    const params = { a: [1, { b: "text" }] };
    expect(await resolveExpressions(params, scope, options)).toBe(params);
    expect(await resolveExpressions(7, scope, options)).toBe(7);
  });

  it("resolves a whole value that is one expression (to a copy, not the scope's own object)", async () => {
    const resolved = await resolveExpressions("{% input.order %}", scope, options);
    expect(resolved).toEqual((scope.input as { order: unknown }).order);
    expect(resolved).not.toBe((scope.input as { order: unknown }).order);
  });

  it("drops a key whose expression gives undefined, and puts null in an array", async () => {
    const resolved = await resolveExpressions(
      { keep: 1, gone: "{% input.missing %}", list: ["{% deps.skipped.x %}", 2] },
      scope,
      options,
    );
    expect(resolved).toEqual({ keep: 1, list: [null, 2] });
    expect(Object.hasOwn(resolved as object, "gone")).toBe(false);
    expect(await resolveExpressions("{% input.missing %}", scope, options)).toBeUndefined();
  });

  it("keeps a key named __proto__ a plain key", async () => {
    const params = JSON.parse('{"__proto__": "{% input.order.id %}", "a": {"__proto__": "{% 1 %}"}}');
    const resolved = (await resolveExpressions(params, scope, options)) as Record<string, unknown>;
    expect(Object.getPrototypeOf(resolved)).toBe(Object.prototype);
    expect(JSON.stringify(resolved)).toBe('{"__proto__":"o-1","a":{"__proto__":1}}');
  });

  it("normalizes jsonata's sequences to plain JSON arrays", async () => {
    const resolved = await resolveExpressions({ skus: "{% input.order.lines.sku %}" }, scope, options);
    expect(resolved).toEqual({ skus: ["a", "b"] });
    const skus = (resolved as { skus: unknown[] }).skus;
    expect(Object.keys(skus)).toEqual(["0", "1"]);
  });

  it("binds extra variables", async () => {
    const resolved = await resolveExpressions({ v: "{% $item.sku & '#' & $index %}" }, scope, {
      ...options,
      bindings: { item: { sku: "z" }, index: 4 },
    });
    expect(resolved).toEqual({ v: "z#4" });
  });

  it("$now() and $millis() use the given clock", async () => {
    const resolved = await resolveExpressions(
      {
        now: "{% $now() %}",
        millis: "{% $millis() %}",
        day: "{% $now('[Y0001]-[M01]-[D01]') %}",
        parsed: "{% $toMillis('10:15', '[H01]:[m01]') %}",
      },
      scope,
      { now: () => NOW },
    );
    expect(resolved).toEqual({
      now: "2026-11-22T08:30:00.000Z",
      millis: NOW,
      day: "2026-11-22",
      // Date parts missing from the picture are taken from the clock too.
      parsed: Date.UTC(2026, 10, 22, 10, 15, 0),
    });
  });

  it("reads the clock once per evaluation", async () => {
    let reads = 0;
    const clock = () => NOW + 1000 * reads++;
    const resolved = await resolveExpressions("{% [$millis(), $millis()] %}", scope, { now: clock });
    expect(resolved).toEqual([NOW, NOW]);
  });

  it("is a TerminalError with code ExpressionError naming the path of a failing expression", async () => {
    const error = await expressionRejection(
      resolveExpressions({ headers: { x: "{% input.order.id + 1 %}" } }, scope, options),
    );
    expect(error).toBeInstanceOf(TerminalError);
    expect(error.code).toBe("ExpressionError");
    expect(error.name).toBe("ExpressionError");
    expect(error.terminal).toBe(true);
    expect(error.path).toBe("params.headers.x");
    expect(error.message).toMatch(
      /^params\.headers\.x: the expression \{% input\.order\.id \+ 1 %\} failed: /,
    );
    expect(error.message).toContain("T2001");
  });

  it("names the path with the given prefix", async () => {
    const error = await expressionRejection(
      resolveExpressions({ a: ["{% $number('x') %}"] }, scope, options, "onFailure.params"),
    );
    expect(error.message).toMatch(/^onFailure\.params\.a\[0\]: /);
  });

  it("reports an expression that does not compile, with its position", async () => {
    const error = await expressionRejection(resolveExpressions({ a: "{% input.order. %}" }, scope, options));
    expect(error.message).toMatch(
      /^params\.a: the expression \{% input\.order\. %\} is invalid: .* at position \d+$/,
    );
  });

  it("refuses a function as a result", async () => {
    const error = await expressionRejection(
      resolveExpressions({ f: "{% function($x){ $x } %}" }, scope, options),
    );
    expect(error.message).toContain("gives a function");
    const builtin = await expressionRejection(resolveExpressions({ f: "{% $sum %}" }, scope, options));
    expect(builtin.message).toContain("gives a function");
  });

  it("bounds the result's size, measured as JSON text", async () => {
    const limits = { maxResultBytes: 100 };
    const fits = await resolveExpressions("{% $pad('', 90, 'x') %}", scope, { ...options, limits });
    expect(fits).toHaveLength(90);
    const error = await expressionRejection(
      resolveExpressions({ big: "{% $pad('', 200, 'x') %}" }, scope, { ...options, limits }),
    );
    expect(error.message).toMatch(
      /^params\.big: .* gives more than 100 bytes of JSON; the limit is 100 bytes$/,
    );
    const multibyte = await expressionRejection(
      resolveExpressions("{% $pad('', 40, 'é€') %}", scope, { ...options, limits }),
    );
    expect(multibyte.message).toMatch(/gives more than 100 bytes of JSON/);
  });

  it("has the documented default limits", () => {
    expect(DEFAULT_EXPRESSION_LIMITS).toEqual({
      maxMs: 1000,
      maxDepth: 200,
      maxResultBytes: 256 * 1024,
      maxStringLength: 16 * 1024 * 1024,
      maxArrayLength: 1_000_000,
      maxMemoryMb: 128,
    });
  });

  it("stops a tail-recursive runaway within the time bound", async () => {
    const started = performance.now();
    const error = await expressionRejection(
      resolveExpressions("{% ($f := function($n){ $f($n + 1) }; $f(0)) %}", scope, {
        ...options,
        limits: { maxMs: 100 },
      }),
    );
    expect(error.message).toContain("ran for more than 100 ms");
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it("stops a huge loop within the time bound", async () => {
    const started = performance.now();
    const error = await expressionRejection(
      resolveExpressions("{% $count([1..1000000].($ * 2)) %}", scope, {
        ...options,
        limits: { maxMs: 100 },
      }),
    );
    expect(error.message).toContain("ran for more than 100 ms");
    expect(performance.now() - started).toBeLessThan(3000);
  });

  it("stops a deep recursion at the depth bound, before it grows memory", async () => {
    const error = await expressionRejection(
      resolveExpressions("{% ($f := function($n){ 1 + $f($n + 1) }; $f(0)) %}", scope, options),
    );
    expect(error.message).toContain("more than 200 deep");
    // Also inside $eval.
    const viaEval = await expressionRejection(
      resolveExpressions("{% $eval('($g := function($n){ 1 + $g($n + 1) }; $g(0))') %}", scope, options),
    );
    expect(viaEval.message).toContain("more than 200 deep");
  });

  it("lets a bounded recursion, and wide or repeated function calls, finish", async () => {
    expect(
      await resolveExpressions(
        "{% ($f := function($n){ $n >= 150 ? 0 : 1 + $f($n + 1) }; $f(0)) %}",
        scope,
        options,
      ),
    ).toBe(150);
    expect(
      await resolveExpressions("{% $count($map([1..5000], function($v){ [$v, $v * 2] })) %}", scope, options),
    ).toBe(5000);
    const wide = `{% [${Array.from({ length: 500 }, (_, i) => `input.order.amount + ${i}`).join(", ")}] ~> $count %}`;
    expect(await resolveExpressions(wide, scope, options)).toBe(500);
  });

  it("evaluations of one expression are independent (one's bound does not stop another)", async () => {
    const runaway = "{% ($f := function($n){ $f($n + 1) }; $f(0)) %}";
    const slow = resolveExpressions(runaway, scope, { ...options, limits: { maxMs: 50 } });
    const fine = resolveExpressions("{% input.order.amount %}", scope, options);
    await expressionRejection(slow);
    expect(await fine).toBe(42);
  });

  it("never puts the input's or deps' contents in an error message or its cause", async () => {
    const failing = [
      "{% $number(input.token) %}",
      "{% input.token + 1 %}",
      "{% -input.token %}",
      "{% {input.token: 1, input.token: 2} %}",
      "{% {input.order: 1} %}",
      "{% $error(input.token) %}",
      "{% $assert(false, input.token) %}",
      "{% $eval('(' & input.token) %}",
      `{% $eval('$number("' & input.token & '")') %}`,
      "{% input.token ~> $f %}",
      "{% $substring(input.token, 'x') %}",
    ];
    for (const expression of failing) {
      const error = await expressionRejection(resolveExpressions({ v: expression }, scope, options));
      const texts = [error.message, String(error.cause), JSON.stringify(error.cause), error.stack ?? ""];
      for (const text of texts) expect(text, expression).not.toContain(SECRET);
    }
    const condition = await expressionRejection(evaluateCondition("{% input.token %}", scope, options));
    expect(condition.message).not.toContain(SECRET);
  });
});

describe("evaluateCondition", () => {
  it.each([
    ["{% input.order.amount > 10 %}", true],
    ["{% input.order.amount > 100 %}", false],
    ["{% deps.fetch.status = 200 and deps.fetch.body.ok %}", true],
    ["{% execution.version = 7 %}", true],
  ])("%s gives %s", async (expression, expected) => {
    expect(await evaluateCondition(expression, scope, options)).toBe(expected);
  });

  it("is false when the expression gives undefined (e.g. a skipped dependency absent from deps)", async () => {
    expect(await evaluateCondition("{% deps.skipped.ok %}", scope, options)).toBe(false);
    expect(await evaluateCondition("{% input.nothing %}", scope, options)).toBe(false);
  });

  it.each([
    ["{% input.order.id %}", "a string"],
    ["{% input.order.amount %}", "a number"],
    ["{% input.order %}", "an object"],
    ["{% input.order.lines %}", "an array"],
    ["{% null %}", "null"],
    ["{% function(){ true } %}", "a function"],
  ])("refuses %s: `when` must give true or false (it gave %s)", async (expression, type) => {
    const error = await expressionRejection(evaluateCondition(expression, scope, options));
    expect(error.path).toBe("when");
    expect(error.message).toBe(`when: the expression ${expression} must give true or false; it gave ${type}`);
  });

  it("reports a failing `when` at path when", async () => {
    const error = await expressionRejection(evaluateCondition("{% input.order.id > 1 %}", scope, options));
    expect(error.message).toMatch(/^when: the expression .* failed: /);
  });
});

describe("checkExpressions", () => {
  const context = { deps: ["fetch", "fetch-b"] };

  it("accepts valid expressions and ignores other values", () => {
    const params = {
      url: "{% 'https://x.test/' & input.id %}",
      a: "{% deps.fetch.body %}",
      b: "{% deps.`fetch-b`.rows %}",
      c: "{% $lookup(deps, 'fetch-b') %}",
      d: "{% $$.deps.fetch %}",
      e: "{% execution.id & $now() %}",
      f: "{% input.items[deps.whatever = 1] %}",
      g: "{% $map(input.items, function($v){ $v.price * 2 }) %}",
      h: "{% ($item := 1; $item) %}",
      plain: "deps.nothing",
    };
    expect(checkExpressions(params, "nodes[1].params", context)).toEqual([]);
  });

  it("reports a syntax error with jsonata's message and the position in the string", () => {
    // jsonata stops at the end of the text: column 10 of the string, the space after "input.".
    const problems = checkExpressions({ a: { b: "{% input. %}" } }, "nodes[2].params", context);
    expect(problems).toEqual([
      {
        path: "nodes[2].params.a.b",
        code: "invalid_expression",
        message: "invalid expression {% input. %}: Unexpected end of expression (S0207)",
        position: 10,
      },
    ]);
  });

  it.each([
    ["{% deps.nope.x %}", "nope"],
    ["{% $.deps.nope %}", "nope"],
    ["{% $$.deps.nope %}", "nope"],
    ["{% deps.`nope` %}", "nope"],
    ["{% $lookup(deps, 'nope') %}", "nope"],
    ["{% $map(input.items, function($v){ deps.nope }) %}", "nope"],
  ])("unknown_dependency for %s", (expression, id) => {
    const problems = checkExpressions(expression, "nodes[0].when", context);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ path: "nodes[0].when", code: "unknown_dependency" });
    expect(problems[0]!.message).toBe(
      `deps.${id} names "${id}", but deps holds only the outputs of "fetch", "fetch-b" here`,
    );
    expect(problems[0]!.position).toBeGreaterThan(2);
  });

  it("hints at backquotes for an id with '-'", () => {
    const [problem] = checkExpressions("{% deps.fetch-b %}", "p", { deps: ["fetch-b"] }).filter(
      (p) => p.code === "unknown_dependency",
    );
    expect(problem!.message).toContain("deps.`fetch-b`");
  });

  it("says when there are no dependencies at all", () => {
    const [problem] = checkExpressions("{% deps.a %}", "p", { deps: [] });
    expect(problem!.message).toBe('deps.a names "a", but deps holds nothing here (there is no dependency)');
  });

  it("$item and $index are unknown outside a map's item params", () => {
    const problems = checkExpressions({ v: "{% $item.id & $index %}" }, "nodes[0].params", context);
    expect(problems.map((p) => [p.path, p.code])).toEqual([
      ["nodes[0].params.v", "unknown_variable"],
      ["nodes[0].params.v", "unknown_variable"],
    ]);
    expect(problems.map((p) => p.message).sort()).toEqual([
      "$index is only defined in the item params of a map",
      "$item is only defined in the item params of a map",
    ]);
    expect(checkExpressions({ v: "{% $item.id & $index %}" }, "p", { ...context, allowItem: true })).toEqual(
      [],
    );
  });

  it("`error` is in scope only with allowError; other unknown root names are reported", () => {
    expect(
      checkExpressions("{% error.message %}", "onFailure.params", { deps: [], allowError: true }),
    ).toEqual([]);
    const [outside] = checkExpressions("{% error.message %}", "nodes[0].params", context);
    expect(outside).toMatchObject({ code: "unknown_variable" });
    expect(outside!.message).toContain("onFailure");
    const [misspelt] = checkExpressions("{% inptu.order %}", "nodes[0].params", context);
    expect(misspelt).toMatchObject({ code: "unknown_variable" });
    expect(misspelt!.message).toContain('"inptu" is not in an expression\'s scope');
  });

  it("reports each problem once per expression, and every expression", () => {
    const problems = checkExpressions(
      ["{% deps.x + deps.x %}", "{% (1 %}", "{% deps.y %}"],
      "onFailure.params",
      { deps: ["a"] },
    );
    expect(problems.map((p) => [p.path, p.code])).toEqual([
      ["onFailure.params[0]", "unknown_dependency"],
      ["onFailure.params[1]", "invalid_expression"],
      ["onFailure.params[2]", "unknown_dependency"],
    ]);
  });
});

describe("resolveExpressions keeps exact JSON", () => {
  it("passes -0 and ±1e400 (±Infinity) through as they are, like every other value weft keeps", async () => {
    const exact = {
      input: { zero: -0, big: Number.POSITIVE_INFINITY, list: [Number.NEGATIVE_INFINITY] },
      deps: {},
      execution: { id: "e", workflow: "w", version: 1 },
    };
    const value = (await resolveExpressions(
      { zero: "{% input.zero %}", big: "{% input.big %}", list: "{% input.list %}" },
      exact,
      { now: () => 0 },
    )) as { zero: number; big: number; list: number[] };
    expect(Object.is(value.zero, -0)).toBe(true);
    expect(value.big).toBe(Number.POSITIVE_INFINITY);
    expect(value.list).toEqual([Number.NEGATIVE_INFINITY]);
  });
});

describe("resolveExpressions bounds what one step makes", () => {
  it("refuses $pad's huge padding before building it (it used to abort the process)", async () => {
    const error = await expressionRejection(
      resolveExpressions("{% $length($pad('', 500000000, 'a')) %}", scope, options),
    );
    expect(error.message).toContain(
      `was stopped: it made a string of more than ${DEFAULT_EXPRESSION_LIMITS.maxStringLength} characters`,
    );
    expect(error.code).toBe("ExpressionError");
    expect(error).toBeInstanceOf(TerminalError);
  });

  it("refuses a string doubled past the string limit", async () => {
    const error = await expressionRejection(
      resolveExpressions(
        "{% ($s := 'ab'; $d := function($x, $n){ $n = 0 ? $x : $d($x & $x, $n - 1) }; $length($d($s, 30))) %}",
        scope,
        options,
      ),
    );
    expect(error.message).toContain("it made a string of more than");
  });

  it("refuses an array past the array limit", async () => {
    const error = await expressionRejection(
      resolveExpressions("{% $count($sort($reverse([1..9000000]))) %}", scope, options),
    );
    expect(error.message).toContain(
      `it made an array of more than ${DEFAULT_EXPRESSION_LIMITS.maxArrayLength} members`,
    );
  });

  it("lets data already in the scope pass whatever its size", async () => {
    const big = "x".repeat(2_000_000);
    const list = Array.from({ length: 1_500_000 }, (_, i) => i % 7);
    const result = await resolveExpressions(
      { text: "{% $length(input.big) %}", count: "{% $count(input.list) %}" },
      { ...scope, input: { big, list } },
      { ...options, limits: { maxStringLength: 1000, maxArrayLength: 1000 } },
    );
    expect(result).toEqual({ text: 2_000_000, count: 1_500_000 });
  });

  it("counts and pads in code points, as jsonata does", async () => {
    const result = await resolveExpressions(
      {
        length: "{% $length('a😀b') %}",
        right: "{% $pad('x', 4, '😀') %}",
        left: "{% $pad('x', -5, 'ab') %}",
        none: "{% $pad('long', 2) %}",
        spaces: "{% $pad('x', 3) %}",
      },
      scope,
      options,
    );
    expect(result).toEqual({ length: 3, right: "x😀😀😀", left: "ababx", none: "long", spaces: "x  " });
  });

  it("stops at the memory bound where the heap can be read", async () => {
    let used = 0;
    const error = await expressionRejection(
      resolveExpressions("{% $count([1..100000].($string($) & 'x')) %}", scope, {
        ...options,
        // A heap that grows by 1 MiB a step: the bound trips long before the steps end.
        heapUsed: () => (used += 1024 * 1024),
        limits: { maxMemoryMb: 16 },
      }),
    );
    expect(error.message).toContain("was stopped: it used more than 16 MiB of memory");
  });
});
