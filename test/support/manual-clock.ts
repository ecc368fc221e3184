/**
 * Virtual time for engine tests in memory: time moves only when nothing else can run, so nothing
 * depends on real time.
 */
import type { Clock } from "../../shared/ports.js";

/** Virtual time: `drive` runs work to its end, moving time to the next timer whenever nothing can run. */
export class ManualClock implements Clock {
  private t = Date.UTC(2026, 0, 1);
  private timers: Array<{ at: number; fire: () => void }> = [];

  now = (): number => this.t;

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const abort = () => {
        this.timers = this.timers.filter((timer) => timer !== entry);
        reject(new DOMException("The operation was aborted", "AbortError"));
      };
      const entry = {
        at: this.t + Math.max(0, ms),
        fire: () => {
          signal?.removeEventListener("abort", abort);
          resolve();
        },
      };
      if (signal?.aborted) return abort();
      signal?.addEventListener("abort", abort, { once: true });
      this.timers.push(entry);
    });
  }

  async drive<T>(work: Promise<T>, limitMs = 24 * 3600_000): Promise<T> {
    let settled = false;
    work.then(
      () => {
        settled = true;
      },
      () => {
        settled = true;
      },
    );
    const start = this.t;
    while (!settled) {
      for (let i = 0; i < 50 && !settled; i++) await new Promise((resolve) => setImmediate(resolve));
      if (settled) break;
      const next = Math.min(...this.timers.map((timer) => timer.at));
      if (!Number.isFinite(next)) throw new Error("stuck: the work waits on nothing the clock can move");
      if (next - start > limitMs) throw new Error("the work did not end within the limit");
      this.t = Math.max(this.t, next);
      const due = this.timers.filter((timer) => timer.at <= this.t);
      this.timers = this.timers.filter((timer) => timer.at > this.t);
      for (const timer of due) timer.fire();
    }
    return work;
  }
}
