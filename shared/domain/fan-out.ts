/**
 * The fan-out budget of a root execution (one a client started) and every execution below it.
 *
 * A workflow may start children (`workflow` nodes, maps over a workflow) that start children in
 * turn, to CHILD_LIMITS.maxDepth levels: a map of ten items over itself would be 10^8 executions
 * from one request. So a whole tree shares two limits, counted durably in the store against its
 * root (Store.createExecution, Store.reserveMapItems):
 *
 * - `maxDescendants`: child executions started, at any depth, over the root's lifetime (a retry's
 *   new child counts; a repeated start of the same child, by its idempotency key, does not).
 *   100,000, as many as MAP_LIMITS.maxItems: the largest fan-out a definition can ask for in one
 *   map (each item a child) still fits, while a self-calling map stops at 10^5 executions, not 10^8.
 * - `maxMapItemsInFlight`: map items that may run at once across every map of the tree. A map
 *   attempt reserves its lanes (the most of its items that run at once) when it starts and gives
 *   them back when it ends (or its execution ends). 10,000: ten maps at the highest
 *   `maxConcurrency` (1,000), or 250 at the default 40, at once per tree.
 *
 * The node that would go over either limit fails with a terminal `FanOutLimitExceeded` (a
 * `workflow` node or item, or a map), which then follows its `onError` and its map's tolerance.
 */
import { TerminalError } from "./errors.js";
import type { ExecutionRecord } from "./records.js";

export interface FanOutLimits {
  maxDescendants: number;
  maxMapItemsInFlight: number;
}

export const FAN_OUT_LIMITS: FanOutLimits = {
  maxDescendants: 100_000,
  maxMapItemsInFlight: 10_000,
};

export const FAN_OUT_LIMIT_EXCEEDED = "FanOutLimitExceeded";

/** The root of an execution's tree: itself when a client started it. */
export function rootOf(execution: Pick<ExecutionRecord, "executionId" | "rootExecutionId">): string {
  return execution.rootExecutionId ?? execution.executionId;
}

/** The reservation key of a map attempt's lanes, unique within its execution. */
export function mapReservationKey(mapId: string, mapAttempt: number): string {
  return `${mapId}[${mapAttempt}]`;
}

/** The node's failure when starting its child would pass the root's descendants limit. */
export function descendantsExceeded(nodeId: string, root: string, limit: number): TerminalError {
  return new TerminalError(
    `node "${nodeId}" would start a child execution past the fan-out limit maxDescendants of ${limit} child executions under root execution ${root}`,
    { code: FAN_OUT_LIMIT_EXCEEDED },
  );
}

/** The map's failure when running its lanes would pass the root's map-items-in-flight limit. */
export function mapItemsExceeded(
  mapId: string,
  lanes: number,
  root: string,
  limit: number,
  inFlight: number,
): TerminalError {
  return new TerminalError(
    `map "${mapId}" would run ${lanes} items at once with ${inFlight} already in flight, past the fan-out limit maxMapItemsInFlight of ${limit} map items in flight under root execution ${root}`,
    { code: FAN_OUT_LIMIT_EXCEEDED },
  );
}
