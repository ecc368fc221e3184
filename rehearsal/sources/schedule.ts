/**
 * EventBridge scheduled rules (AWS::Events::Rule with a ScheduleExpression) invoking their Lambda
 * targets with a "Scheduled Event", or the target's constant Input. Compressed: every
 * `intervalMs` instead of the expression's rate; a run still in progress when the next is due is
 * not doubled (the next tick waits for it).
 */
import { randomUUID } from "node:crypto";
import type { ScheduledEvent } from "aws-lambda";
import type { InvokeOutcome } from "../lambda/container.js";
import type { FunctionPool } from "../lambda/pool.js";

export interface ScheduledTarget {
  ruleLogicalId: string;
  ruleArn: string;
  expression: string;
  pool: FunctionPool;
  /** The target's constant Input (JSON text), if any. */
  input?: string;
}

export interface Schedules {
  /**
   * Holds the schedules (no run starts) until the returned function is called: a scenario whose
   * outcome a sweep could race with — a race the one-minute schedule makes rare and the
   * compressed one would not — keeps the window to itself.
   */
  pause(): () => void;
  stop(): Promise<void>;
  /** Runs so far, per rule. */
  readonly runs: ReadonlyMap<string, number>;
}

export function scheduledEvent(
  target: ScheduledTarget,
  account: string,
  region: string,
  now: Date,
): ScheduledEvent {
  return {
    version: "0",
    id: randomUUID(),
    "detail-type": "Scheduled Event",
    source: "aws.events",
    account,
    time: now.toISOString().replace(/\.\d{3}Z$/, "Z"),
    region,
    resources: [target.ruleArn],
    detail: {},
  };
}

export function startSchedules(
  targets: readonly ScheduledTarget[],
  options: {
    intervalMs: number;
    account: string;
    region: string;
    onResult: (target: ScheduledTarget, outcome: InvokeOutcome) => void;
  },
): Schedules {
  const runs = new Map<string, number>();
  let running = true;
  let pauses = 0;
  const loops = targets.map(async (target) => {
    while (running) {
      const started = Date.now();
      if (pauses > 0) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        continue;
      }
      const event =
        target.input === undefined
          ? scheduledEvent(target, options.account, options.region, new Date())
          : JSON.parse(target.input);
      try {
        const outcome = await target.pool.invoke(event);
        runs.set(target.ruleLogicalId, (runs.get(target.ruleLogicalId) ?? 0) + 1);
        options.onResult(target, outcome);
      } catch (error) {
        if (!running) return;
        throw error;
      }
      const wait = Math.max(0, options.intervalMs - (Date.now() - started));
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  });
  return {
    runs,
    pause() {
      pauses++;
      let resumed = false;
      return () => {
        if (!resumed) pauses--;
        resumed = true;
      };
    },
    async stop() {
      running = false;
      await Promise.allSettled(loops);
    },
  };
}
