/**
 * The cap on metric cardinality (shared/engine/metric-dimensions.ts), alone and through the
 * Prometheus registry: the first values keep their series, later ones are folded into `other`, a
 * value really named `other` is never a series of its own, and a pool's slot and series go with it
 * (on deregistration, and when measurePools no longer sees the pool).
 */
import { describe, expect, it } from "vitest";
import { PrometheusMetrics } from "../../shared/adapters/metrics-prometheus.js";
import type { WorkerRecord } from "../../shared/domain/placement.js";
import {
  DEFAULT_METRIC_LIMITS,
  DimensionCap,
  OTHER_DIMENSION,
} from "../../shared/engine/metric-dimensions.js";
import { METRIC, measurePools } from "../../shared/engine/metrics.js";

/** The distinct values of `label` in the Prometheus text's lines of `family`. */
function labelValues(text: string, family: string, label: string): Set<string> {
  const values = new Set<string>();
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${family}{`)) continue;
    const match = new RegExp(`${label}="([^"]*)"`).exec(line);
    if (match?.[1] !== undefined) values.add(match[1]);
  }
  return values;
}

describe("DimensionCap", () => {
  it("keeps the first values, folds later ones into other, and caps workflows and pools apart", () => {
    const cap = new DimensionCap({ workflows: 2, pools: 1 });
    expect(cap.bound({ workflow: "a" })).toEqual({ workflow: "a" });
    expect(cap.bound({ workflow: "b" })).toEqual({ workflow: "b" });
    expect(cap.bound({ workflow: "c" })).toEqual({ workflow: OTHER_DIMENSION });
    expect(cap.bound({ workflow: "a" })).toEqual({ workflow: "a" });
    expect(cap.bound({ pool: "gpu" })).toEqual({ pool: "gpu" });
    expect(cap.bound({ pool: "cpu" })).toEqual({ pool: OTHER_DIMENSION });
    expect(cap.bound(undefined)).toBeUndefined();
    expect(OTHER_DIMENSION).toBe("other");
  });

  it("never gives a value named other a slot of its own", () => {
    const cap = new DimensionCap({ workflows: 1, pools: 1 });
    expect(cap.bound({ workflow: "other" })).toEqual({ workflow: "other" });
    // The slot is still free: "other" did not take it.
    expect(cap.bound({ workflow: "real" })).toEqual({ workflow: "real" });
    expect(cap.bound({ workflow: "late" })).toEqual({ workflow: "other" });
  });

  it("frees a pool's slot when it goes, for a later pool", () => {
    const cap = new DimensionCap({ workflows: 1, pools: 1 });
    cap.bound({ pool: "gpu" });
    expect(cap.bound({ pool: "cpu" })).toEqual({ pool: "other" });
    expect(cap.poolGone("cpu")).toBe(false);
    expect(cap.poolGone("gpu")).toBe(true);
    expect(cap.bound({ pool: "cpu" })).toEqual({ pool: "cpu" });
  });

  it("defaults to 100 workflows and 50 pools", () => {
    expect(DEFAULT_METRIC_LIMITS).toEqual({ workflows: 100, pools: 50 });
  });
});

describe("the cap in the Prometheus registry", () => {
  it("renders at most the cap of workflow series, the rest under other", async () => {
    const metrics = new PrometheusMetrics();
    for (let i = 0; i < 150; i++) metrics.count(METRIC.executionsStarted, 1, { workflow: `wf-${i}` });
    const text = await metrics.render();
    const workflows = labelValues(text, "weft_executions_started_total", "workflow");
    expect(workflows.size).toBe(DEFAULT_METRIC_LIMITS.workflows + 1);
    expect(workflows.has("wf-99")).toBe(true);
    expect(workflows.has("wf-100")).toBe(false);
    expect(text).toContain('weft_executions_started_total{service="weft",workflow="other"} 50');
  });

  it("drops a pool's series when measurePools no longer sees it, and lets a later pool take its slot", async () => {
    const metrics = new PrometheusMetrics({ limits: { workflows: 10, pools: 1 } });
    let workers: WorkerRecord[] = [];
    const worker = (workerId: string, pool: string) =>
      ({ workerId, pool, lastHeartbeatAt: 0, heartbeatTimeoutSeconds: 60 }) as unknown as WorkerRecord;
    const ctx = {
      metrics,
      store: { listWorkers: async () => workers, listReadyTasks: async () => [] },
    };
    workers = [worker("g1", "gpu"), worker("c1", "cpu")];
    await measurePools(ctx, 0);
    let text = await metrics.render();
    expect(labelValues(text, "weft_worker_pool_ready_tasks", "pool")).toEqual(new Set(["gpu", "other"]));

    // gpu's workers expired: gone from the registry, so from the output; cpu takes the slot.
    workers = [worker("c1", "cpu")];
    await measurePools(ctx, 0);
    text = await metrics.render();
    expect(labelValues(text, "weft_worker_pool_ready_tasks", "pool")).toEqual(new Set(["cpu", "other"]));
    expect(text).not.toContain('pool="gpu"');
  });
});
