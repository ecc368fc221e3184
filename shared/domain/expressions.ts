/**
 * JSONata expressions in definitions: a string that is wholly `{% … %}` (a node's `when`, or any
 * string inside `params`) is evaluated at run time (expression-evaluation.ts) over the scope
 * `{ input, deps: {<dependency id>: output}, execution: {id, workflow, version}, vars }` (plus
 * `error` in an onFailure handler's params), and replaced by its value.
 *
 * Pure domain code: the engine passes its clock, and nothing here reads the wall clock for a value
 * an expression can see. Evaluation is bounded (time, nesting of user functions, size of the
 * result) and its errors never quote the data the expression was evaluated over, which may hold
 * secrets: only the expression's text and where it is in the definition.
 */
import { TerminalError } from "./errors.js";

export interface ExpressionScope {
  input: unknown;
  deps: Record<string, unknown>;
  execution: { id: string; workflow: string; version: number };
  /** Only in an onFailure handler's params. */
  error?: { name: string; message: string };
  /**
   * The execution's variables (domain/vars.ts), read only for expressions that mention `vars`
   * (engine/vars.ts withVariables); absent, `vars.x` is undefined.
   */
  vars?: unknown;
}

export interface ExpressionLimits {
  /** Most elapsed milliseconds of one evaluation (measured with performance.now(), see `Guard`). */
  maxMs: number;
  /** Most user-defined functions (`function($x){…}`) running inside one another: bounds recursion. */
  maxDepth: number;
  /** Most UTF-8 bytes of a result, as JSON text. */
  maxResultBytes: number;
  /**
   * Most characters of a string one step makes (`&`, `$pad`, `$join`, `$string`…). Reading a string
   * that is already in the data is not making one: a payload's string passes whatever its length.
   */
  maxStringLength: number;
  /** Most members of an array one step makes (`[1..n]`, `$split`, `$map`…), reads again excepted. */
  maxArrayLength: number;
  /**
   * Most MiB of heap one evaluation may add to what its scope already takes. Only where the
   * evaluation is given a way to read the heap (EvaluationOptions.heapUsed: the isolated
   * evaluator's thread, which also has a hard heap limit: adapters/expressions/).
   */
  maxMemoryMb: number;
}

/** Every expression limit, in one place (docs/limits.md lists them with their errors). */
export const DEFAULT_EXPRESSION_LIMITS: ExpressionLimits = {
  maxMs: 1000,
  maxDepth: 200,
  maxResultBytes: 256 * 1024,
  // Above the largest string a 10 MiB payload can hold, so data read in full never trips it; far
  // below V8's own string limit (2^29 characters), whose overrun is what used to abort the process.
  maxStringLength: 16 * 1024 * 1024,
  // One array of a million members is 8 MB: every allocation a bounded step can make stays within
  // the leeway V8 gives a thread at its heap limit, so an overrun ends the thread, not the process.
  maxArrayLength: 1_000_000,
  maxMemoryMb: 128,
};

export interface EvaluationOptions {
  /** The engine's clock (ports): jsonata's $now() and $millis() use it, never Date.now. */
  now: () => number;
  limits?: Partial<ExpressionLimits>;
  /** Extra variables bound as $name (e.g. { item, index } for a map's item later). */
  bindings?: Record<string, unknown>;
  /**
   * Bytes of heap in use now: given where the heap is the evaluation's own (the isolated
   * evaluator's thread), it bounds memory (limits.maxMemoryMb over the use at the start).
   */
  heapUsed?: () => number;
  /** Told the index (in expressionsIn's order) of each expression as its evaluation starts. */
  onExpression?: (index: number) => void;
}

/**
 * An expression that cannot be evaluated, or gave what its place cannot take. Terminal: the same
 * definition over the same data fails the same way. The message names where (`params.url`,
 * `when`), the expression and what went wrong, never the data it was evaluated over.
 */
export class ExpressionError extends TerminalError {
  declare readonly code: "ExpressionError";
  /** Where the expression is, e.g. `params.headers.x` or `when`. */
  readonly path: string | undefined;

  constructor(message: string, options: { path?: string; cause?: unknown } = {}) {
    super(message, { code: "ExpressionError", cause: options.cause });
    this.path = options.path;
  }
}

const EXPRESSION_PATTERN = /^\{%[\s\S]*%\}$/;

/** True for a string that is wholly `{% … %}`. */
export function isExpression(value: unknown): value is string {
  return typeof value === "string" && EXPRESSION_PATTERN.test(value);
}

/** The text between `{%` and `%}`. */
export function bodyOf(expression: string): string {
  return expression.slice(2, -2);
}

// ---------------------------------------------------------------------------------------------
// Walking values: plain objects and arrays, iteratively (a value nested 100,000 deep must not
// overflow the stack).

export type Key = string | number;

export interface FoundExpression {
  /** Keys from the value's root to the expression string; [] when the value is one. */
  path: Key[];
  expression: string;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** A path as a chain to its parent: sharing prefixes keeps deep walks linear. */
interface PathLink {
  parent: PathLink | undefined;
  key: Key;
}

function pathOf(link: PathLink | undefined): Key[] {
  const keys: Key[] = [];
  for (let at = link; at; at = at.parent) keys.push(at.key);
  return keys.reverse();
}

/** Every expression string inside `value` (deep: arrays and plain objects), in document order. */
export function findExpressions(value: unknown): FoundExpression[] {
  const found: FoundExpression[] = [];
  const stack: { value: unknown; link: PathLink | undefined }[] = [{ value, link: undefined }];
  while (stack.length > 0) {
    const { value: current, link } = stack.pop()!;
    if (isExpression(current)) found.push({ path: pathOf(link), expression: current });
    else if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) {
        stack.push({ value: current[i], link: { parent: link, key: i } });
      }
    } else if (isPlainObject(current)) {
      const keys = Object.keys(current);
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i]!;
        stack.push({ value: current[key], link: { parent: link, key } });
      }
    }
  }
  return found;
}

/** True when any string inside value (deep: arrays and plain objects) is an expression. */
export function hasExpressions(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const current = stack.pop();
    if (isExpression(current)) return true;
    // One push per item: spreading a huge array into push() would overflow the call's arguments.
    if (Array.isArray(current)) for (const item of current) stack.push(item);
    else if (isPlainObject(current)) for (const key of Object.keys(current)) stack.push(current[key]);
  }
  return false;
}

/** `params.headers.x`, `params.items[2]`, `params["a b"]` (validate.ts's formatPath style). */
export function joinPath(prefix: string, keys: readonly Key[]): string {
  let out = prefix;
  for (const key of keys) {
    if (typeof key === "number") out += `[${key}]`;
    else if (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key)) out += out ? `.${key}` : key;
    else out += `[${JSON.stringify(key)}]`;
  }
  return out;
}

/** An expression as quoted in a message: its text, cut short when long. */
export function quote(expression: string): string {
  const max = 200;
  return expression.length > max ? `${expression.slice(0, max)}…` : expression;
}

/** Where each expression inside `value` is (`params.url`…) and its text, in evaluation order. */
export function expressionsIn(value: unknown, path = "params"): { where: string; expression: string }[] {
  return findExpressions(value).map(({ path: keys, expression }) => ({
    where: joinPath(path, keys),
    expression,
  }));
}

/**
 * The error of an evaluation stopped from outside (the isolated evaluator ended its thread): the
 * same words as a bound tripped inside, e.g. `it ran for more than 1000 ms`.
 */
export function stoppedExpression(expression: string, where: string, reason: string): ExpressionError {
  return new ExpressionError(`${where}: the expression ${quote(expression)} was stopped: ${reason}`, {
    path: where,
  });
}

/** The words of a bound that stopped an evaluation (shared by the guard here and the isolated evaluator). */
export const LIMIT_REASONS = {
  time: (ms: number) => `it ran for more than ${ms} ms (a loop that does not end?)`,
  memory: (mb: number) => `it used more than ${mb} MiB of memory`,
} as const;
