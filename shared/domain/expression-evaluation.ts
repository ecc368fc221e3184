/**
 * Evaluating and checking the JSONata expressions of definitions (expressions.ts says what they
 * are and where): compiled with jsonata, evaluated under bounds (time, nesting, sizes, heap), and
 * checked statically at registration.
 *
 * The only module that loads jsonata (about 80 KB): the engine and the isolated evaluator's thread
 * import it with `import()` on their first expression, and validation (itself loaded only when a
 * definition is registered) imports it, so a function's bundle keeps it in a chunk that an
 * instance meeting no expression never loads.
 */
import jsonata from "jsonata";
import {
  containsExact,
  EXACT_ARITHMETIC,
  isExactNumber,
  LosslessNumber,
  stringifyExact,
} from "./exact-numbers.js";
import {
  bodyOf,
  DEFAULT_EXPRESSION_LIMITS,
  type EvaluationOptions,
  ExpressionError,
  type ExpressionLimits,
  type ExpressionScope,
  findExpressions,
  joinPath,
  type Key,
  LIMIT_REASONS,
  quote,
} from "./expressions.js";
import { encodeJson, PayloadError } from "./json.js";
import { PAYLOAD_LIMITS } from "./payload.js";

// ---------------------------------------------------------------------------------------------
// Compiling, with a bounded cache: a definition's expressions are evaluated for every execution.

const CACHE_SIZE = 1000;

type Compiled = { ok: true; expression: jsonata.Expression } | { ok: false; error: SyntaxProblem };

interface SyntaxProblem {
  message: string;
  /** In the string as written (`{%` included); undefined when jsonata gave none. */
  position: number | undefined;
  cause: unknown;
}

const cache = new Map<string, Compiled>();

function compile(expression: string): Compiled {
  const hit = cache.get(expression);
  if (hit) {
    // Refresh its place: the Map's order is the eviction order (least recently used first).
    cache.delete(expression);
    cache.set(expression, hit);
    return hit;
  }
  let compiled: Compiled;
  try {
    const parsed = jsonata(bodyOf(expression));
    installGuard(parsed);
    compiled = { ok: true, expression: parsed };
  } catch (error) {
    compiled = { ok: false, error: syntaxProblem(error) };
  }
  cache.set(expression, compiled);
  if (cache.size > CACHE_SIZE) cache.delete(cache.keys().next().value!);
  return compiled;
}

function syntaxProblem(error: unknown): SyntaxProblem {
  if (error instanceof RangeError) {
    return { message: "it nests too deeply to be parsed", position: undefined, cause: error };
  }
  const fields = isObject(error) ? error : {};
  const message =
    typeof fields.message === "string" && fields.message ? fields.message : "it cannot be parsed";
  const code = typeof fields.code === "string" ? ` (${fields.code})` : "";
  const position = typeof fields.position === "number" ? fields.position + 2 : undefined;
  return { message: `${message}${code}`, position, cause: error };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

// ---------------------------------------------------------------------------------------------
// Bounding evaluation. jsonata evaluates asynchronously, calling the entry and exit hooks around
// every step; a hook that throws aborts the evaluation (the way jsonata's own tests timebox
// expressions). The hooks are installed once per compiled expression, and find the state of the
// evaluation they belong to through a binding whose name no expression can write (it has a space),
// so concurrent evaluations of one cached expression do not share it.

const GUARD_BINDING = "weft guard";
const ENTRY_HOOK = Symbol.for("jsonata.__evaluate_entry");
const EXIT_HOOK = Symbol.for("jsonata.__evaluate_exit");

/**
 * The bodies of user-defined functions met so far (AST nodes, so shared by every evaluation).
 * Depth counts these bodies running at once: deep recursion is what grows memory (each level is a
 * chain of pending promises; unbounded, ~77,000 levels and ~170 MB in a second). Tail calls are run
 * by jsonata's trampoline, each body exiting before the next enters, so they do not deepen.
 * jsonata's own step counter is not used: the items of an array constructor and the groups of a
 * group-by are evaluated concurrently, so it grows with their number, not with nesting. The count
 * here shares that weakness only where those concurrent branches call user-defined functions
 * (more than maxDepth of them at once: e.g. a group-by with a function over 200+ groups), and
 * there it errs on the side of stopping.
 */
const lambdaBodies = new WeakSet<object>();

interface Guard {
  /**
   * performance.now() at the start. The time bound is real elapsed time on the process's monotonic
   * clock, not the engine's clock: it guards the worker's CPU against a runaway expression, and an
   * engine clock that is simulated (or frozen) must not decide it. Other work interleaved on the
   * event loop between jsonata's steps counts too, which only errs on the safe side.
   */
  start: number;
  maxMs: number;
  maxDepth: number;
  depth: number;
  /** The engine's clock, read once: $now() and $millis() are constant through an evaluation. */
  nowMs: number;
  stamped: boolean;
  /** Why the evaluation was stopped, once it was: later steps (of concurrent branches) stop too. */
  tripped: string | undefined;
  maxStringLength: number;
  maxArrayLength: number;
  /** Where the heap can be read: its use at the start, and the most the evaluation may add. */
  heap: { used: () => number; start: number; maxBytes: number; maxMb: number } | undefined;
  /** Steps since the heap was last read. */
  steps: number;
}

class LimitExceeded extends Error {}

interface HookEnvironment {
  lookup(name: string): unknown;
  base?: { timestamp?: Date };
}

function installGuard(expression: jsonata.Expression): void {
  // `assign` takes a symbol too (the frame's bindings are a plain object); its types say string.
  const assign = expression.assign as unknown as (name: symbol, value: unknown) => void;
  assign.call(expression, ENTRY_HOOK, (node: unknown, _input: unknown, environment: HookEnvironment) => {
    const guard = environment.lookup(GUARD_BINDING) as Guard | undefined;
    if (!guard) return;
    if (!guard.stamped) {
      // The first step runs in the evaluation's root frame, before any other frame copies its
      // timestamp: parsing a date/time with parts missing ($toMillis with a picture) then defaults
      // them from the engine's clock too.
      guard.stamped = true;
      if (environment.base) environment.base.timestamp = new Date(guard.nowMs);
    }
    if (isObject(node)) {
      if (node.type === "lambda" && node.thunk !== true && isObject(node.body)) lambdaBodies.add(node.body);
      if (lambdaBodies.has(node) && ++guard.depth > guard.maxDepth) {
        trip(guard, `it calls functions more than ${guard.maxDepth} deep (a recursion that does not end?)`);
      }
    }
    checkTime(guard);
  });
  assign.call(
    expression,
    EXIT_HOOK,
    (node: unknown, _input: unknown, environment: HookEnvironment, result: unknown) => {
      const guard = environment.lookup(GUARD_BINDING) as Guard | undefined;
      if (!guard) return;
      if (isObject(node) && lambdaBodies.has(node)) guard.depth--;
      checkTime(guard);
      checkSize(guard, node, result);
    },
  );
  // jsonata's own $length and $pad copy a string into an array of its characters, or build one as
  // long as asked, before anything can look: these count and refuse first.
  expression.registerFunction("length", boundedLength, "<s-:n>");
  expression.registerFunction("pad", boundedPad, "<s-ns?:s>");
  // jsonata's $string would write an exact number as the object it is: this one writes its digits.
  expression.registerFunction("string", exactString, "<x-b?:s>");
}

/**
 * $string as jsonata 2.2.2's own (its code, step for step: a non-integer number to 15 significant
 * digits, ±Infinity refused, functions as ""), with an exact number (exact-numbers.ts) written as
 * its digits, alone or inside a value. A value holding none is written by JSON.stringify, as
 * jsonata writes it.
 */
function exactString(this: FunctionFocus, value: unknown, prettify?: boolean): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === "string") return value;
  if (isJsonataFunction(value)) return "";
  if (typeof value === "number" && !Number.isFinite(value))
    throw { code: "D3001", value, stack: new Error().stack };
  if (isExactNumber(value)) return value.value;
  const space = prettify ? 2 : 0;
  const single =
    Array.isArray(value) && (value as { outerWrapper?: unknown }).outerWrapper ? value[0] : value;
  const replacer = (_key: string, member: unknown): unknown => {
    if (typeof member === "number" && !Number.isNaN(member)) {
      if (!Number.isFinite(member)) throw { code: "D1001", value: member, stack: new Error().stack };
      return Number.isInteger(member) ? member : Number(member.toPrecision(15));
    }
    return member && isJsonataFunction(member) ? "" : member;
  };
  return containsExact(single)
    ? stringifyExact(single, replacer, space)
    : JSON.stringify(single, replacer, space);
}

/** Steps that read what exists (the data, a variable) rather than make something new. */
const READS = new Set(["path", "name", "variable"]);
/** Read the heap every this many steps, and after any step that made a large value. */
const HEAP_EVERY = 64;
const LARGE = 64 * 1024;

function checkSize(guard: Guard, node: unknown, result: unknown): void {
  let large = false;
  const reads = isObject(node) && typeof node.type === "string" && READS.has(node.type);
  if (typeof result === "string") {
    large = result.length > LARGE;
    if (!reads && result.length > guard.maxStringLength)
      trip(guard, `it made a string of more than ${guard.maxStringLength} characters`);
  } else if (Array.isArray(result)) {
    large = result.length > LARGE / 8;
    if (!reads && result.length > guard.maxArrayLength)
      trip(guard, `it made an array of more than ${guard.maxArrayLength} members`);
  }
  const heap = guard.heap;
  if (heap === undefined || (++guard.steps < HEAP_EVERY && !large)) return;
  guard.steps = 0;
  if (heap.used() - heap.start > heap.maxBytes) trip(guard, LIMIT_REASONS.memory(heap.maxMb));
}

interface FunctionFocus {
  environment: HookEnvironment;
}

/** $length: counts code points (as jsonata does) without an array of them. */
function boundedLength(this: FunctionFocus, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    // A high surrogate followed by a low one is one code point.
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}

/** $pad: refuses a width over the string limit before building the padding. */
function boundedPad(
  this: FunctionFocus,
  text: string | undefined,
  width: number,
  char: string | undefined,
): string | undefined {
  if (text === undefined) return undefined;
  const guard = this.environment.lookup(GUARD_BINDING) as Guard | undefined;
  const target = Math.abs(Math.trunc(width));
  if (guard && target > guard.maxStringLength)
    trip(guard, `it made a string of more than ${guard.maxStringLength} characters`);
  const fill = char === undefined || char.length === 0 ? " " : char;
  const padLength = target - (boundedLength.call(this, text) ?? 0);
  if (padLength <= 0) return text;
  // As jsonata pads: the fill repeated, cut to the length in code points.
  const fillPoints = Array.from(fill);
  let padding = fill.repeat(Math.ceil(padLength / fillPoints.length));
  if (fillPoints.length > 1) padding = Array.from(padding).slice(0, padLength).join("");
  return width > 0 ? text + padding : padding + text;
}

function checkTime(guard: Guard): void {
  if (guard.tripped !== undefined) throw new LimitExceeded(guard.tripped);
  if (performance.now() - guard.start > guard.maxMs) {
    trip(guard, LIMIT_REASONS.time(guard.maxMs));
  }
}

function trip(guard: Guard, reason: string): never {
  guard.tripped = reason;
  throw new LimitExceeded(reason);
}

// ---------------------------------------------------------------------------------------------
// Evaluating.

/** Formats the engine's time for $now(picture, timezone) with jsonata's own $fromMillis. */
const FORMAT_NOW = "{% $fromMillis($t, $p, $z) %}";

/**
 * Evaluates one expression. `where` is its path, for messages. Resolves to jsonata's raw result
 * (not yet made plain JSON).
 */
async function evaluateRaw(
  expression: string,
  scope: ExpressionScope,
  options: EvaluationOptions,
  where: string,
): Promise<unknown> {
  const compiled = compile(expression);
  if (!compiled.ok) {
    const at = compiled.error.position === undefined ? "" : ` at position ${compiled.error.position}`;
    throw new ExpressionError(
      `${where}: the expression ${quote(expression)} is invalid: ${compiled.error.message}${at}`,
      { path: where, cause: compiled.error.cause },
    );
  }
  const limits = limitsOf(options);
  const heapUsed = options.heapUsed;
  const guard: Guard = {
    start: performance.now(),
    maxMs: limits.maxMs,
    maxDepth: limits.maxDepth,
    depth: 0,
    nowMs: options.now(),
    stamped: false,
    tripped: undefined,
    maxStringLength: limits.maxStringLength,
    maxArrayLength: limits.maxArrayLength,
    heap:
      heapUsed === undefined
        ? undefined
        : {
            used: heapUsed,
            start: heapUsed(),
            maxBytes: limits.maxMemoryMb * 1024 * 1024,
            maxMb: limits.maxMemoryMb,
          },
    steps: 0,
  };
  const nowMs = guard.nowMs;
  const bindings: Record<string, unknown> = {
    ...options.bindings,
    now: (picture?: unknown, timezone?: unknown) => formatNow(nowMs, picture, timezone),
    millis: () => nowMs,
    [GUARD_BINDING]: guard,
  };
  const root: Record<string, unknown> = { input: scope.input, deps: scope.deps, execution: scope.execution };
  if (scope.error !== undefined) root.error = scope.error;
  if (scope.vars !== undefined) root.vars = scope.vars;
  try {
    return await compiled.expression.evaluate(root, bindings);
  } catch (error) {
    throw evaluationError(expression, where, guard, error);
  }
}

/** The defaults, with the limits given (an undefined one keeps its default). */
function limitsOf(options: EvaluationOptions): ExpressionLimits {
  const given = options.limits ?? {};
  const limits = { ...DEFAULT_EXPRESSION_LIMITS };
  for (const key of Object.keys(limits) as (keyof ExpressionLimits)[]) {
    const value = given[key];
    if (value !== undefined) limits[key] = value;
  }
  return limits;
}

async function formatNow(nowMs: number, picture: unknown, timezone: unknown): Promise<unknown> {
  const format = compile(FORMAT_NOW);
  if (!format.ok) throw new Error("weft: the $now() formatter does not compile");
  return format.expression.evaluate(null, { t: nowMs, p: picture, z: timezone });
}

/**
 * The ExpressionError for a failed evaluation. jsonata's messages quote values from the data
 * (`Unable to cast value to a number: "…"`): those values are cut out, and the cause kept is a
 * copy holding only the cleaned message, code and position.
 */
function evaluationError(expression: string, where: string, guard: Guard, error: unknown): ExpressionError {
  const prefix = `${where}: the expression ${quote(expression)}`;
  if (guard.tripped !== undefined || error instanceof LimitExceeded) {
    return new ExpressionError(`${prefix} was stopped: ${guard.tripped ?? (error as Error).message}`, {
      path: where,
    });
  }
  if (error instanceof RangeError) {
    // V8's own refusals of a too large string or array are RangeErrors too, as is a stack overflow.
    const tooLarge = /invalid (string|array) length/i.test(error.message);
    return new ExpressionError(
      tooLarge
        ? `${prefix} was stopped: it made a value larger than the engine can hold`
        : `${prefix} failed: it nests too deeply (the stack overflowed)`,
      { path: where },
    );
  }
  const fields = isObject(error) ? error : {};
  const code = typeof fields.code === "string" ? fields.code : undefined;
  if (code === undefined) {
    // Not one of jsonata's errors (a built-in function's own): its message could be anything.
    const name = error instanceof Error ? error.name : typeof error;
    return new ExpressionError(`${prefix} failed with ${name}`, { path: where });
  }
  let detail: string;
  if (holdsExactNumber(fields.value) || holdsExactNumber(fields.value2)) {
    // jsonata's own words would call it "not a number", which it is: say why it is refused.
    detail = EXACT_ARITHMETIC;
  } else if (code === "D3137" || code === "D3141") {
    detail = "it raised an error with $error() or $assert() (whose message is not shown: it may hold data)";
  } else {
    detail = typeof fields.message === "string" ? fields.message : "";
    for (const field of ["value", "value2", "exp"]) {
      if (!(field in fields) || fields[field] === undefined) continue;
      let text: string | undefined;
      try {
        text = JSON.stringify(fields[field]);
      } catch {
        text = undefined;
      }
      if (text) detail = detail.split(text).join("…");
    }
    if (!detail) detail = "evaluation failed";
  }
  const position = typeof fields.position === "number" ? ` at position ${fields.position + 2}` : "";
  const message = `${detail} (${code})${position}`;
  const cause = Object.assign(new Error(message), { code });
  return new ExpressionError(`${prefix} failed: ${message}`, { path: where, cause });
}

/** An operand jsonata refused that is, or (a function's array argument) holds, an exact number. */
function holdsExactNumber(value: unknown): boolean {
  return isExactNumber(value) || (Array.isArray(value) && value.some((member) => isExactNumber(member)));
}

class FunctionResult extends Error {}

function isJsonataFunction(value: unknown): boolean {
  return (
    typeof value === "function" ||
    (isObject(value) && (value._jsonata_lambda === true || value._jsonata_function === true))
  );
}

/**
 * jsonata's result as plain JSON: its sequences are arrays with extra properties, and it may
 * return functions (an error here) or values shared with the scope (copied). Checks the size.
 */
function toJson(result: unknown, expression: string, where: string, maxBytes: number): unknown {
  if (result === undefined) return undefined;
  const prefix = `${where}: the expression ${quote(expression)}`;
  const fail = (message: string): never => {
    throw new ExpressionError(message, { path: where });
  };
  let value: unknown;
  try {
    value = plainCopy(result);
  } catch (error) {
    if (error instanceof FunctionResult) fail(`${prefix} gives a function, which is not a JSON value`);
    if (error instanceof RangeError) fail(`${prefix} gives a value nested too deeply for JSON`);
    throw error;
  }
  // Measured as exact JSON (domain/json.ts): -0 and ±1e400 (±Infinity) stay what they are, as in
  // every other value weft keeps, where JSON.stringify would turn them into 0 and null.
  try {
    encodeJson(value, { maxBytes, maxDepth: PAYLOAD_LIMITS.maxDepth, what: "the expression's value" });
  } catch (error) {
    if (!(error instanceof PayloadError)) throw error;
    if (error.code === "PayloadTooDeep") fail(`${prefix} gives a value nested too deeply for JSON`);
    fail(`${prefix} gives more than ${maxBytes} bytes of JSON; the limit is ${maxBytes} bytes`);
  }
  return value;
}

/**
 * A fresh copy of jsonata's result with nothing but JSON in it: arrays (a sequence's extra
 * properties dropped; undefined members null), plain objects (undefined members dropped), and the
 * scalars as they are. A function anywhere is refused (FunctionResult).
 */
function plainCopy(value: unknown): unknown {
  if (isJsonataFunction(value)) throw new FunctionResult();
  // A number kept exact (exact-numbers.ts): a leaf, copied as the number it is.
  if (isExactNumber(value)) return new LosslessNumber(value.value);
  if (Array.isArray(value)) return value.map((member) => (member === undefined ? null : plainCopy(member)));
  if (isObject(value)) {
    const copy: Record<string, unknown> = {};
    for (const [key, member] of Object.entries(value)) {
      if (member === undefined) continue;
      // defineProperty: a "__proto__" key is a member, never the prototype.
      Object.defineProperty(copy, key, {
        value: plainCopy(member),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return copy;
  }
  return value;
}

/**
 * A copy of `value` with each expression string replaced by its value (undefined results: the key
 * is dropped from objects, and become null inside arrays). Non-expression values are returned as
 * they are (a part holding no expression is the same object, not a copy). Throws ExpressionError
 * (naming the path, e.g. "params.headers.x") on an evaluation error, a timeout, or a result over
 * maxResultBytes (measured as JSON text). Expressions are evaluated one after another, in
 * document order, each with its own bounds.
 */
export async function resolveExpressions(
  value: unknown,
  scope: ExpressionScope,
  options: EvaluationOptions,
  path = "params",
): Promise<unknown> {
  const found = findExpressions(value);
  if (found.length === 0) return value;
  const maxBytes = limitsOf(options).maxResultBytes;
  const results: unknown[] = [];
  for (const [index, { path: keys, expression }] of found.entries()) {
    options.onExpression?.(index);
    const where = joinPath(path, keys);
    const raw = await evaluateRaw(expression, scope, options, where);
    results.push(toJson(raw, expression, where, maxBytes));
  }
  if (found.length === 1 && found[0]!.path.length === 0) return results[0];

  // Copy the containers on the way to each expression (once each), then set the results.
  const copies = new Map<object, Record<string, unknown> | unknown[]>();
  const copyOf = (container: object): Record<string, unknown> | unknown[] => {
    let copy = copies.get(container);
    if (!copy) {
      // fromEntries defines own properties, so a key named "__proto__" stays a plain key.
      copy = Array.isArray(container) ? [...container] : Object.fromEntries(Object.entries(container));
      copies.set(container, copy);
    }
    return copy;
  };
  const root = copyOf(value as object);
  found.forEach(({ path: keys }, index) => {
    let original = value as Record<Key, unknown>;
    let target = root as Record<Key, unknown>;
    for (const key of keys.slice(0, -1)) {
      original = original[key] as Record<Key, unknown>;
      const child = copyOf(original) as Record<Key, unknown>;
      define(target, key, child);
      target = child;
    }
    const last = keys[keys.length - 1]!;
    const result = results[index];
    if (Array.isArray(target)) target[last as number] = result === undefined ? null : result;
    else if (result === undefined) delete target[last];
    else define(target, last, result);
  });
  return root;
}

/** Sets an own property, also for a key such as "__proto__" (which `=` would take as the prototype). */
function define(target: Record<Key, unknown>, key: Key, value: unknown): void {
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
}

/**
 * A node's `when`: true only for the boolean true; false for false and for undefined (no match,
 * e.g. a skipped dependency absent from deps); any other result throws ExpressionError saying
 * `when` must give true or false and the type of what it gave (never its contents).
 */
export async function evaluateCondition(
  expression: string,
  scope: ExpressionScope,
  options: EvaluationOptions,
): Promise<boolean> {
  const result = await evaluateRaw(expression, scope, options, "when");
  if (result === true) return true;
  if (result === false || result === undefined) return false;
  throw new ExpressionError(
    `when: the expression ${quote(expression)} must give true or false; it gave ${describeType(result)}`,
    { path: "when" },
  );
}

function describeType(value: unknown): string {
  if (value === null) return "null";
  if (isJsonataFunction(value)) return "a function";
  if (Array.isArray(value)) return "an array";
  if (isExactNumber(value)) return "an exact number";
  switch (typeof value) {
    case "string":
      return "a string";
    case "number":
      return "a number";
    case "object":
      return "an object";
    default:
      return `a ${typeof value}`;
  }
}

// ---------------------------------------------------------------------------------------------
// Static checks at registration.

export interface ExpressionProblem {
  path: string;
  code: "invalid_expression" | "unknown_dependency" | "unknown_variable";
  /** What is wrong, without the path or the position (both given apart). */
  message: string;
  /**
   * Where jsonata points, in the string as written (`{%` included): the 1-based column of the last
   * character of the token it stopped at (the end of the text for an unexpected end).
   */
  position?: number;
}

export interface CheckContext {
  /** The ids `deps.X` may name. */
  deps: readonly string[];
  /** `$item` and `$index` are bound (a map's item params). */
  allowItem?: boolean;
  /** `error` is in the scope (an onFailure handler's params). */
  allowError?: boolean;
}

/** The names an expression's scope holds. */
const SCOPE_NAMES = ["input", "deps", "execution", "vars"] as const;
const ITEM_VARIABLES = ["item", "index"];
/** Ids listed in a message, at most. */
const MAX_LISTED = 20;

/**
 * Static checks at registration, for every expression inside `value` (paths under `path`, e.g.
 * "nodes[2].params"): each compiles (a syntax error gives invalid_expression with jsonata's message
 * and the position); `deps.X` (also `$.deps.X`, `$$.deps.X`, deps.`X` and `$lookup(deps, "X")`)
 * naming an X not in `deps` gives unknown_dependency; `$item`/`$index` without `allowItem`, and a
 * name at the root of the scope that is not in it (`error` without `allowError`, or a misspelt
 * `inptu.x`), give unknown_variable. Names are only checked where they are certainly looked up in
 * the scope itself (not inside a filter or after a path step, where they are the data's fields).
 * Types are not checked.
 */
export function checkExpressions(value: unknown, path: string, context: CheckContext): ExpressionProblem[] {
  const problems: ExpressionProblem[] = [];
  for (const { path: keys, expression } of findExpressions(value)) {
    const where = joinPath(path, keys);
    const compiled = compile(expression);
    if (!compiled.ok) {
      const problem: ExpressionProblem = {
        path: where,
        code: "invalid_expression",
        message: `invalid expression ${quote(expression)}: ${compiled.error.message}`,
      };
      if (compiled.error.position !== undefined) problem.position = compiled.error.position;
      problems.push(problem);
      continue;
    }
    const seen = new Set<string>();
    for (const problem of checkAst(compiled.expression.ast(), context)) {
      const key = `${problem.code}\u0000${problem.message}`;
      if (seen.has(key)) continue;
      seen.add(key);
      problems.push({ path: where, ...problem });
    }
  }
  return problems;
}

type AstNode = Record<string, unknown> & { type?: unknown };
type AstProblem = Omit<ExpressionProblem, "path">;

/**
 * Whether a child of a node is evaluated in the same context as the node: then, when the node is
 * evaluated over the scope itself, so is the child. Anything not listed (a filter, a sort term, a
 * path's later steps, a group-by, a transform) is evaluated over other data.
 */
const SAME_CONTEXT: Record<string, readonly string[]> = {
  binary: ["lhs", "rhs"],
  unary: ["expression", "expressions", "lhs"],
  condition: ["condition", "then", "else"],
  block: ["expressions"],
  bind: ["rhs"],
  apply: ["lhs", "rhs"],
  function: ["procedure", "arguments"],
  partial: ["procedure", "arguments"],
  // A function's body is evaluated over the context the function was defined in.
  lambda: ["body"],
};
/** Properties holding no sub-expression (or ones the checks do not need). */
const SKIPPED_KEYS = new Set(["position", "value", "signature", "slot", "tuple", "ancestor", "type"]);

function checkAst(ast: unknown, context: CheckContext): AstProblem[] {
  const problems: AstProblem[] = [];
  const bound = new Set<string>();
  const itemUses: { name: string; position: number | undefined }[] = [];
  const known = new Set<string>(SCOPE_NAMES);
  if (context.allowError) known.add("error");

  const stack: { node: unknown; root: boolean }[] = [{ node: ast, root: true }];
  while (stack.length > 0) {
    const { node, root } = stack.pop()!;
    if (Array.isArray(node)) {
      for (const child of node) stack.push({ node: child, root });
      continue;
    }
    if (!isObject(node)) continue;
    const current = node as AstNode;
    const type = typeof current.type === "string" ? current.type : "";

    // Variables: bound here, or used.
    if (type === "variable" && typeof current.value === "string") {
      if (ITEM_VARIABLES.includes(current.value))
        itemUses.push({ name: current.value, position: positionOf(current) });
    }
    if (type === "bind" && isObject(current.lhs) && typeof current.lhs.value === "string")
      bound.add(current.lhs.value);
    if (type === "lambda" && Array.isArray(current.arguments)) {
      for (const argument of current.arguments) {
        if (isObject(argument) && typeof argument.value === "string") bound.add(argument.value);
      }
    }
    for (const key of ["focus", "index"])
      if (typeof current[key] === "string") bound.add(current[key] as string);

    if (type === "path" && Array.isArray(current.steps)) {
      checkScopePath(current.steps, root, known, context, problems);
      // The first step is evaluated in the path's context; the later ones over what it gave.
      current.steps.forEach((step, i) => {
        stack.push({ node: step, root: root && i === 0 });
      });
      for (const [key, child] of Object.entries(current)) {
        if (key !== "steps" && !SKIPPED_KEYS.has(key)) stack.push({ node: child, root: false });
      }
      continue;
    }
    if (root && type === "function") checkLookup(current, context, problems);

    const same = SAME_CONTEXT[type] ?? [];
    for (const [key, child] of Object.entries(current)) {
      if (SKIPPED_KEYS.has(key)) continue;
      stack.push({ node: child, root: root && same.includes(key) });
    }
  }

  if (!context.allowItem) {
    for (const use of itemUses) {
      if (bound.has(use.name)) continue;
      const problem: AstProblem = {
        code: "unknown_variable",
        message: `$${use.name} is only defined in the item params of a map`,
      };
      if (use.position !== undefined) problem.position = use.position;
      problems.push(problem);
    }
  }
  return problems;
}

/**
 * A path evaluated over the scope: `name…`, `$.name…` or `$$.name…` (`$$` is the scope anywhere).
 * Checks the root name, and for `deps` the dependency named next.
 */
function checkScopePath(
  steps: unknown[],
  root: boolean,
  known: Set<string>,
  context: CheckContext,
  problems: AstProblem[],
): void {
  const head = steps[0];
  const variable = isObject(head) && head.type === "variable" ? head.value : undefined;
  // `$$` is the scope wherever it is; a name or `$` only where the context is the scope.
  if (variable !== "$" && !root) return;
  const first = variable === "" || variable === "$" ? 1 : 0;
  const step = steps[first];
  if (!isObject(step) || step.type !== "name" || typeof step.value !== "string") return;
  const name = step.value;
  if (!known.has(name)) {
    problems.push(withPosition(unknownName(name, context), step));
    return;
  }
  if (name !== "deps") return;
  const next = steps[first + 1];
  if (isObject(next) && next.type === "name" && typeof next.value === "string") {
    checkDependency(next.value, next, context, problems);
  }
}

/** Checks `$lookup(deps, "X")` (also with `$.deps`/`$$.deps`). */
function checkLookup(node: AstNode, context: CheckContext, problems: AstProblem[]): void {
  const procedure = node.procedure;
  if (!isObject(procedure) || procedure.type !== "variable" || procedure.value !== "lookup") return;
  const [target, key] = Array.isArray(node.arguments) ? node.arguments : [];
  if (!isObject(target) || target.type !== "path" || !Array.isArray(target.steps)) return;
  const steps = target.steps;
  const head = steps[0];
  const first =
    isObject(head) && head.type === "variable" && (head.value === "" || head.value === "$") ? 1 : 0;
  const step = steps[first];
  if (steps.length !== first + 1 || !isObject(step) || step.type !== "name" || step.value !== "deps") return;
  if (isObject(key) && key.type === "string" && typeof key.value === "string") {
    checkDependency(key.value, key, context, problems);
  }
}

function checkDependency(
  id: string,
  node: Record<string, unknown>,
  context: CheckContext,
  problems: AstProblem[],
) {
  if (context.deps.includes(id)) return;
  const allowed =
    context.deps.length === 0
      ? "nothing here (there is no dependency)"
      : `only the outputs of ${listIds(context.deps)} here`;
  const hyphened = context.deps.find((dep) => dep.startsWith(`${id}-`));
  const hint = hyphened ? `; an id with "-" is written in backquotes: deps.\`${hyphened}\`` : "";
  problems.push(
    withPosition(
      {
        code: "unknown_dependency",
        message: `deps.${id} names "${id}", but deps holds ${allowed}${hint}`,
      },
      node,
    ),
  );
}

function unknownName(name: string, context: CheckContext): AstProblem {
  if (name === "error") {
    return {
      code: "unknown_variable",
      message: "error is only in the scope of an onFailure handler's params",
    };
  }
  const names = [...SCOPE_NAMES, ...(context.allowError ? ["error"] : [])].join(", ");
  return {
    code: "unknown_variable",
    message: `"${name}" is not in an expression's scope, which holds ${names} (did you mean input.${name}?)`,
  };
}

function listIds(ids: readonly string[]): string {
  const shown = ids.slice(0, MAX_LISTED).map((id) => `"${id}"`);
  return ids.length > MAX_LISTED
    ? `${shown.join(", ")} and ${ids.length - MAX_LISTED} more`
    : shown.join(", ");
}

/** jsonata's positions (the end of the token) in the string as written (after `{%`). */
function positionOf(node: Record<string, unknown>): number | undefined {
  return typeof node.position === "number" ? node.position + 2 : undefined;
}

function withPosition(problem: AstProblem, node: Record<string, unknown>): AstProblem {
  const position = positionOf(node);
  return position === undefined ? problem : { ...problem, position };
}
