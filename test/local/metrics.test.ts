/**
 * The local runtime's metrics: the in-memory registry's Prometheus text (counters, histograms,
 * gauges, labels), and `GET /metrics` on a running local runtime after workflows ran; its series
 * bounded (at most the cap of workflows and pools, the rest under `other`; a pool's series gone
 * with its last worker), on memory and on the emulator.
 */
import { Logger } from "@aws-lambda-powertools/logger";
import { afterEach, describe, expect, it } from "vitest";
import { type LocalRuntime, startLocalRuntime } from "../../local/runtime.js";
import {
  DURATION_BUCKETS_SECONDS,
  PrometheusMetrics,
  snakeCase,
} from "../../shared/adapters/metrics-prometheus.js";
import { DEFAULT_METRIC_LIMITS } from "../../shared/engine/metric-dimensions.js";
import { METRIC, METRIC_HELP } from "../../shared/engine/metrics.js";
import { uniqueName } from "../support/aws.js";
import { BACKEND_KINDS } from "../support/backends.js";
import { apiClient, startRuntime } from "../support/runtime.js";

describe("Prometheus text of the in-memory registry", () => {
  it("names metrics in snake case", () => {
    expect(snakeCase("NodeWaitTime")).toBe("node_wait_time");
    expect(snakeCase("WorkerPoolsStarved")).toBe("worker_pools_starved");
    expect(snakeCase("DLQDepth")).toBe("dlq_depth");
  });

  it("renders counters, histograms in seconds and gauges, with HELP, TYPE and labels", async () => {
    const metrics = new PrometheusMetrics({ help: METRIC_HELP });
    metrics.count(METRIC.nodesCompleted);
    metrics.count(METRIC.nodesCompleted, 2);
    metrics.count(METRIC.executionsStarted, 1, { workflow: 'etl "nightly"\\x' });
    metrics.observe(METRIC.nodeDuration, 40);
    metrics.observe(METRIC.nodeDuration, 3_000);
    metrics.gauge(METRIC.poolReadyTasks, 7, { pool: "gpu" });
    metrics.gauge(METRIC.poolOldestTaskAge, 90_000, { pool: "gpu" }, "ms");
    const text = await metrics.render();

    expect(text.endsWith("\n")).toBe(true);
    expect(text).toContain(`# HELP weft_nodes_completed_total ${METRIC_HELP.NodesCompleted}`);
    expect(text).toContain("# TYPE weft_nodes_completed_total counter");
    expect(text).toContain('weft_nodes_completed_total{service="weft"} 3');
    // Label values escaped as the exposition format says.
    expect(text).toContain(
      'weft_executions_started_total{service="weft",workflow="etl \\"nightly\\"\\\\x"} 1',
    );

    expect(text).toContain("# TYPE weft_node_duration_seconds histogram");
    const bucket = (le: string) => {
      const series = `weft_node_duration_seconds_bucket{service="weft",le="${le}"} `;
      const line = text.split("\n").find((l) => l.startsWith(series));
      return line === undefined ? undefined : Number(line.slice(series.length));
    };
    expect(bucket("0.025")).toBe(0);
    expect(bucket("0.05")).toBe(1);
    expect(bucket("2.5")).toBe(1);
    expect(bucket("5")).toBe(2);
    expect(bucket("+Inf")).toBe(2);
    // Cumulative, every bucket present.
    const counts = DURATION_BUCKETS_SECONDS.map((le) => bucket(String(le)) ?? Number.NaN);
    expect(counts.every(Number.isInteger)).toBe(true);
    expect(counts).toEqual([...counts].sort((a, b) => a - b));
    expect(text).toContain('weft_node_duration_seconds_sum{service="weft"} 3.04');
    expect(text).toContain('weft_node_duration_seconds_count{service="weft"} 2');

    expect(text).toContain("# TYPE weft_worker_pool_ready_tasks gauge");
    expect(text).toContain('weft_worker_pool_ready_tasks{service="weft",pool="gpu"} 7');
    expect(text).toContain('weft_worker_pool_oldest_task_age_seconds{service="weft",pool="gpu"} 90');

    // A gauge is a level: set, not added.
    metrics.gauge(METRIC.poolReadyTasks, 2, { pool: "gpu" });
    expect(await metrics.render()).toContain('weft_worker_pool_ready_tasks{service="weft",pool="gpu"} 2');
  });

  it("reads scrape-time gauges at each render", async () => {
    const metrics = new PrometheusMetrics({ service: "local" });
    let depth = 3;
    metrics.onScrape(() => metrics.gauge("TaskQueueDepth", depth));
    expect(await metrics.render()).toContain('weft_task_queue_depth{service="local"} 3');
    depth = 0;
    expect(await metrics.render()).toContain('weft_task_queue_depth{service="local"} 0');
  });
});

describe("GET /metrics on the local runtime", () => {
  let runtime: LocalRuntime | undefined;
  afterEach(async () => {
    await runtime?.stop();
    runtime = undefined;
  });

  it("shows the engine's counters after workflows ran, and the queue depth", async () => {
    const silent = (serviceName: string) => new Logger({ serviceName, logLevel: "SILENT" });
    runtime = await startLocalRuntime({
      backend: "memory",
      port: 0,
      env: {},
      waitSeconds: 0,
      sweep: false,
      onError: () => {},
      apiLogger: silent("api"),
      workerLogger: silent("worker"),
      dlqLogger: silent("dlq"),
      sweeperLogger: silent("sweeper"),
      engineOptions: { logger: { info() {}, warn() {}, error() {} } },
    });
    const api = apiClient(runtime.url);
    expect(
      (
        await api.call("POST", "/workflows", {
          name: "metered",
          nodes: [
            { id: "a", type: "pass", params: { value: 1 } },
            { id: "b", type: "noop", dependsOn: ["a"] },
          ],
        })
      ).status,
    ).toBe(201);
    await api.call("POST", "/workflows", {
      name: "declined",
      nodes: [{ id: "pay", type: "fail", params: { retryable: false } }],
    });
    const ok = await api.call("POST", "/executions", { workflow: "metered", input: {} });
    const bad = await api.call("POST", "/executions", { workflow: "declined", input: {} });
    expect((await api.waitForEnd(ok.body.executionId)).status).toBe("SUCCEEDED");
    expect((await api.waitForEnd(bad.body.executionId)).status).toBe("FAILED");
    await runtime.sweep();

    const response = await fetch(`${runtime.url}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await response.text();
    const value = (series: string) => {
      const line = text.split("\n").find((l) => l.startsWith(`${series} `));
      return line === undefined ? undefined : Number(line.slice(series.length + 1));
    };
    expect(value('weft_executions_started_total{service="weft",workflow="metered"}')).toBe(1);
    expect(value('weft_executions_succeeded_total{service="weft",workflow="metered"}')).toBe(1);
    expect(value('weft_executions_failed_total{service="weft",workflow="declined"}')).toBe(1);
    expect(value('weft_nodes_completed_total{service="weft"}')).toBe(2);
    expect(value('weft_nodes_failed_total{service="weft"}')).toBe(1);
    expect(value('weft_dead_letters_total{service="weft"}')).toBe(1);
    expect(value('weft_sweeps_completed_total{service="weft"}')).toBe(1);
    expect(value('weft_node_duration_seconds_count{service="weft"}')).toBe(3);
    expect(value('weft_node_wait_time_seconds_count{service="weft"}')).toBe(3);
    expect(value('weft_task_queue_depth{service="weft"}')).toBe(0);
    expect(value('weft_dead_letter_queue_depth{service="weft"}')).toBe(0);

    // Not an API route: the API's own 404 for anything else under it, and only GET is served.
    expect((await fetch(`${runtime.url}/metrics`, { method: "POST" })).status).not.toBe(200);
  });
});

describe.each(BACKEND_KINDS)("GET /metrics keeps its series bounded (%s)", (kind) => {
  let runtime: LocalRuntime | undefined;
  afterEach(async () => {
    await runtime?.stop();
    runtime = undefined;
  });

  /** The distinct values of `label` among the lines of `family` in the scrape `text`. */
  const labelValues = (text: string, family: string, label: string) =>
    new Set(
      text
        .split("\n")
        .filter((line) => line.startsWith(`${family}{`))
        .map((line) => new RegExp(`${label}="([^"]*)"`).exec(line)?.[1])
        .filter((value) => value !== undefined),
    );
  const scrape = async () => (await fetch(`${runtime!.url}/metrics`)).text();

  // 150 workflows in memory under the default cap; on the emulator, which serializes its writes,
  // 15 under a cap of 10 set as deployed (WEFT_METRICS_MAX_WORKFLOWS), to keep the run short.
  const { workflows: count, cap } =
    kind === "memory" ? { workflows: 150, cap: DEFAULT_METRIC_LIMITS.workflows } : { workflows: 15, cap: 10 };

  it(`gives at most ${cap} workflows of ${count} a series of their own, the rest one workflow=other series`, async () => {
    runtime = await startRuntime(kind, {
      sweep: false,
      env: kind === "memory" ? {} : { WEFT_METRICS_MAX_WORKFLOWS: String(cap) },
    });
    const api = apiClient(runtime.url);
    const prefix = uniqueName("capped");
    // Registered and started ten at a time.
    const started: string[] = [];
    for (let batch = 0; batch < count; batch += 10) {
      const ids = await Promise.all(
        Array.from({ length: Math.min(10, count - batch) }, async (_, offset) => {
          const name = `${prefix}-${batch + offset}`;
          const registered = await api.call("POST", "/workflows", {
            name,
            nodes: [{ id: "a", type: "pass", params: { value: batch + offset } }],
          });
          expect(registered.status).toBe(201);
          const execution = await api.call("POST", "/executions", { workflow: name, input: {} });
          expect(execution.status).toBe(202);
          return execution.body.executionId as string;
        }),
      );
      started.push(...ids);
    }
    const ends = await Promise.all(started.map((id) => api.waitForEnd(id)));
    expect(ends.every((view) => view.status === "SUCCEEDED")).toBe(true);

    const text = await scrape();
    for (const family of ["weft_executions_started_total", "weft_executions_succeeded_total"]) {
      const workflows = labelValues(text, family, "workflow");
      expect(workflows.size, family).toBe(cap + 1);
      expect(workflows.has("other"), family).toBe(true);
    }
    const other = text
      .split("\n")
      .find((line) => line.startsWith('weft_executions_started_total{service="weft",workflow="other"} '));
    expect(other?.endsWith(` ${count - cap}`)).toBe(true);
  });

  it("drops a pool's series when its last worker deregisters", async () => {
    runtime = await startRuntime(kind, { sweep: false });
    const api = apiClient(runtime.url);
    const register = (workerId: string) => api.call("POST", "/workers", { workerId, pool: "gpu" });
    expect((await register("gpu-1")).status).toBeLessThan(300);
    expect((await register("gpu-2")).status).toBeLessThan(300);
    await runtime.sweep();
    expect(await scrape()).toContain('weft_worker_pool_healthy_workers{service="weft",pool="gpu"} 2');

    expect((await api.call("DELETE", "/workers/gpu-1")).status).toBeLessThan(300);
    expect(await scrape()).toContain('pool="gpu"');
    expect((await api.call("DELETE", "/workers/gpu-2")).status).toBeLessThan(300);
    expect(await scrape()).not.toContain('pool="gpu"');
  });
});
