/**
 * What the external workers' and callbacks' API hands out and takes (engine/external.ts,
 * engine/callbacks.ts): plain shapes, apart from the code that makes them, so the HTTP contract
 * (shared/http/contract.ts) can name them without importing the engine's modules.
 */
import type { WorkerHealth } from "../domain/placement.js";
import type { TraceContext } from "../domain/trace.js";

export interface RegisteredWorker {
  workerId: string;
  heartbeatSeconds: number;
}

export interface WorkerView {
  workerId: string;
  pool: string;
  status: WorkerHealth;
  executors: string[];
  capabilities: Record<string, string>;
  labels: string[];
  maxParallel: number;
  registeredAt: string;
  lastHeartbeatAt: string;
  /** The tasks it holds, the first PLACEMENT_LIMITS.maxTasksPerWorkerView of them by claim time. */
  tasks: Array<{ executionId: string; nodeId: string; attempt: number; claimedAt: string }>;
  /** How many tasks it holds. */
  taskCount: number;
}

/** A task handed to a worker: everything its handler needs, and the token for every later call. */
export interface ExternalTask {
  taskToken: string;
  executionId: string;
  nodeId: string;
  attempt: number;
  idempotencyKey: string;
  type: string;
  params: unknown;
  input: unknown;
  deps: Record<string, unknown>;
  /** When the attempt's timeout runs out (ISO 8601). */
  deadline: string;
  /** Heartbeat the task at least this often, or lose it. */
  heartbeatSeconds: number;
  /**
   * The attempt's W3C trace context (shared/domain/trace.ts), as a Lambda handler gets it in
   * `context.trace`: send `traceparent` on with what the task calls. Always given by this engine.
   */
  trace?: TraceContext;
}

/** An error reported by a worker or a callback's caller: retried by policy unless `retryable` is false. */
export interface TaskErrorReport {
  name: string;
  message: string;
  retryable?: boolean;
}

export interface TaskCancellation {
  taskToken: string;
  executionId: string;
  nodeId: string;
  attempt: number;
  reason: string;
}
