/**
 * The bound on metric cardinality, one rule for both adapters (metrics-prometheus.ts locally,
 * metrics-powertools.ts deployed): each process keeps its own series for at most `workflows`
 * distinct `workflow` values and `pools` distinct `pool` values, the first seen; any later value is
 * recorded under the value OTHER_DIMENSION instead. Workflow names and pool names are chosen by API
 * callers, and deployed each new dimension value is a CloudWatch custom metric billed by the month.
 *
 * A pool's slot is freed when the pool's last worker goes (`poolGone`): its series are dropped and a
 * later pool may take the slot. Workflow slots last as long as the process. A workflow or pool
 * really named `other` (both schemas allow it) never gets a series of its own: it is always counted
 * under `other`, beside the folded ones, so that series is never two things at once.
 */
import type { MetricDimensions } from "../ports.js";

/** The dimension value later workflows and pools are folded into. */
export const OTHER_DIMENSION = "other";

export interface MetricLimits {
  /** Distinct `workflow` values with a series of their own, per process. */
  workflows: number;
  /** Distinct `pool` values with a series of their own, per process. */
  pools: number;
}

/** The defaults of WEFT_METRICS_MAX_WORKFLOWS and WEFT_METRICS_MAX_POOLS (shared/config/settings.ts). */
export const DEFAULT_METRIC_LIMITS: Readonly<MetricLimits> = { workflows: 100, pools: 50 };

export class DimensionCap {
  private readonly workflows = new Set<string>();
  private readonly pools = new Set<string>();

  constructor(private readonly limits: Readonly<MetricLimits> = DEFAULT_METRIC_LIMITS) {}

  /** The dimensions to record under: each value past its cap becomes OTHER_DIMENSION. */
  bound(dimensions: MetricDimensions | undefined): MetricDimensions | undefined {
    if (dimensions === undefined) return undefined;
    const { workflow, pool } = dimensions;
    if (workflow === undefined && pool === undefined) return dimensions;
    return {
      ...(workflow === undefined ? {} : { workflow: admit(this.workflows, this.limits.workflows, workflow) }),
      ...(pool === undefined ? {} : { pool: admit(this.pools, this.limits.pools, pool) }),
    };
  }

  /**
   * The pool's last worker went: its slot is freed. True when it had one (its series are to be
   * dropped); false for a pool folded into `other`, whose series stays.
   */
  poolGone(pool: string): boolean {
    return this.pools.delete(pool);
  }
}

function admit(seen: Set<string>, cap: number, value: string): string {
  if (value === OTHER_DIMENSION || seen.has(value)) return value;
  if (seen.size >= cap) return OTHER_DIMENSION;
  seen.add(value);
  return value;
}
