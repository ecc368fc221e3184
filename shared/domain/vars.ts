/**
 * Execution variables: a JSON document per execution that nodes write (a node's `assign`, a `vars`
 * node's operation) and every later expression reads as `vars`. Pure rules: the operations' shapes,
 * their limits and error codes, and how an operation changes the document. Storing it (one item per
 * execution, versioned, written under a condition on the version) is engine/vars.ts's.
 *
 * A path names a place in the document by object keys joined with `.` ("order.total"); the empty
 * path (merge's default) is the document itself. Paths go through objects only: an array, a scalar
 * or nothing in the way is replaced by an object when something is written below it.
 */

import { TerminalError } from "./errors.js";
import { cloneExact, isExactNumber, stringifyExact } from "./exact-numbers.js";
import { isExpression } from "./expressions.js";
import { findSensitive, type SensitiveKind } from "./sensitive.js";
import * as z from "./zod.js";

/** Every limit of variables, in one place (docs/limits.md lists them with their codes). */
export const VARS_LIMITS = {
  /** Paths one operation (or one `assign`) names: set's values, unset's paths, merge's keys. */
  maxKeysPerOperation: 256,
  /** Levels of objects and arrays from the document's root to the deepest value. */
  maxDepth: 16,
  maxPathLength: 512,
  maxSegmentLength: 128,
  /** UTF-8 bytes of any one string value. */
  maxStringBytes: 64 * 1024,
  /**
   * UTF-8 bytes of the whole document as JSON. It is stored in one DynamoDB item (≤ 400 KB) beside
   * the record of the nodes that wrote it (engine/vars.ts), so it stays well below that.
   */
  maxDocumentBytes: 256 * 1024,
  /** The stored item: the document and the record of applied nodes together. */
  maxItemBytes: 380_000,
} as const;

/** The error codes of variables, named once: a run-time error's name, and (snake_case) a 400 detail's code. */
export const VARS_ERRORS = {
  tooManyKeys: "VarsTooManyKeys",
  tooDeep: "VarsTooDeep",
  pathTooLong: "VarsPathTooLong",
  segmentTooLong: "VarsSegmentTooLong",
  invalidSegment: "VarsInvalidSegment",
  stringTooLong: "VarsStringTooLong",
  documentTooLarge: "VarsDocumentTooLarge",
  notANumber: "VarsNotANumber",
  sensitive: "SensitiveValue",
} as const;

export type VarsErrorCode = (typeof VARS_ERRORS)[keyof typeof VARS_ERRORS];

/** `VarsTooManyKeys` → `vars_too_many_keys`: the code of the same refusal at registration. */
export function detailCode(code: VarsErrorCode): string {
  return code.replace(/[A-Z]/g, (c, at: number) => (at === 0 ? "" : "_") + c.toLowerCase());
}

/** A refusal of an operation: where in its params (`values["a.b"]`), the code, a message without values. */
export interface VarsProblem {
  field: string;
  code: VarsErrorCode;
  message: string;
}

/** An operation refused at run time: terminal (the same operation would be refused again). */
export class VarsError extends TerminalError {
  constructor(problem: VarsProblem) {
    super(problem.message, { code: problem.code });
  }
}

/** The built-in task type of the operations (shared/tasks/vars.ts). */
export const VARS_TASK_TYPE = "vars";

// ---------------------------------------------------------------------------------------------
// The operations' params (the `vars` task type's schema; shapes only, the limits are checkVarsOp's).

const pathSchema = z.string();
const blockSensitive = z.optional(z.boolean());

export const varsParamsSchema = z.discriminatedUnion("op", [
  z
    .strictObject({
      op: z.literal("set"),
      /** Several paths at once: `{"a.b": 1, "c": "x"}`. */
      values: z.optional(z.record(z.string(), z.unknown())),
      /** Or one path and its value. */
      path: z.optional(pathSchema),
      value: z.optional(z.unknown()),
      blockSensitive,
    })
    .check(
      z.refine((p) => (p.values === undefined) !== (p.path === undefined), {
        message: 'give either "values" or "path" with "value"',
      }),
      z.refine((p) => p.path === undefined || "value" in p, { message: '"path" needs a "value"' }),
    ),
  z.strictObject({
    op: z.literal("merge"),
    /** Where the object is merged; absent or "": the document itself. */
    path: z.optional(pathSchema),
    value: z.record(z.string(), z.unknown()),
    blockSensitive,
  }),
  z.strictObject({
    op: z.literal("incr"),
    path: pathSchema,
    /** Default 1; negative to decrement. */
    by: z.optional(z.number()),
  }),
  z.strictObject({
    op: z.literal("unset"),
    paths: z.array(pathSchema).check(z.minLength(1, "list at least one path")),
  }),
]);

export type VarsOp = z.output<typeof varsParamsSchema>;

/** A node's `assign`: variables set from the node's scope and output once it completes. */
export const assignSchema = z.record(z.string(), z.unknown());

/** `set` of the assigned values: what an `assign` is, once its expressions are evaluated. */
export function assignOp(values: Record<string, unknown>): VarsOp {
  return { op: "set", values };
}

/** What an operation gives as its node's output (and again, the same, to a duplicate). */
export type VarsResult = { value: number } | { set: number } | { merged: number } | { unset: number };

// ---------------------------------------------------------------------------------------------
// Limits.

const encoder = new TextEncoder();
const bytesOf = (text: string) => encoder.encode(text).length;

/** `values["a.b"]`, `paths[2]`, `path`: where in the params, as validation writes paths. */
function fieldOf(keys: ReadonlyArray<string | number>): string {
  let out = "";
  for (const key of keys) {
    if (typeof key === "number") out += `[${key}]`;
    else if (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key)) out += out ? `.${key}` : key;
    else out += `[${JSON.stringify(key)}]`;
  }
  return out;
}

/** Why a key cannot be a segment of a path, or undefined. */
function segmentProblem(segment: string): { code: VarsErrorCode; why: string } | undefined {
  if (segment.length > VARS_LIMITS.maxSegmentLength)
    return {
      code: VARS_ERRORS.segmentTooLong,
      why: `a key of ${segment.length} characters (at most ${VARS_LIMITS.maxSegmentLength})`,
    };
  if (segment === "") return { code: VARS_ERRORS.invalidSegment, why: "an empty key" };
  if (segment.startsWith("$")) return { code: VARS_ERRORS.invalidSegment, why: 'a key starting with "$"' };
  if (segment.includes(".")) return { code: VARS_ERRORS.invalidSegment, why: 'a key holding "."' };
  if (segment.includes("\u0000")) return { code: VARS_ERRORS.invalidSegment, why: "a key holding NUL" };
  return undefined;
}

/** The segments of a path, or its problem. `allowRoot`: "" is the document itself (merge). */
export function parsePath(
  path: string,
  field: string,
  allowRoot = false,
): { segments: string[] } | { problem: VarsProblem } {
  if (path === "" && allowRoot) return { segments: [] };
  if (path.length > VARS_LIMITS.maxPathLength)
    return {
      problem: {
        field,
        code: VARS_ERRORS.pathTooLong,
        message: `${field}: a path of ${path.length} characters (at most ${VARS_LIMITS.maxPathLength})`,
      },
    };
  const segments = path.split(".");
  for (const segment of segments) {
    const problem = segmentProblem(segment);
    // A key too long is named by its length only: it may be anything.
    if (problem)
      return {
        problem: { field, code: problem.code, message: `${field}: the path has ${problem.why}` },
      };
  }
  return { segments };
}

interface CheckOptions {
  /** Refuse secret-looking strings (sensitive.ts). */
  blockSensitive: boolean;
  /** Strings left unchecked: at registration, expressions (known only at run time). */
  skip?: (text: string) => boolean;
}

/**
 * A value written at `level` (the segments of its path): its depth, its strings' sizes, its objects'
 * keys, and (blockSensitive) its secret-looking strings. Iterative.
 */
function valueProblem(
  value: unknown,
  level: number,
  field: string,
  options: CheckOptions,
): VarsProblem | undefined {
  const skip = options.skip ?? (() => false);
  const stack: Array<{ value: unknown; level: number; keys: Array<string | number> }> = [
    { value, level, keys: [] },
  ];
  while (stack.length > 0) {
    const current = stack.pop()!;
    const where = `${field}${current.keys.length ? ` at ${fieldOf(current.keys)}` : ""}`;
    const v = current.value;
    if (typeof v === "string") {
      if (skip(v)) continue;
      const bytes = bytesOf(v);
      if (bytes > VARS_LIMITS.maxStringBytes)
        return {
          field,
          code: VARS_ERRORS.stringTooLong,
          message: `${where}: a string of ${bytes} bytes (at most ${VARS_LIMITS.maxStringBytes})`,
        };
      continue;
    }
    // An exact number (exact-numbers.ts) is a leaf like any number.
    if (typeof v !== "object" || v === null || isExactNumber(v)) continue;
    const deeper = current.level + 1;
    if (deeper > VARS_LIMITS.maxDepth)
      return {
        field,
        code: VARS_ERRORS.tooDeep,
        message: `${where}: the value nests more than ${VARS_LIMITS.maxDepth} levels deep from the document's root`,
      };
    if (Array.isArray(v)) {
      v.forEach((item, i) => {
        stack.push({ value: item, level: deeper, keys: [...current.keys, i] });
      });
      continue;
    }
    for (const [key, item] of Object.entries(v)) {
      const problem = segmentProblem(key);
      if (problem) return { field, code: problem.code, message: `${where}: the value has ${problem.why}` };
      stack.push({ value: item, level: deeper, keys: [...current.keys, key] });
    }
  }
  if (options.blockSensitive) {
    const found = findSensitive(value, skip);
    if (found) return sensitiveProblem(field, found.path, found.kind);
  }
  return undefined;
}

function sensitiveProblem(
  field: string,
  path: ReadonlyArray<string | number>,
  kind: SensitiveKind,
): VarsProblem {
  const where = `${field}${path.length ? ` at ${fieldOf(path)}` : ""}`;
  return {
    field,
    code: VARS_ERRORS.sensitive,
    message: `${where}: the value looks like ${kind}; secrets do not belong in variables (keep them in a secret store, or give blockSensitive: false)`,
  };
}

function tooMany(field: string, count: number): VarsProblem {
  return {
    field,
    code: VARS_ERRORS.tooManyKeys,
    message: `${field}: ${count} keys in one operation (at most ${VARS_LIMITS.maxKeysPerOperation})`,
  };
}

/**
 * Every problem of an operation's limits (not its shape: the schema's), first one first. At run
 * time the first is thrown (VarsError); at registration `skip` leaves expressions out and all are
 * reported.
 */
export function checkVarsOp(op: VarsOp, skip?: (text: string) => boolean): VarsProblem[] {
  const problems: VarsProblem[] = [];
  const options = (block: boolean | undefined): CheckOptions => ({
    blockSensitive: block !== false,
    ...(skip ? { skip } : {}),
  });
  const path = (text: string, field: string, allowRoot = false): string[] | undefined => {
    // A path given by an expression is known only at run time.
    if (skip?.(text)) return undefined;
    const parsed = parsePath(text, field, allowRoot);
    if ("problem" in parsed) {
      problems.push(parsed.problem);
      return undefined;
    }
    return parsed.segments;
  };
  const value = (v: unknown, level: number, field: string, block: boolean | undefined) => {
    const problem = valueProblem(v, level, field, options(block));
    if (problem) problems.push(problem);
  };
  const depth = (segments: string[], field: string) => {
    if (segments.length > VARS_LIMITS.maxDepth)
      problems.push({
        field,
        code: VARS_ERRORS.tooDeep,
        message: `${field}: the path is ${segments.length} levels deep (at most ${VARS_LIMITS.maxDepth})`,
      });
  };
  switch (op.op) {
    case "set": {
      const entries = op.values ? Object.entries(op.values) : [[op.path ?? "", op.value] as const];
      if (entries.length > VARS_LIMITS.maxKeysPerOperation) problems.push(tooMany("values", entries.length));
      for (const [key, v] of entries) {
        const field = op.values ? fieldOf(["values", key]) : "path";
        const segments = path(key, field);
        if (!segments) continue;
        depth(segments, field);
        value(v, segments.length, op.values ? field : "value", op.blockSensitive);
      }
      break;
    }
    case "merge": {
      const keys = Object.keys(op.value).length;
      if (keys > VARS_LIMITS.maxKeysPerOperation) problems.push(tooMany("value", keys));
      const segments = path(op.path ?? "", "path", true);
      if (segments) {
        depth(segments, "path");
        value(op.value, segments.length, "value", op.blockSensitive);
      }
      break;
    }
    case "incr": {
      const segments = path(op.path, "path");
      if (segments) depth(segments, "path");
      if (op.by !== undefined && !Number.isFinite(op.by))
        problems.push({ field: "by", code: VARS_ERRORS.notANumber, message: "by: not a finite number" });
      break;
    }
    case "unset": {
      if (op.paths.length > VARS_LIMITS.maxKeysPerOperation) problems.push(tooMany("paths", op.paths.length));
      op.paths.forEach((p, i) => {
        path(p, `paths[${i}]`);
      });
      break;
    }
  }
  return problems;
}

/** Registration's view: expressions are left for run time. */
export const staticVarsProblems = (op: VarsOp) => checkVarsOp(op, isExpression);

// ---------------------------------------------------------------------------------------------
// Applying an operation to the document.

export type VarsDocument = Record<string, unknown>;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** The object at `segments`, made (replacing what is in the way) when missing. */
function objectAt(document: VarsDocument, segments: readonly string[]): Record<string, unknown> {
  let at = document;
  for (const segment of segments) {
    const next = at[segment];
    if (!isObject(next)) {
      const made: Record<string, unknown> = {};
      at[segment] = made;
      at = made;
    } else at = next;
  }
  return at;
}

function deepMerge(target: Record<string, unknown>, source: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(source)) {
    const current = target[key];
    if (isObject(value) && isObject(current)) deepMerge(current, value);
    else target[key] = cloneExact(value);
  }
}

const splitPath = (path: string) => (path === "" ? [] : path.split("."));

/**
 * The document after `op` (a copy: `document` is not changed) and the operation's result. Throws a
 * VarsError for what only the document can tell (incr over something not a number, a result that
 * is not finite, a document grown past its size). Limits of the params themselves are checkVarsOp's.
 */
export function applyVarsOp(
  document: VarsDocument,
  op: VarsOp,
): { document: VarsDocument; result: VarsResult } {
  // cloneExact: structuredClone would make an exact number (exact-numbers.ts) a plain object.
  const next = cloneExact(document);
  let result: VarsResult;
  switch (op.op) {
    case "set": {
      const entries = op.values ? Object.entries(op.values) : [[op.path ?? "", op.value] as const];
      for (const [path, value] of entries) {
        const segments = splitPath(path);
        const last = segments.pop()!;
        objectAt(next, segments)[last] = cloneExact(value);
      }
      result = { set: entries.length };
      break;
    }
    case "merge": {
      const segments = splitPath(op.path ?? "");
      deepMerge(objectAt(next, segments), op.value);
      result = { merged: Object.keys(op.value).length };
      break;
    }
    case "incr": {
      const segments = splitPath(op.path);
      const last = segments.pop()!;
      const parent = objectAt(next, segments);
      const current = parent[last] ?? 0;
      if (isExactNumber(current))
        throw new VarsError({
          field: "path",
          code: VARS_ERRORS.notANumber,
          message: `path: incr needs a number a double holds at "${op.path}", and the variable there is an exact number of ${current.value.length} characters (docs/language.md, exact numbers)`,
        });
      if (typeof current !== "number")
        throw new VarsError({
          field: "path",
          code: VARS_ERRORS.notANumber,
          message: `path: incr needs a number at "${op.path}", and the variable there is ${Array.isArray(current) ? "an array" : typeof current}`,
        });
      const value = current + (op.by ?? 1);
      if (!Number.isFinite(value))
        throw new VarsError({
          field: "by",
          code: VARS_ERRORS.notANumber,
          message: `by: incr at "${op.path}" would give a number that is not finite`,
        });
      parent[last] = value;
      result = { value };
      break;
    }
    case "unset": {
      let removed = 0;
      for (const path of op.paths) {
        const segments = splitPath(path);
        const last = segments.pop()!;
        let at: unknown = next;
        for (const segment of segments) at = isObject(at) ? at[segment] : undefined;
        if (isObject(at) && last in at) {
          delete at[last];
          removed++;
        }
      }
      result = { unset: removed };
      break;
    }
  }
  return { document: next, result };
}

/** The document as stored (JSON text), refused past its size. */
export function encodeDocument(document: VarsDocument): string {
  // Exact numbers as their digits (read back by parseExact, engine/vars.ts).
  const text = stringifyExact(document) ?? "{}";
  const bytes = bytesOf(text);
  if (bytes > VARS_LIMITS.maxDocumentBytes)
    throw new VarsError({
      field: "",
      code: VARS_ERRORS.documentTooLarge,
      message: `the variables would take ${bytes} bytes of JSON (at most ${VARS_LIMITS.maxDocumentBytes})`,
    });
  return text;
}

/** The names an operation writes (key names only, never values): what logs may carry. */
export function opKeys(op: VarsOp): string[] {
  switch (op.op) {
    case "set":
      return op.values ? Object.keys(op.values) : [op.path ?? ""];
    case "merge":
      return Object.keys(op.value).map((key) => (op.path ? `${op.path}.${key}` : key));
    case "incr":
      return [op.path];
    case "unset":
      return [...op.paths];
  }
}

/** True when an expression inside `values` mentions `vars`: only then are the variables read. */
export function mentionsVars(...values: unknown[]): boolean {
  return values.some((value) => value !== undefined && /\bvars\b/.test(stringifyExact(value) ?? ""));
}
