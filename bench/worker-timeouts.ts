/**
 * The chain under the deployed worker timeout (300 s, the main runs') beside a 15-minute worker (what
 * the benchmark gave before it modeled the deployed default): continuation, decided by each node's
 * expected run time within the invocation's remaining time (shared/engine/worker-time.ts), should
 * keep a chain at about one SQS round trip per 17 nodes under both.
 */
import { DEFAULT_WORKER_TIMEOUT_SECONDS } from "../shared/engine/worker-time.js";
import { measuredBackend, modeledCosts, type ResultRow } from "./report.js";

/** The worker timeouts the chain runs under besides the deployed default. */
export const OTHER_WORKER_TIMEOUTS: readonly number[] = [900];

/** SQS requests per node the chain should stay within, under every worker timeout. */
export const CHAIN_SQS_PER_NODE_TARGET = 0.3;

export interface WorkerTimeoutPoint {
  workload: string;
  workerTimeoutSeconds: number;
  label: string;
  backend: string;
  sqsRequests: number;
  workerInvocations: number;
  writeUnits: number;
  /** $ per million nodes by the model of AWS (counts on `backend`, Lambda on memory-6ms), when both ran. */
  modeled?: number;
  /** $ per million nodes with Lambda at 6 ms per call summed. */
  summed: number;
  met: boolean;
}

export interface WorkerTimeoutComparison {
  target: number;
  points: WorkerTimeoutPoint[];
}

const labelOf = (seconds: number) =>
  seconds === DEFAULT_WORKER_TIMEOUT_SECONDS
    ? `${seconds} s (deployed default)`
    : seconds === 900
      ? `${seconds} s (15 minutes, as benchmarked before)`
      : `${seconds} s`;

export function workerTimeoutComparison(
  results: readonly ResultRow[],
  others: readonly ResultRow[],
): WorkerTimeoutComparison {
  const workloads = new Set(others.map((r) => r.workload));
  const configs = [
    results.filter((r) => workloads.has(r.workload)),
    ...OTHER_WORKER_TIMEOUTS.map((s) => others.filter((r) => r.workerTimeoutSeconds === s)),
  ];
  const points = configs.flatMap((rows) => {
    const on = measuredBackend(rows);
    const modeled = new Map(modeledCosts(rows).map((m) => [m.workload, m.total]));
    return rows
      .filter((r) => r.backend === on)
      .map((r): WorkerTimeoutPoint => {
        const total = modeled.get(r.workload);
        return {
          workload: r.workload,
          workerTimeoutSeconds: r.workerTimeoutSeconds,
          label: labelOf(r.workerTimeoutSeconds),
          backend: r.backend,
          sqsRequests: r.perNode.sqsBilledRequests,
          workerInvocations: r.perNode.workerInvocations,
          writeUnits: r.perNode.ddbWriteUnits,
          ...(total === undefined ? {} : { modeled: total }),
          summed: r.cost.totalAtAwsLatency,
          met: r.perNode.sqsBilledRequests <= CHAIN_SQS_PER_NODE_TARGET,
        };
      });
  });
  return { target: CHAIN_SQS_PER_NODE_TARGET, points };
}
