/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/): parsing and formatting a `traceparent`,
 * and the ids of weft's own spans.
 *
 * An execution keeps the trace context it was started in (ExecutionRecord.trace): the caller's
 * `traceparent` when `POST /executions` carried a valid one, the attempt of the parent's `workflow`
 * node for a child execution, else a new trace. Each attempt of a node is a child span of it: the
 * same trace id, a span id of its own.
 *
 * The ids are derived, never drawn. A new trace's id is a hash of the execution id, and an attempt's
 * span id a hash of (execution id, node id, attempt). Drawing them from the ids port would move
 * every later draw of a seeded simulation (sim/), so each of its worlds would become another one;
 * hashing what is already there draws nothing, and gives the same span to every process that
 * handles the same attempt (a redelivery, an external worker, the sweeper) without storing it. A
 * new execution id is a random UUID, so its hash is as unique as a random trace id would be, and
 * an attempt's (execution id, node id, attempt) names it once across all executions.
 */
import { createHash } from "node:crypto";

/** A span's trace context, as handed to task handlers and external workers. */
export interface TraceContext {
  /** `00-<traceId>-<spanId>-<flags>`: the value of a `traceparent` header from this span. */
  traceparent: string;
  /** 32 lower-case hex digits. */
  traceId: string;
  /** 16 lower-case hex digits: this span's id (the parent-id of what it calls). */
  spanId: string;
}

/** A parsed `traceparent`: the trace id, the span that sent it, and its flags (2 hex digits). */
export interface Traceparent {
  traceId: string;
  parentId: string;
  flags: string;
}

/** A header longer than this is refused unread (a version 00 one is 55 characters). */
export const TRACEPARENT_MAX_LENGTH = 512;

const HEX = /^[0-9a-f]+$/;
const ZEROS = /^0+$/;
/** Flags a version 00 traceparent defines: sampled (01) and, in Level 2, a random trace id (02). */
const KNOWN_FLAGS = 0x03;
/** A new trace is sampled: the services it calls should record their spans. */
const NEW_TRACE_FLAGS = "01";

/**
 * Parses a `traceparent` header value as the W3C processing model says: version 00 exactly as
 * specified (55 characters), a later version by its first four fields when what follows them
 * starts with "-"; version ff, upper-case hex, an all-zero trace or parent id, or anything else
 * malformed is not a traceparent (undefined). Surrounding blanks are ignored. Flags keep only the
 * bits version 00 defines, as it is forwarded as version 00.
 */
export function parseTraceparent(value: unknown): Traceparent | undefined {
  if (typeof value !== "string" || value.length > TRACEPARENT_MAX_LENGTH) return undefined;
  const text = value.trim();
  if (text.length < 55) return undefined;
  const version = text.slice(0, 2);
  if (!isHex(version, 2) || version === "ff") return undefined;
  if (version === "00" ? text.length !== 55 : text.length > 55 && text[55] !== "-") return undefined;
  if (text[2] !== "-" || text[35] !== "-" || text[52] !== "-") return undefined;
  const traceId = text.slice(3, 35);
  const parentId = text.slice(36, 52);
  const flags = text.slice(53, 55);
  if (!isHex(traceId, 32) || ZEROS.test(traceId)) return undefined;
  if (!isHex(parentId, 16) || ZEROS.test(parentId)) return undefined;
  if (!isHex(flags, 2)) return undefined;
  const known = (Number.parseInt(flags, 16) & KNOWN_FLAGS).toString(16).padStart(2, "0");
  return { traceId, parentId, flags: known };
}

/** True when `value` is a `traceparent` this module accepts. */
export function isTraceparent(value: unknown): value is string {
  return parseTraceparent(value) !== undefined;
}

/** The version 00 `traceparent` of a span. */
export function formatTraceparent(traceId: string, spanId: string, flags: string): string {
  return `00-${traceId}-${spanId}-${flags}`;
}

/**
 * The trace context an execution was started in, as kept on its record: the given `traceparent`
 * (normalised to version 00) when it is valid, else a new trace derived from the execution id.
 */
export function startTrace(executionId: string, given?: unknown): string {
  const parsed = parseTraceparent(given);
  if (parsed) return formatTraceparent(parsed.traceId, parsed.parentId, parsed.flags);
  return formatTraceparent(derivedTraceId(executionId), spanIdOf([executionId]), NEW_TRACE_FLAGS);
}

/**
 * An execution's trace context: the one kept on its record, or — for an execution started before
 * traces were kept — the new trace its id derives, the same every time.
 */
export function executionTrace(execution: { executionId: string; trace?: string }): TraceContext {
  const traceparent = parseTraceparent(execution.trace)
    ? execution.trace!
    : startTrace(execution.executionId);
  const parsed = parseTraceparent(traceparent)!;
  return { traceparent, traceId: parsed.traceId, spanId: parsed.parentId };
}

/** The span of one attempt of a node: a child of its execution's trace context. */
export function attemptTrace(
  execution: { executionId: string; trace?: string },
  nodeId: string,
  attempt: number,
): TraceContext {
  const parent = parseTraceparent(executionTrace(execution).traceparent)!;
  const spanId = spanIdOf([execution.executionId, nodeId, attempt]);
  return {
    traceparent: formatTraceparent(parent.traceId, spanId, parent.flags),
    traceId: parent.traceId,
    spanId,
  };
}

/** The trace id of a new trace: 32 hex digits of sha256 over the execution id. */
function derivedTraceId(executionId: string): string {
  return nonZero(digest(["trace", executionId]).slice(0, 32));
}

/** A span id: 16 hex digits of sha256 over what names the span (JSON, so parts never run together). */
function spanIdOf(parts: ReadonlyArray<string | number>): string {
  return nonZero(digest(["span", ...parts]).slice(0, 16));
}

function digest(parts: ReadonlyArray<string | number>): string {
  return createHash("sha256")
    .update(JSON.stringify(["weft", ...parts]), "utf8")
    .digest("hex");
}

/** All zeros is not a valid id (a chance of 2^-64 or less): its last digit becomes 1. */
function nonZero(id: string): string {
  return ZEROS.test(id) ? `${id.slice(0, -1)}1` : id;
}

function isHex(text: string, length: number): boolean {
  return text.length === length && HEX.test(text);
}
