/**
 * Engine bugs the simulation found that are not fixed yet. A campaign does not stop at a seed whose
 * every violation is one of these (it lists those seeds apart), and the 500-seed test tolerates
 * exactly these violations; `test/sim/regressions.test.ts` replays a seed of each as an expected
 * failure. Once the engine is fixed: delete the entry, and turn that test into a regression.
 */
import type { Violation } from "./invariants.js";

export interface OpenFinding {
  id: string;
  summary: string;
  /** Seeds of `npm run sim -- --runs 10000` that show it. */
  seeds: readonly number[];
  matches(violation: Violation): boolean;
}

// Finding I (a transient blob store fault failed an inline node for good) is fixed: seed 187 is a
// regression test in test/sim/regressions.test.ts. So are the map worlds' findings K (a map's
// `when` and skipped inputs never evaluated), L (an empty map's output not saved through Payloads)
// and M (expression results flattened by JSON.stringify): seeds in test/sim/maps.test.ts.
export const OPEN_FINDINGS: readonly OpenFinding[] = [
  {
    id: "N",
    summary:
      "a callback's settlement (completeCallback / failCallback) that reads its attempt as waiting, then loses the race to the attempt's end (a cancellation, its timeout, a retry) before its fenced write, is answered as accepted (204) though nothing was written: completeWaiting and failAttempt return quietly on a refused write; the caller believes its settlement took (it should be told 409, as a second settlement is)",
    seeds: [34],
    matches: (v) => v.rule === "callback-answer",
  },
  {
    id: "O",
    summary:
      "a worker's hold is released by its key (execution/node), not by its attempt: a poll pruning a stale hold (pruneHolds: read the node, then releaseHold) that races a take of the same node's next attempt by the same worker releases the new attempt's hold, which is RUNNING — the worker's record then shows room it does not have and it is given more than its maxParallel (and a node's maxParallelPerWorker); the sweeper's release after recovering a lease (recoverExpiredLease releases even when its fenced write was refused) and the release after a report have the same shape",
    seeds: [],
    matches: (v) => v.rule === "worker-limits",
  },
];

/** The open finding a violation is, if any. */
export function openFindingOf(violation: Violation): OpenFinding | undefined {
  return OPEN_FINDINGS.find((finding) => finding.matches(violation));
}
