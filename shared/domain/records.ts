/** What the engine stores. Adapters persist these shapes; the engine never sees storage keys. */
import type { WorkflowDefinition } from "./definition.js";
import type { Payload } from "./payload.js";

export const NODE_STATUSES = [
  "PENDING",
  "QUEUED",
  "RUNNING",
  "COMPLETED",
  "FAILED",
  "CANCELLED",
  "SKIPPED",
] as const;
export type NodeStatus = (typeof NODE_STATUSES)[number];

export const EXECUTION_STATUSES = ["PENDING", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"] as const;
export type ExecutionStatus = (typeof EXECUTION_STATUSES)[number];

export interface ErrorInfo {
  name: string;
  message: string;
  /** The thrown error's string `code`, when it had one (retriers and catch edges match it). */
  code?: string;
  retryable?: boolean;
}

export interface WorkflowVersionRecord {
  name: string;
  version: number;
  definitionHash: string;
  definition: WorkflowDefinition;
  createdAt: number;
}

/** One entry of an execution's history (domain/history.ts). Every state transition appends one. */
export interface HistoryEvent {
  /** When (epoch ms): never earlier than an event its writer stamped before it (engine/history-stamps.ts). */
  at: number;
  /**
   * Its place among the events stamped in the same millisecond by one sequence (a process's, or
   * the simulation's): 1, 2, … after the first, absent on the first. History order is `at`, then
   * `seq` (domain/history.ts); the API leaves it out.
   */
  seq?: number;
  type: string;
  nodeId?: string;
  attempt?: number;
  detail?: Record<string, unknown>;
  /**
   * The W3C `traceparent` of the span the event belongs to (domain/trace.ts): the execution's trace
   * context on its start, an attempt's own span on the events that begin an attempt.
   */
  trace?: string;
}

export interface ExecutionRecord {
  executionId: string;
  workflow: string;
  version: number;
  status: ExecutionStatus;
  /** Opaque to the store (payload.ts): inline exact JSON, or a reference to the blob store. */
  input: Payload;
  error?: ErrorInfo;
  createdAt: number;
  startedAt?: number;
  finishedAt?: number;
  idempotencyKey?: string;
  /** Indexes (in definition order) of sink nodes that have completed; the execution succeeds when all have. */
  sinksDone: number[];
  cancelRequested?: { reason: string; at: number };
  /**
   * Set, atomically with the node's FAILED write, when a node fails for good while the execution
   * runs: the execution can then no longer succeed (fail-fast holds even if its own FAILED write
   * is lost to a crash and another branch completes the sinks meanwhile).
   */
  failedNode?: string;
  /**
   * Set by a redrive's revival of the execution (when), cleared once its failed and cancelled
   * nodes are revived: until then the execution cannot succeed, as a branch that completed the
   * sinks meanwhile would leave a failure of the earlier life unrevived.
   */
  reviving?: number;
  /** Epoch ms after which the execution times out (from the definition's timeoutSeconds). */
  deadline?: number;
  /**
   * While RUNNING: when the sweeper should next reconcile this execution. Kept in a sparse index,
   * so a sweep reads only executions that are due and never scans.
   */
  sweepAt?: number;
  /** When the sweeper last reconciled it: how often it already re-sent what looked lost. */
  sweptAt?: number;
  /** A child execution's parent (a `workflow` node), told when the child ends. */
  parent?: ParentLink;
  /** How deep in children it is: 0 for an execution started by a client. */
  depth?: number;
  /**
   * A child's root: the execution a client started at the top of its tree, whose fan-out budget
   * (domain/fan-out.ts) it counts against. Absent on a root itself.
   */
  rootExecutionId?: string;
  /**
   * The W3C `traceparent` it was started in (domain/trace.ts): the caller's, its parent attempt's
   * (a child execution), or a new trace. Each attempt of its nodes is a child span of it.
   */
  trace?: string;
  /**
   * How many partitions of the store its nodes, map items and arrival shards are spread over
   * (domain/node-shards.ts): fixed when it is created, absent for 1 (every execution of before).
   */
  nodeShards?: number;
}

/** Work that could not be done: kept for inspection and redrive (GET /dlq, POST /dlq/redrive). */
export interface DeadLetterRecord {
  id: string;
  executionId: string;
  nodeId: string;
  attempt: number;
  error: ErrorInfo;
  at: number;
  /** "terminal": a non-retryable error; "poison": the message kept failing until SQS dead-lettered it. */
  reason: "terminal" | "poison";
  receiveCount?: number;
}

export interface Lease {
  /** Fencing token: every write of the attempt holding the lease is conditioned on it. */
  token: string;
  expiresAt: number;
  /** An external worker's claim (engine/external.ts): the worker holding the attempt. */
  workerId?: string;
}

/**
 * A node of one execution. A node with no stored record is PENDING at attempt 0: records are
 * created by the first write that concerns them (an arrival, a dispatch, a cancellation).
 */
export interface NodeRecord {
  executionId: string;
  nodeId: string;
  status: NodeStatus;
  attempt: number;
  /** Indexes of dependencies that completed / failed or were cancelled while this node was PENDING. */
  okDeps: number[];
  badDeps: number[];
  lease?: Lease;
  /** A retry or wait must not start before this epoch ms. */
  notBefore?: number;
  /** Opaque to the store (payload.ts); set once COMPLETED. */
  output?: Payload;
  error?: ErrorInfo;
  queuedAt?: number;
  startedAt?: number;
  finishedAt?: number;
  /** Set when cancellation is requested while the node runs; the heartbeat carries it to the worker. */
  cancelRequested?: boolean;
  /**
   * A node that runs others and waits for them holding no worker (a `map` over its items): what it
   * started. It stays RUNNING meanwhile, its lease the time of its next check (engine/map.ts).
   */
  composite?: CompositeState;
  /** A QUEUED node that waits for capacity (flow control, engine/slots.ts): what for, and on which key. */
  waitingFor?: WaitingFor;
}

/** What a QUEUED node waits for before it can run (flow control): a concurrency limit's slot. */
export interface WaitingFor {
  reason: "concurrency";
  /** The limit's key value (its expression's result), or "" for a limit without a key. */
  key: string;
  /** Where it waits (engine/slots.ts): the limit's slot key and its place in that queue. */
  slotKey?: string;
  place?: string;
}

/** A `map` node's items (domain/map.ts): how many, in how many lanes, and the list in chunks. */
export interface MapState {
  kind: "map";
  items: number;
  lanes: number;
  /** The items, `chunkSize` to a payload (the last one shorter). */
  chunks: Payload[];
}

/** A `workflow` node's child execution (domain/child.ts). */
export interface ChildState {
  kind: "workflow";
  executionId: string;
}

/** A `callback` node waiting for its settlement (domain/callback.ts). */
export interface CallbackState {
  kind: "callback";
  /** When its time runs out. */
  deadline: number;
  heartbeatSeconds?: number;
  /** Its last heartbeat (or when it began to wait). */
  heartbeatAt: number;
  /**
   * When its timer fires (engine/callbacks.ts): the message that checks it then. A check at or past
   * it, finding it not due (heartbeats pushed it on), arms the next one.
   */
  timerAt?: number;
}

/**
 * A `loop` node (domain/loop.ts): the iteration it runs (its child execution), or the pause after
 * one before the next (no child, `nextAt`).
 */
export interface LoopState {
  kind: "loop";
  /** The iteration running or last run, from 1. */
  iteration: number;
  /** That iteration's child execution, while it runs; none during the pause after it. */
  executionId?: string;
  /** During a pause, the iteration's output: `$previous` to the next one. */
  previous?: Payload;
  /** When the pause ends and the next iteration starts. */
  nextAt?: number;
}

export type CompositeState = MapState | ChildState | CallbackState | LoopState;

/** The child execution a node waiting in `state` waits for now, if any (its view, the sweeper's orphan check). */
export function childExecutionOf(state: CompositeState | undefined): string | undefined {
  return state?.kind === "workflow" || state?.kind === "loop" ? state.executionId : undefined;
}

/** Whether a node waiting in `state` starts child executions (which then report to it when they end). */
export function startsChildren(state: CompositeState | undefined): boolean {
  return state?.kind === "workflow" || state?.kind === "loop";
}

/** The waiting kinds (engine/waiting-kind.ts), each named by its waiting state's `kind`. */
export type WaitingKindName = CompositeState["kind"];

/** The node of the execution that started a child execution (a `workflow` node's attempt). */
export interface ParentLink {
  executionId: string;
  nodeId: string;
  attempt: number;
}

export function pendingNode(executionId: string, nodeId: string): NodeRecord {
  return { executionId, nodeId, status: "PENDING", attempt: 0, okDeps: [], badDeps: [] };
}
