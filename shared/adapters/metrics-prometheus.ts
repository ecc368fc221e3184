/**
 * The metrics port in memory, rendered as Prometheus text (exposition format 0.0.4): what the local
 * runtime serves at `GET /metrics`. Counters become `weft_<snake_name>_total`, distributions
 * histograms in seconds (`weft_<snake_name>_seconds`, with buckets), gauges `weft_<snake_name>` (in
 * seconds when given in "ms"). Every series has the label `service`; `workflow` and `pool` when the
 * engine gives them. A breakdown is the only series (Prometheus sums labels itself), unlike
 * CloudWatch's, which keeps the total apart (metrics-powertools.ts). The values of `workflow` and
 * `pool` are capped (engine/metric-dimensions.ts): later ones are folded into `other`, and a pool's
 * series leave the output when its last worker goes.
 */
import { DimensionCap, type MetricLimits } from "../engine/metric-dimensions.js";
import { METRICS_SERVICE } from "../engine/metrics.js";
import type { MetricDimensions, MetricsPort } from "../ports.js";

/** Histogram buckets, in seconds: from a quick node (5 ms) to an hour. */
export const DURATION_BUCKETS_SECONDS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 3600,
] as const;

type Kind = "counter" | "histogram" | "gauge";

interface Family {
  kind: Kind;
  name: string;
  help: string;
  series: Map<string, Series>;
}

interface Series {
  labels: Record<string, string>;
  value: number;
  /** Histograms: cumulative counts per bucket (DURATION_BUCKETS_SECONDS), then the sum and count. */
  buckets?: number[];
  sum?: number;
  count?: number;
}

export interface PrometheusOptions {
  /** The `service` label of every series. Default METRICS_SERVICE ("weft"). */
  service?: string;
  /** HELP text by the engine's metric name (engine/metrics.ts METRIC_HELP). */
  help?: Readonly<Record<string, string>>;
  /** Distinct workflows and pools with series of their own. Default DEFAULT_METRIC_LIMITS. */
  limits?: Readonly<MetricLimits>;
}

/** `NodeWaitTime` → `node_wait_time`. */
export function snakeCase(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1_$2")
    .toLowerCase();
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

function escapeHelp(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

function formatNumber(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Number.POSITIVE_INFINITY) return "+Inf";
  if (value === Number.NEGATIVE_INFINITY) return "-Inf";
  return String(value);
}

function labelText(labels: Record<string, string>, extra?: [string, string]): string {
  const pairs = Object.entries(labels);
  if (extra) pairs.push(extra);
  return pairs.length === 0 ? "" : `{${pairs.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(",")}}`;
}

export class PrometheusMetrics implements MetricsPort {
  private readonly families = new Map<string, Family>();
  private readonly gaugeSources: Array<() => void | Promise<void>> = [];
  private readonly service: string;
  private readonly help: Readonly<Record<string, string>>;
  private readonly cap: DimensionCap;

  constructor(options: PrometheusOptions = {}) {
    this.service = options.service ?? METRICS_SERVICE;
    this.help = options.help ?? {};
    this.cap = new DimensionCap(options.limits);
  }

  count(name: string, value = 1, dimensions?: MetricDimensions): void {
    const series = this.series("counter", `weft_${snakeCase(name)}_total`, name, dimensions);
    series.value += value;
  }

  observe(name: string, valueMs: number, dimensions?: MetricDimensions): void {
    const series = this.series("histogram", `weft_${snakeCase(name)}_seconds`, name, dimensions);
    const seconds = valueMs / 1000;
    series.buckets ??= DURATION_BUCKETS_SECONDS.map(() => 0);
    DURATION_BUCKETS_SECONDS.forEach((bound, i) => {
      if (seconds <= bound) series.buckets![i]! += 1;
    });
    series.sum = (series.sum ?? 0) + seconds;
    series.count = (series.count ?? 0) + 1;
  }

  gauge(name: string, value: number, dimensions?: MetricDimensions, unit: "count" | "ms" = "count"): void {
    const suffix = unit === "ms" ? "_seconds" : "";
    const series = this.series("gauge", `weft_${snakeCase(name)}${suffix}`, name, dimensions);
    series.value = unit === "ms" ? value / 1000 : value;
  }

  /** The pool's series leave the output, and its slot is freed; a pool folded into `other` changes nothing. */
  poolGone(pool: string): void {
    if (!this.cap.poolGone(pool)) return;
    for (const [name, family] of this.families) {
      for (const [key, series] of family.series) if (series.labels.pool === pool) family.series.delete(key);
      if (family.series.size === 0) this.families.delete(name);
    }
  }

  /**
   * A gauge read at every scrape (the local queue's depth): `read` sets it through `gauge()`.
   * Sources run in the order added, before rendering.
   */
  onScrape(read: () => void | Promise<void>): void {
    this.gaugeSources.push(read);
  }

  /** Every series, as Prometheus text; the scrape-time gauges read first. */
  async render(): Promise<string> {
    for (const read of this.gaugeSources) await read();
    const lines: string[] = [];
    const families = [...this.families.values()].sort((a, b) => a.name.localeCompare(b.name));
    for (const family of families) {
      if (family.help !== "") lines.push(`# HELP ${family.name} ${escapeHelp(family.help)}`);
      lines.push(`# TYPE ${family.name} ${family.kind}`);
      for (const series of family.series.values()) {
        if (family.kind !== "histogram") {
          lines.push(`${family.name}${labelText(series.labels)} ${formatNumber(series.value)}`);
          continue;
        }
        const base = family.name;
        DURATION_BUCKETS_SECONDS.forEach((bound, i) => {
          const count = series.buckets?.[i] ?? 0;
          lines.push(`${base}_bucket${labelText(series.labels, ["le", String(bound)])} ${count}`);
        });
        lines.push(`${base}_bucket${labelText(series.labels, ["le", "+Inf"])} ${series.count ?? 0}`);
        lines.push(`${base}_sum${labelText(series.labels)} ${formatNumber(series.sum ?? 0)}`);
        lines.push(`${base}_count${labelText(series.labels)} ${series.count ?? 0}`);
      }
    }
    return `${lines.join("\n")}\n`;
  }

  private series(kind: Kind, name: string, metric: string, given?: MetricDimensions): Series {
    const dimensions = this.cap.bound(given);
    let family = this.families.get(name);
    if (!family) {
      family = { kind, name, help: this.help[metric] ?? "", series: new Map() };
      this.families.set(name, family);
    }
    const labels: Record<string, string> = { service: this.service };
    if (dimensions?.workflow !== undefined) labels.workflow = dimensions.workflow;
    if (dimensions?.pool !== undefined) labels.pool = dimensions.pool;
    const key = JSON.stringify(labels);
    let series = family.series.get(key);
    if (!series) {
      series = { labels, value: 0 };
      family.series.set(key, series);
    }
    return series;
  }
}
