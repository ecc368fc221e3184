/**
 * The node and execution state machines. Every state write in the engine is conditioned on the
 * current status being one from which the target may be reached (see nodeStatesFrom), so these
 * tables are what keeps concurrent writers from moving a record backwards.
 */
import type { ExecutionStatus, NodeStatus } from "./records.js";
import { EXECUTION_STATUSES, NODE_STATUSES } from "./records.js";

export const NODE_TRANSITIONS: Readonly<Record<NodeStatus, readonly NodeStatus[]>> = Object.freeze({
  // PENDING → RUNNING: a direct node (at most one parent) is dispatched by its message alone and
  // claimed straight from PENDING; its QUEUED phase is the message in flight (dispatch-mode.ts).
  // PENDING → COMPLETED / FAILED: an inline node (e.g. merge) runs the moment it is decided and is
  // written once, with the dependencies it saw, by its completion (or failure) alone.
  // PENDING → SKIPPED: a fan-in that can no longer be met because dependencies were skipped
  // (domain/fan-in.ts), or an inline node whose `when` is false, decided without running.
  PENDING: Object.freeze(["QUEUED", "RUNNING", "CANCELLED", "COMPLETED", "FAILED", "SKIPPED"] as const),
  QUEUED: Object.freeze([
    "RUNNING",
    "CANCELLED",
    // Dead-lettered (e.g. unknown task type) before any attempt ran.
    "FAILED",
    // Only inline nodes (e.g. merge), which run in the same step that claims them.
    "COMPLETED",
    // An inline node queued first (an entry, a wide fan-in) whose `when` is false.
    "SKIPPED",
  ] as const),
  RUNNING: Object.freeze([
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    // A retry after a retryable failure, or recovery of an expired lease.
    "QUEUED",
    // Claimed, then found to have nothing to run: its `when` is false, or every input was skipped.
    "SKIPPED",
  ] as const),
  // Terminal. Redrive of a failed node is designed separately and deliberately not allowed here.
  COMPLETED: Object.freeze([] as const),
  FAILED: Object.freeze([] as const),
  CANCELLED: Object.freeze([] as const),
  SKIPPED: Object.freeze([] as const),
});

export const EXECUTION_TRANSITIONS: Readonly<Record<ExecutionStatus, readonly ExecutionStatus[]>> =
  Object.freeze({
    PENDING: Object.freeze(["RUNNING", "CANCELLED"] as const),
    RUNNING: Object.freeze(["SUCCEEDED", "FAILED", "CANCELLED"] as const),
    SUCCEEDED: Object.freeze([] as const),
    FAILED: Object.freeze([] as const),
    CANCELLED: Object.freeze([] as const),
  });

export function canTransitionNode(from: NodeStatus, to: NodeStatus): boolean {
  return NODE_TRANSITIONS[from].includes(to);
}

export function canTransitionExecution(from: ExecutionStatus, to: ExecutionStatus): boolean {
  return EXECUTION_TRANSITIONS[from].includes(to);
}

export function isTerminalNode(status: NodeStatus): boolean {
  return NODE_TRANSITIONS[status].length === 0;
}

export function isTerminalExecution(status: ExecutionStatus): boolean {
  return EXECUTION_TRANSITIONS[status].length === 0;
}

/** The statuses from which `to` may be reached, in NODE_STATUSES order: the engine's write condition. */
export function nodeStatesFrom(to: NodeStatus): NodeStatus[] {
  return NODE_STATUSES.filter((from) => canTransitionNode(from, to));
}

/** The statuses from which `to` may be reached, in EXECUTION_STATUSES order. */
export function executionStatesFrom(to: ExecutionStatus): ExecutionStatus[] {
  return EXECUTION_STATUSES.filter((from) => canTransitionExecution(from, to));
}
