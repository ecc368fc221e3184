/** The node write conditions and patches of the Store port, evaluated in memory. */
import type { NodeRecord } from "../../domain/records.js";
import type { NodeCondition, NodePatch } from "../../ports.js";

export function nodeConditionHolds(node: NodeRecord, condition: NodeCondition): boolean {
  if (!condition.status.includes(node.status)) return false;
  if (condition.leaseToken !== undefined && node.lease?.token !== condition.leaseToken) return false;
  if (condition.attempt !== undefined && node.attempt !== condition.attempt) return false;
  if (condition.dueBy !== undefined && node.notBefore !== undefined && node.notBefore > condition.dueBy) {
    return false;
  }
  if (condition.notCancelRequested && node.cancelRequested) return false;
  if (condition.leaseExpiredBy !== undefined) {
    if (!node.lease || node.lease.expiresAt >= condition.leaseExpiredBy) return false;
  }
  return true;
}

export function applyNodePatch(node: NodeRecord, patch: NodePatch): NodeRecord {
  const next: Record<string, unknown> = { ...node };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null && key === "badDeps") next[key] = [];
    else if (key === "okDeps" && Array.isArray(value)) next[key] = [...value].sort((a, b) => a - b);
    else if (value === null) delete next[key];
    else if (value !== undefined) next[key] = value;
  }
  return next as unknown as NodeRecord;
}
