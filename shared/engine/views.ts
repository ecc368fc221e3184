/** Shapes the engine returns to callers (the HTTP API contract of the design brief). */
import type { ModeledCost } from "../domain/cost-model.js";
import type { ProblemDetail } from "../domain/errors.js";
import type { ErrorInfo, ExecutionStatus, NodeStatus, ParentLink } from "../domain/records.js";
import type { PresignedRequest } from "../ports.js";
import type { PayloadReference } from "./payload-views.js";

export interface RegisterResult {
  name: string;
  version: number;
  definitionHash: string;
  /** False when the same content was already registered (the API answers 200 instead of 201). */
  created: boolean;
  /** What registration allowed but looks wrong (a `workflow` node naming a workflow not registered yet). */
  warnings?: ProblemDetail[];
}

export interface CreateExecutionRequest {
  workflow: string;
  version?: number;
  input?: unknown;
  /** An upload (`POST /payloads`) to take the input from, instead of `input`. */
  inputRef?: string;
  start?: boolean;
  idempotencyKey?: string;
  /** Only from the engine itself: the `workflow` node that starts this child (never from a client). */
  parent?: ParentLink;
  /** Only from the engine itself: the child's depth (its parent's + 1). */
  depth?: number;
}

export interface ExecutionSummary {
  executionId: string;
  status: ExecutionStatus;
  /** False when an idempotency key returned an existing execution. */
  created: boolean;
}

export interface NodeView {
  id: string;
  type: string;
  status: NodeStatus;
  attempt: number;
  startedAt?: string;
  finishedAt?: string;
  /** A completed node's output, or `outputRef` where the response leaves it out. */
  output?: unknown;
  outputRef?: PayloadReference;
  error?: ErrorInfo;
  /** A map's progress (its current attempt's items), once it started them. */
  items?: MapProgress;
  /** A `workflow` node's child execution (its current attempt's), or a `loop`'s current iteration's. */
  childExecutionId?: string;
  /** A `loop` node's iteration, running or last run (from 1). */
  iteration?: number;
  /** A `callback` node waiting for its settlement: the token that settles it (POST /callbacks/…). */
  callbackToken?: string;
  /** An external node running on a worker: which one. */
  workerId?: string;
  /**
   * Told to stop (its execution ended or was cancelled, or an `any` join no longer waits for it)
   * while its attempt still runs: it ends CANCELLED, with the reason as its error, once the attempt
   * hears it (its next heartbeat) or its lease runs out.
   */
  stopping?: true;
  /** QUEUED behind a concurrency limit (flow control): what it waits for, and the limit's key value. */
  waitingFor?: { reason: "concurrency"; key: string };
}

/** A node's state as the CLI and the console show it: STOPPING for a running node told to stop. */
export type NodeDisplayState = NodeStatus | "STOPPING";

export function displayState(node: Pick<NodeView, "status" | "stopping">): NodeDisplayState {
  return node.stopping && node.status === "RUNNING" ? "STOPPING" : node.status;
}

export interface MapProgress {
  total: number;
  completed: number;
  failed: number;
  /** Claimed and not ended (running, or waiting to retry). */
  running: number;
}

export interface ExecutionView {
  executionId: string;
  workflow: string;
  version: number;
  status: ExecutionStatus;
  /** The input, or `inputRef` where the response leaves it out (too large to inline). */
  input?: unknown;
  inputRef?: PayloadReference;
  output?: Record<string, unknown>;
  outputRef?: PayloadReference;
  error?: ErrorInfo;
  createdAt: string;
  startedAt?: string;
  finishedAt?: string;
  nodes: NodeView[];
  /** The workflow's `onFailure` handler, once a failure of the execution started it. */
  onFailure?: NodeView;
  /** The `workflow` node whose child this execution is. */
  parent?: { executionId: string; nodeId: string };
  /** The modeled cost of its records so far (ViewOptions.cost). */
  cost?: ModeledCost;
  /** Its variables (`assign`, `vars` nodes), when its workflow writes any. */
  vars?: Record<string, unknown>;
}

/** `POST /payloads`: where to put an input too large for a request, and how to refer to it. */
export interface UploadTicket {
  inputRef: string;
  upload: PresignedRequest;
  expiresAt: string;
}
