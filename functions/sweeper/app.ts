/**
 * The sweeper Lambda, run every minute by an EventBridge schedule (and on a timer by the local runtime):
 * one engine sweep, whose report is logged as counts. The event carries nothing it needs.
 */
import { Logger } from "@aws-lambda-powertools/logger";
import type { Metrics } from "@aws-lambda-powertools/metrics";
import type { Context, ScheduledEvent } from "aws-lambda";
import { publishMetrics } from "../../shared/adapters/metrics-powertools.js";
import type { Engine } from "../../shared/engine/engine.js";
import type { SweepReport } from "../../shared/engine/sweeper.js";

export type SweeperHandler = (event?: ScheduledEvent, context?: Context) => Promise<SweepReport>;

export interface SweeperHandlerOptions {
  logger?: Logger;
  /** Powertools Metrics the engine records into (EMF), flushed at the end of every invocation. */
  metrics?: Metrics;
  /** Milliseconds since some fixed point, for the logged duration. Default performance.now. */
  now?: () => number;
}

export function createSweeperHandler(engine: Engine, options: SweeperHandlerOptions = {}): SweeperHandler {
  const logger = options.logger ?? new Logger({ serviceName: "weft-sweeper" });
  const now = options.now ?? (() => performance.now());

  return async () => {
    const started = now();
    let report: SweepReport;
    try {
      report = await engine.sweep();
    } catch (error) {
      // Rethrown: the invocation fails, so the function's Errors metric (and its alarm) sees it.
      logger.error("sweep failed", {
        durationMs: Math.round(now() - started),
        error: error instanceof Error ? error : String(error),
      });
      throw error;
    } finally {
      publishMetrics(options.metrics);
    }
    const durationMs = Math.round(now() - started);
    if (report.skipped) logger.info("sweep skipped: another sweeper holds the lease", { durationMs });
    else logger.info("sweep finished", { ...report, durationMs });
    return report;
  };
}
