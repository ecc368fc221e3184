/** The Clock port on virtual time: `now` reads the scheduler's time, `sleep` is a virtual timer. */
import type { Clock } from "../shared/ports.js";
import type { Scheduler } from "./scheduler.js";

/** Virtual time starts here (2026-01-01T00:00:00Z), so timestamps look like epoch milliseconds. */
export const SIM_EPOCH = Date.UTC(2026, 0, 1);

export class FakeClock implements Clock {
  constructor(private readonly scheduler: Scheduler) {}

  now(): number {
    return SIM_EPOCH + this.scheduler.now;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return this.scheduler.sleep(ms, signal);
  }
}
