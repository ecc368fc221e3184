/**
 * The metrics port on Powertools Metrics: CloudWatch Embedded Metric Format written to stdout, which
 * Lambda's log pipeline turns into metrics (no API call, no extra latency). Namespace "Weft",
 * dimension `service` on every metric. Buffered: each function flushes at the end of every
 * invocation (publishMetrics, in a `finally`), Powertools' documented manual flush.
 *
 * Dimension sets: a metric without dimensions goes to the buffer under [service]; with a `workflow`
 * it goes there too (the total, which the alarms read: CloudWatch cannot add up dimension values)
 * and once more, at once, under [service, workflow]; with a `pool` only under [service, pool].
 * The values of `workflow` and `pool` are capped per function container (engine/metric-dimensions.ts):
 * later ones are written as `other`, so callers cannot create custom metrics without bound.
 */
import { Metrics, MetricUnit } from "@aws-lambda-powertools/metrics";
import type { MetricUnit as Unit } from "@aws-lambda-powertools/metrics/types";
import { DimensionCap, type MetricLimits } from "../engine/metric-dimensions.js";
import { METRICS_NAMESPACE, METRICS_SERVICE } from "../engine/metrics.js";
import type { MetricDimensions, MetricsPort } from "../ports.js";

export { METRICS_NAMESPACE, METRICS_SERVICE } from "../engine/metrics.js";

/** A Powertools Metrics for weft's namespace and service, one per function container. */
export function createPowertoolsMetrics(options: { service?: string } = {}): Metrics {
  return new Metrics({ namespace: METRICS_NAMESPACE, serviceName: options.service ?? METRICS_SERVICE });
}

/** Writes what the invocation recorded (nothing when it recorded nothing, so no empty-flush warning). */
export function publishMetrics(metrics: Metrics | undefined): void {
  if (metrics?.hasStoredMetrics()) metrics.publishStoredMetrics();
}

export class PowertoolsMetricsPort implements MetricsPort {
  private readonly cap: DimensionCap;

  /** `limits`: distinct workflows and pools with dimensions of their own; default DEFAULT_METRIC_LIMITS. */
  constructor(
    private readonly metrics: Metrics,
    limits?: Readonly<MetricLimits>,
  ) {
    this.cap = new DimensionCap(limits);
  }

  count(name: string, value = 1, dimensions: MetricDimensions = {}): void {
    this.record(name, MetricUnit.Count, value, dimensions);
  }

  observe(name: string, valueMs: number, dimensions: MetricDimensions = {}): void {
    this.record(name, MetricUnit.Milliseconds, valueMs, dimensions);
  }

  gauge(
    name: string,
    value: number,
    dimensions: MetricDimensions = {},
    unit: "count" | "ms" = "count",
  ): void {
    this.record(name, unit === "ms" ? MetricUnit.Milliseconds : MetricUnit.Count, value, dimensions);
  }

  /** Frees the pool's slot; CloudWatch keeps no series to drop (a metric without data expires by itself). */
  poolGone(pool: string): void {
    this.cap.poolGone(pool);
  }

  private record(name: string, unit: Unit, value: number, given: MetricDimensions): void {
    const dimensions = this.cap.bound(given) ?? {};
    try {
      if (dimensions.pool !== undefined) {
        this.single(name, unit, value, "pool", dimensions.pool);
        return;
      }
      this.metrics.addMetric(name, unit, value);
      if (dimensions.workflow !== undefined) this.single(name, unit, value, "workflow", dimensions.workflow);
    } catch {
      // A metric must never fail the work it describes (Powertools throws on invalid names or values).
    }
  }

  /** One EMF record of its own under [service, `dimension`], written at once. */
  private single(name: string, unit: Unit, value: number, dimension: string, dimensionValue: string) {
    const single = this.metrics.singleMetric();
    single.addDimension(dimension, dimensionValue);
    single.addMetric(name, unit, value);
  }
}
