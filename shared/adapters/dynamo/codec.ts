/**
 * Mapping between records and DynamoDB items, in one place. Items are read and written through
 * lib-dynamodb (native JS values). Reading uses explicit whitelists, so key attributes, index keys
 * and the history list never leak into records; Number Sets become sorted arrays. Payloads (inputs,
 * outputs) are strings in their stored form (domain/payload.ts), never DynamoDB maps or numbers.
 */
import { parseExact } from "../../domain/exact-numbers.js";
import { encodeJson } from "../../domain/json.js";
import { decodeStoredPayload, encodeStoredPayload, NULL_PAYLOAD } from "../../domain/payload.js";
import type {
  CompositeState,
  DeadLetterRecord,
  ErrorInfo,
  ExecutionRecord,
  ExecutionStatus,
  HistoryEvent,
  Lease,
  NodeRecord,
  NodeStatus,
  WaitingFor,
  WorkflowVersionRecord,
} from "../../domain/records.js";
import type { KeyedRequest } from "../../ports.js";
import {
  ATTR,
  deadLetterKey,
  dueKeys,
  executionIdFromPk,
  executionKey,
  FINAL_EXECUTION_STATUSES,
  listingKeys,
  nodeIdFromSk,
  workflowVersionKey,
} from "./keys.js";

export type Item = Record<string, unknown>;

/** An execution record's optional fields, stored as attributes of the same name. */
const OPTIONAL_EXECUTION_ATTRIBUTES = [
  "error",
  "startedAt",
  "finishedAt",
  "idempotencyKey",
  "cancelRequested",
  "deadline",
  "sweepAt",
  "sweptAt",
  "failedNode",
  "reviving",
  "parent",
  "depth",
  "rootExecutionId",
  "trace",
  "nodeShards",
] as const satisfies ReadonlyArray<keyof ExecutionRecord>;

/** Execution attributes a record is read from (everything but keys and history). */
export const EXECUTION_RECORD_ATTRIBUTES = [
  "executionId",
  "workflow",
  "version",
  "status",
  "input",
  "error",
  "createdAt",
  "startedAt",
  "finishedAt",
  "idempotencyKey",
  "sinksDone",
  "cancelRequested",
  "deadline",
  "sweepAt",
  "sweptAt",
  "failedNode",
  "reviving",
  "parent",
  "depth",
  "rootExecutionId",
  "trace",
  "nodeShards",
] as const;

export function toNumberArray(value: unknown): number[] {
  if (value === undefined || value === null) return [];
  const values = value instanceof Set ? [...value] : Array.isArray(value) ? value : [];
  return values.map(Number).sort((a, b) => a - b);
}

/** A Number Set for lib-dynamodb, or undefined for an empty list (DynamoDB has no empty sets). */
export function toNumberSet(values: readonly number[]): Set<number> | undefined {
  return values.length === 0 ? undefined : new Set(values);
}

const DEFINITION_LIMITS = {
  maxBytes: Number.POSITIVE_INFINITY,
  maxDepth: Number.POSITIVE_INFINITY,
  what: "a workflow definition",
};

function setIfPresent(target: Record<string, unknown>, item: Item, name: string): void {
  if (item[name] !== undefined) target[name] = item[name];
}

// ── workflows ───────────────────────────────────────────────────────────────────────────────────

export function workflowVersionToItem(record: WorkflowVersionRecord): Item {
  return {
    ...workflowVersionKey(record.name, record.version),
    name: record.name,
    version: record.version,
    definitionHash: record.definitionHash,
    // Exact JSON (params may hold -0 or 1e400); definitions are bounded, and checked for nesting.
    definition: encodeJson(record.definition, DEFINITION_LIMITS),
    createdAt: record.createdAt,
  };
}

export function workflowVersionFromItem(item: Item): WorkflowVersionRecord {
  return {
    name: item.name as string,
    version: Number(item.version),
    definitionHash: item.definitionHash as string,
    // Exact numbers (exact-numbers.ts): params keep the digits they were registered with.
    definition: parseExact(item.definition as string) as WorkflowVersionRecord["definition"],
    createdAt: Number(item.createdAt),
  };
}

// ── idempotency keys ───────────────────────────────────────────────────────────────────────────

/** What the request that took an idempotency key asked (Store.createExecution), from its key item. */
export function keyedFromItem(item: Item): KeyedRequest {
  return { inputSha256: item.inputSha256 as string, start: item.start as boolean };
}

// ── executions ──────────────────────────────────────────────────────────────────────────────────

export function executionToItem(record: ExecutionRecord, history: readonly HistoryEvent[]): Item {
  const item: Item = {
    ...executionKey(record.executionId),
    ...listingKeys(record.executionId, record.workflow, record.createdAt),
    executionId: record.executionId,
    workflow: record.workflow,
    version: record.version,
    status: record.status,
    createdAt: record.createdAt,
    [ATTR.history]: [...history],
  };
  item.input = encodeStoredPayload(record.input);
  for (const name of OPTIONAL_EXECUTION_ATTRIBUTES) {
    if (record[name] !== undefined) item[name] = record[name];
  }
  // In the due index while the execution is not finished (a finished one is never due).
  if (record.sweepAt !== undefined && !FINAL_EXECUTION_STATUSES.includes(record.status)) {
    Object.assign(item, dueKeys(record.executionId, record.sweepAt));
  }
  const sinks = toNumberSet(record.sinksDone);
  if (sinks) item.sinksDone = sinks;
  return item;
}

export function executionFromItem(item: Item): ExecutionRecord {
  const record: ExecutionRecord = {
    executionId: (item.executionId as string | undefined) ?? executionIdFromPk(item[ATTR.pk] as string),
    workflow: item.workflow as string,
    version: Number(item.version),
    status: item.status as ExecutionStatus,
    input: typeof item.input === "string" ? decodeStoredPayload(item.input) : NULL_PAYLOAD,
    createdAt: Number(item.createdAt),
    sinksDone: toNumberArray(item.sinksDone),
  };
  const target = record as unknown as Record<string, unknown>;
  for (const name of OPTIONAL_EXECUTION_ATTRIBUTES) {
    setIfPresent(target, item, name);
  }
  return record;
}

// ── nodes ───────────────────────────────────────────────────────────────────────────────────────

export function nodeFromItem(item: Item): NodeRecord {
  const record: NodeRecord = {
    executionId: executionIdFromPk(item[ATTR.pk] as string),
    nodeId: nodeIdFromSk(item[ATTR.sk] as string),
    status: (item.status as NodeStatus | undefined) ?? "PENDING",
    attempt: item.attempt === undefined ? 0 : Number(item.attempt),
    okDeps: toNumberArray(item.okDeps),
    badDeps: toNumberArray(item.badDeps),
  };
  if (item.lease !== undefined && item.lease !== null) {
    const lease = item.lease as Lease;
    record.lease = {
      token: lease.token,
      expiresAt: Number(lease.expiresAt),
      ...(lease.workerId === undefined ? {} : { workerId: lease.workerId }),
    };
  }
  if (typeof item.output === "string") record.output = decodeStoredPayload(item.output);
  if (item.error !== undefined && item.error !== null) record.error = item.error as ErrorInfo;
  for (const name of ["notBefore", "queuedAt", "startedAt", "finishedAt"] as const) {
    if (item[name] !== undefined && item[name] !== null) record[name] = Number(item[name]);
  }
  if (item.cancelRequested !== undefined) record.cancelRequested = Boolean(item.cancelRequested);
  if (typeof item.composite === "string") record.composite = JSON.parse(item.composite) as CompositeState;
  if (item.waitingFor !== undefined && item.waitingFor !== null) {
    const waiting = item.waitingFor as WaitingFor;
    record.waitingFor = {
      reason: waiting.reason,
      key: String(waiting.key),
      ...(waiting.slotKey === undefined ? {} : { slotKey: String(waiting.slotKey) }),
      ...(waiting.place === undefined ? {} : { place: String(waiting.place) }),
    };
  }
  return record;
}

// ── dead letters ────────────────────────────────────────────────────────────────────────────────

/** Dead-letter attributes a record is read from (the id is the sort key). */
export const DEAD_LETTER_RECORD_ATTRIBUTES = [
  ATTR.sk,
  "executionId",
  "nodeId",
  "attempt",
  "error",
  "at",
  "reason",
  "receiveCount",
] as const;

export function deadLetterToItem(record: DeadLetterRecord): Item {
  const item: Item = {
    ...deadLetterKey(record.id),
    executionId: record.executionId,
    nodeId: record.nodeId,
    attempt: record.attempt,
    error: record.error,
    at: record.at,
    reason: record.reason,
  };
  if (record.receiveCount !== undefined) item.receiveCount = record.receiveCount;
  return item;
}

export function deadLetterFromItem(item: Item): DeadLetterRecord {
  const record: DeadLetterRecord = {
    id: item[ATTR.sk] as string,
    executionId: item.executionId as string,
    nodeId: item.nodeId as string,
    attempt: Number(item.attempt),
    error: item.error as ErrorInfo,
    at: Number(item.at),
    reason: item.reason as DeadLetterRecord["reason"],
  };
  if (item.receiveCount !== undefined && item.receiveCount !== null) {
    record.receiveCount = Number(item.receiveCount);
  }
  return record;
}

// ── history ─────────────────────────────────────────────────────────────────────────────────────

export function historyFromItem(item: Item): HistoryEvent[] {
  const history = item[ATTR.history];
  return Array.isArray(history) ? (history as HistoryEvent[]) : [];
}
