/**
 * The narrow faces the engine's modules see of one another where the dependency points upwards: a
 * low module (the completion of an attempt, a cancel, a waiting kind) is handed what implements
 * these (Propagation, AttemptEndings.retryOrFail) and names only what it calls, so no module
 * imports one above it, nor one kind another: shared/engine has no import cycle
 * (tools/check-cycles.ts, run in CI).
 */
import type { GraphNode, WorkflowGraph } from "../domain/graph.js";
import type { ErrorInfo, ExecutionRecord, ExecutionStatus, Lease, NodeRecord } from "../domain/records.js";
import type { ArrivalBatcher } from "./arrival-batcher.js";

/**
 * A node dispatched by its first message alone (the claim creates its record): a direct node, or a
 * join decided just now — an `any`/`count:N` one with the dependencies that met its fan-in.
 */
export interface ByMessage {
  node: GraphNode;
  deps?: readonly number[];
}

/** How an attempt's ending went (AttemptEndings.retryOrFail). */
export type AttemptEnd = "retried" | "failed" | "cancelled" | "refused";

/**
 * The failure of a claimed attempt, retried by its policy or final (AttemptEndings.retryOrFail):
 * what a waiting kind (a child workflow, a map, a callback) is handed to end its attempt with.
 */
export type FailAttempt = (
  execution: ExecutionRecord,
  graph: WorkflowGraph,
  node: GraphNode,
  record: NodeRecord,
  lease: Lease,
  error: unknown,
) => Promise<AttemptEnd>;

/** How a node's end is propagated (Propagation.afterCompletion). */
export interface AfterCompletionOptions {
  recovery: boolean;
  keepOne?: boolean;
  arrivals?: ArrivalBatcher;
  skipped?: boolean;
  /**
   * It FAILED in a way its dependants go on from (`onError: "continue"`, or caught by a catch edge):
   * its error, which decides which of its edges its children take (domain/edges.ts).
   */
  failed?: ErrorInfo;
  /** A recovery's depth in a chain of completed direct children (continuations, worker.ts). */
  depth?: number;
}

/** What a completed node's dependants need (Propagation): used by the completion of an attempt. */
export interface CompletionPropagation {
  afterCompletion(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    options: AfterCompletionOptions,
  ): Promise<ByMessage | undefined>;
}

/** The cleanup of an ended execution's nodes (Propagation.cleanUp): used by its cancel. */
export interface ExecutionCleanup {
  cleanUp(executionId: string, status: ExecutionStatus, reason: string): Promise<void>;
}
