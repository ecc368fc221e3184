/**
 * The local runtime's metrics: the engine's metrics (shared/engine/metrics.ts) kept in memory and
 * served as Prometheus text at `GET /metrics` — a local-only route, not part of the deployed API
 * (deployed, the functions write the same metrics to CloudWatch as EMF). Beside the engine's, the
 * depth of the in-memory task queue and dead-letter queue, read at each scrape (with the aws
 * backend, SQS's own CloudWatch metrics say it).
 */
import type { ServerResponse } from "node:http";
import { MemoryQueue } from "../shared/adapters/memory/queue.js";
import { PrometheusMetrics } from "../shared/adapters/metrics-prometheus.js";
import type { MetricLimits } from "../shared/engine/metric-dimensions.js";
import { METRIC_HELP } from "../shared/engine/metrics.js";
import type { QueueConsumer } from "../shared/ports.js";

export const METRICS_PATH = "/metrics";

const QUEUE_HELP = {
  TaskQueueDepth: "Messages held by the local task queue (visible, delayed or in flight).",
  DeadLetterQueueDepth: "Messages held by the local dead-letter queue (visible, delayed or in flight).",
};

/** The registry the local engine records into, with the queues' depths as scrape-time gauges. */
export function createLocalMetrics(
  queues: {
    taskConsumer: QueueConsumer;
    deadLetterConsumer: QueueConsumer;
  },
  /** The cap on distinct workflows and pools (WEFT_METRICS_MAX_*); default DEFAULT_METRIC_LIMITS. */
  limits?: MetricLimits,
): PrometheusMetrics {
  const metrics = new PrometheusMetrics({
    help: { ...METRIC_HELP, ...QUEUE_HELP },
    ...(limits === undefined ? {} : { limits }),
  });
  const { taskConsumer, deadLetterConsumer } = queues;
  metrics.onScrape(() => {
    if (taskConsumer instanceof MemoryQueue) metrics.gauge("TaskQueueDepth", taskConsumer.size);
    if (deadLetterConsumer instanceof MemoryQueue)
      metrics.gauge("DeadLetterQueueDepth", deadLetterConsumer.size);
  });
  return metrics;
}

/** Answers a scrape (the HTTP server calls this for GET /metrics, before any API routing). */
export async function serveMetrics(response: ServerResponse, render: () => Promise<string>): Promise<void> {
  const body = Buffer.from(await render(), "utf8");
  response.statusCode = 200;
  response.setHeader("content-type", "text/plain; version=0.0.4; charset=utf-8");
  response.setHeader("content-length", body.byteLength);
  response.end(body);
}
