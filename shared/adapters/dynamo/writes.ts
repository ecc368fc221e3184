/**
 * The store's write builders: a node write (its condition, in which a missing item is PENDING at
 * attempt 0, and its update, history included) and the TTL a write sets or removes.
 */
import { encodeStoredPayload } from "../../domain/payload.js";
import type { HistoryEvent } from "../../domain/records.js";
import { isTerminalNode } from "../../domain/states.js";
import type { NodeCondition, NodePatch } from "../../ports.js";
import { Expression, updateExpression } from "./expression.js";
import { ATTR, type Key, nodeKey } from "./keys.js";

/** The TTL attribute's value (epoch seconds) for an item to expire `days` after `atMs`. */
export function expiresAfter(atMs: number, days: number): number {
  return Math.ceil(atMs / 1000) + days * 86_400;
}

/** The TTL update for a write that moves an item to `status`, finishing at `finishedAt`. */
export function retention(
  e: Expression,
  days: number | undefined,
  final: boolean | undefined,
  finishedAt: number | null | undefined,
  sets: string[],
  removes: string[],
): void {
  if (days === undefined || final === undefined) return;
  if (final && typeof finishedAt === "number") {
    sets.push(`${e.name(ATTR.ttl)} = ${e.value(expiresAfter(finishedAt, days))}`);
  } else if (!final) removes.push(e.name(ATTR.ttl)); // revived by a redrive: keep it again
}

/** The write of a node of an execution whose nodes span `shards` partitions (keys.ts). */
export function nodeWrite(
  executionId: string,
  shards: number,
  nodeId: string,
  condition: NodeCondition,
  patch: NodePatch,
  event: HistoryEvent | readonly HistoryEvent[] | undefined,
  retentionDays: number | undefined,
): { key: Key; e: Expression; condition: string; update: string } {
  const e = new Expression();
  const status = e.name("status");
  const attempt = e.name("attempt");
  const conditions: string[] = [];

  if (condition.status.length === 0) {
    conditions.push(`attribute_exists(${e.name(ATTR.pk)}) AND attribute_not_exists(${e.name(ATTR.pk)})`);
  } else {
    const inList = `${status} IN (${condition.status.map((s) => e.value(s)).join(", ")})`;
    // A missing item (or one that never got a status) is PENDING.
    conditions.push(
      condition.status.includes("PENDING") ? `(attribute_not_exists(${status}) OR ${inList})` : inList,
    );
  }
  if (condition.leaseToken !== undefined) {
    conditions.push(`${e.name("lease")}.${e.name("token")} = ${e.value(condition.leaseToken)}`);
  }
  if (condition.attempt !== undefined) {
    const equals = `${attempt} = ${e.value(condition.attempt)}`;
    conditions.push(condition.attempt === 0 ? `(attribute_not_exists(${attempt}) OR ${equals})` : equals);
  }
  if (condition.dueBy !== undefined) {
    const notBefore = e.name("notBefore");
    conditions.push(`(attribute_not_exists(${notBefore}) OR ${notBefore} <= ${e.value(condition.dueBy)})`);
  }
  if (condition.notCancelRequested) {
    const requested = e.name("cancelRequested");
    conditions.push(`(attribute_not_exists(${requested}) OR ${requested} = ${e.value(false)})`);
  }
  if (condition.leaseExpiredBy !== undefined) {
    // No lease → refused, as for a PENDING record.
    conditions.push(`${e.name("lease")}.${e.name("expiresAt")} < ${e.value(condition.leaseExpiredBy)}`);
  }

  const sets: string[] = [];
  const removes: string[] = [];
  sets.push(
    patch.status !== undefined
      ? `${status} = ${e.value(patch.status)}`
      : `${status} = if_not_exists(${status}, ${e.value("PENDING")})`,
  );
  sets.push(
    patch.attempt !== undefined
      ? `${attempt} = ${e.value(patch.attempt)}`
      : `${attempt} = if_not_exists(${attempt}, ${e.value(0)})`,
  );
  // Fields whose type allows null: null removes them.
  for (const field of ["lease", "notBefore", "error", "startedAt", "finishedAt", "waitingFor"] as const) {
    const value = patch[field];
    if (value === null) removes.push(e.name(field));
    else if (value !== undefined) sets.push(`${e.name(field)} = ${e.value(value)}`);
  }
  // A number set, which DynamoDB cannot store empty.
  if (patch.okDeps !== undefined) {
    if (patch.okDeps.length === 0) removes.push(e.name("okDeps"));
    else sets.push(`${e.name("okDeps")} = ${e.value(new Set(patch.okDeps))}`);
  }
  // Only null is allowed: forget the failed arrivals.
  if (patch.badDeps === null) removes.push(e.name("badDeps"));
  if (patch.output !== undefined)
    sets.push(`${e.name("output")} = ${e.value(encodeStoredPayload(patch.output))}`);
  // Opaque JSON, like a payload: its payloads (a map's chunks) keep their exact text.
  if (patch.composite === null) removes.push(e.name("composite"));
  else if (patch.composite !== undefined)
    sets.push(`${e.name("composite")} = ${e.value(JSON.stringify(patch.composite))}`);
  for (const field of ["queuedAt", "cancelRequested"] as const) {
    const value = patch[field];
    if (value !== undefined) sets.push(`${e.name(field)} = ${e.value(value)}`);
  }
  const final = patch.status === undefined ? undefined : isTerminalNode(patch.status);
  retention(e, retentionDays, final, patch.finishedAt, sets, removes);
  if (event) sets.push(e.appendHistory(event));

  return {
    key: nodeKey(executionId, nodeId, shards),
    e,
    condition: conditions.join(" AND "),
    update: updateExpression(sets, removes),
  };
}
