/**
 * How the worker spends its Lambda invocation's time. The rule, stated once:
 *
 *   A worker invocation gives its nodes its function timeout less WORKER_MARGIN_MS (5 s), kept for
 *   the last writes (the completion or retry of an attempt cut short) and the batch response. So a
 *   node's `timeoutSeconds` may be at most `workerTimeoutSeconds - 5` (registration refuses more:
 *   nodeTimeoutLimitSeconds), a node with none gets `min(300, workerTimeoutSeconds - 5)`, and no
 *   attempt runs past `invocationDeadline()`: its deadline is the earlier of its own timeout and
 *   that (an attempt cut short by it fails with a retryable `WorkerTimeout` naming the limit).
 *
 * Continuation (running a ready child in the invocation that readied it) is decided by what the
 * child is expected to take, not by its worst case: under the deployed defaults (a 300 s worker,
 * nodes of up to 295 s) a child's whole timeout never fits after its parent ran. `mayContinue` says
 * when; a child that overruns its guess is cut at the invocation's deadline like any attempt, ends
 * cleanly and is retried by its policy in an invocation of its own.
 */
import { DEFAULT_NODE_TIMEOUT_SECONDS, type GraphNode } from "../domain/graph.js";
import type { ErrorInfo } from "../domain/records.js";
import { retrierFor } from "../domain/retry.js";
import * as z from "../domain/zod.js";
import type { TaskType } from "../tasks/task-type.js";

/** What the worker keeps of its function timeout for its last writes and the batch response. */
export const WORKER_MARGIN_MS = 5_000;

/** The deployed worker's function timeout (infra's default, and the local runtime's). */
export const DEFAULT_WORKER_TIMEOUT_SECONDS = 300;

/** Lambda's longest timeout. */
export const MAX_WORKER_TIMEOUT_SECONDS = 900;

/** The largest `timeoutSeconds` a node may have under a worker of this function timeout. */
export function nodeTimeoutLimitSeconds(workerTimeoutSeconds: number): number {
  return workerTimeoutSeconds - WORKER_MARGIN_MS / 1000;
}

/** The timeout of a node whose definition names none: 300 s, or less when the worker gives less. */
export function defaultNodeTimeoutSeconds(workerTimeoutSeconds: number): number {
  return Math.min(DEFAULT_NODE_TIMEOUT_SECONDS, nodeTimeoutLimitSeconds(workerTimeoutSeconds));
}

/** A worker timeout the engine can work with: whole seconds, above the margin, at most 15 minutes. */
export function checkWorkerTimeout(seconds: number): number {
  const least = WORKER_MARGIN_MS / 1000 + 1;
  if (!Number.isInteger(seconds) || seconds < least || seconds > MAX_WORKER_TIMEOUT_SECONDS)
    throw new RangeError(
      `workerTimeoutSeconds must be a whole number of seconds from ${least} to ${MAX_WORKER_TIMEOUT_SECONDS} (the worker keeps ${WORKER_MARGIN_MS / 1000} s of it for its last writes), got ${seconds}`,
    );
  return seconds;
}

/** The engine's deadline for an invocation that has `remainingMs` left at `now` (Lambda's context). */
export function invocationDeadline(now: number, remainingMs: number): number {
  return now + remainingMs - WORKER_MARGIN_MS;
}

/** What a node is expected to take when neither its task type nor this container knows better. */
export const DEFAULT_EXPECTED_MS = 10_000;

/**
 * What a node is expected to take, in ms: the larger of what its task type declares for its params
 * (`TaskType.expectedMs`: `sleep` knows its `ms`; `pass`, `noop` and `fail` take nothing) and the
 * longest of its last runs in this container (RecentRunTimes); with neither, DEFAULT_EXPECTED_MS.
 * Simple on purpose: a guess only decides where the node runs, never how long it may.
 */
export function expectedRunMs(task: TaskType, node: GraphNode, recent: number | undefined): number {
  let declared: number | undefined;
  try {
    declared = task.expectedMs?.(z.ownParse(task.params, node.params));
  } catch {
    declared = undefined; // params are checked at registration; a guess never fails a node
  }
  const known = [declared, recent].filter((ms): ms is number => ms !== undefined && Number.isFinite(ms));
  return known.length === 0 ? DEFAULT_EXPECTED_MS : Math.max(0, ...known);
}

/**
 * Whether a ready child may run in this invocation rather than be sent: when its whole timeout fits
 * before the deadline (nothing can cut it), or else when twice its expected run time fits — the
 * headroom absorbs a guess that is somewhat short — and a cut would leave it a retry (its first
 * attempt is not its last: not maxAttempts 1, nor WorkerTimeout listed as non-retryable), so a
 * guess that is badly wrong costs an attempt, never the node.
 */
export function mayContinue(node: GraphNode, expectedMs: number, now: number, deadline: number): boolean {
  const left = deadline - now;
  if (node.timeoutSeconds * 1000 < left) return true;
  const cutIsRetried = (retrierFor(node.retry, { name: WORKER_TIMEOUT })?.maxAttempts ?? 1) > 1;
  return cutIsRetried && 2 * expectedMs < left;
}

export const WORKER_TIMEOUT = "WorkerTimeout";

const seconds = (ms: number) => {
  const s = Math.max(0, ms) / 1000;
  return s < 10 ? s.toFixed(1).replace(/\.0$/, "") : String(Math.round(s));
};

/** The error of an attempt cut short by the end of its worker invocation. */
export function workerTimeoutError(
  node: GraphNode,
  attempt: number,
  leftMs: number,
  workerTimeoutSeconds: number,
  continued: boolean,
): ErrorInfo & { retryable: true } {
  const limit = nodeTimeoutLimitSeconds(workerTimeoutSeconds);
  const why =
    node.timeoutSeconds > limit
      ? `, more than this worker can ever give (${limit} s): lower it or raise the worker timeout`
      : continued
        ? "; it ran after another node in the same invocation and took longer than expected"
        : "";
  return {
    name: WORKER_TIMEOUT,
    message: `attempt ${attempt} was cut short by the end of its worker invocation, which had ${seconds(leftMs)} s left for it (function timeout ${workerTimeoutSeconds} s, less ${WORKER_MARGIN_MS / 1000} s kept for the worker's last writes); node timeoutSeconds is ${node.timeoutSeconds}${why}`,
    retryable: true,
  };
}

/**
 * The run times of nodes this container has seen lately, by workflow version and node: the guess
 * for a node's next run (expectedRunMs). Bounded; a container forgets the least recently run.
 */
export class RecentRunTimes {
  private readonly runs = new Map<string, number[]>();

  constructor(
    private readonly capacity = 1000,
    private readonly keep = 4,
  ) {}

  static key(workflow: string, version: number, nodeId: string): string {
    return `${workflow}@${version}#${nodeId}`;
  }

  record(key: string, ms: number): void {
    const runs = this.runs.get(key) ?? [];
    this.runs.delete(key);
    runs.push(Math.max(0, ms));
    if (runs.length > this.keep) runs.shift();
    this.runs.set(key, runs);
    if (this.runs.size > this.capacity) {
      const oldest = this.runs.keys().next().value;
      if (oldest !== undefined) this.runs.delete(oldest);
    }
  }

  /** The longest of the node's last runs, or undefined when none was seen. */
  longest(key: string): number | undefined {
    const runs = this.runs.get(key);
    return runs === undefined || runs.length === 0 ? undefined : Math.max(...runs);
  }
}
