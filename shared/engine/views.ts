/** Shapes the engine returns to callers (the HTTP API contract of the design brief). */
import type { ErrorInfo, ExecutionStatus, NodeStatus } from "../domain/records.js";

export interface RegisterResult {
  name: string;
  version: number;
  definitionHash: string;
  /** False when the same content was already registered (the API answers 200 instead of 201). */
  created: boolean;
}

export interface CreateExecutionRequest {
  workflow: string;
  version?: number;
  input?: unknown;
  start?: boolean;
  idempotencyKey?: string;
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
  output?: unknown;
  error?: ErrorInfo;
}

export interface ExecutionView {
  executionId: string;
  workflow: string;
  version: number;
  status: ExecutionStatus;
  input: unknown;
  output?: Record<string, unknown>;
  error?: ErrorInfo;
  createdAt: string;
  startedAt?: string;
  finishedAt?: string;
  nodes: NodeView[];
}
