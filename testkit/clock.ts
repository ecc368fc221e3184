/**
 * The Clock port on virtual time, for the test runtime. `now()` reads a number that only moves when
 * the runtime's driver moves it (testkit/driver.ts); `sleep(ms)` is a timer that fires when virtual
 * time reaches it. So a retry's backoff, a `sleep` node or an attempt's timeout take no real time,
 * and a test sees the same times on every run.
 */
import type { Clock } from "../shared/ports.js";

interface Timer {
  at: number;
  resolve: () => void;
  reject: (error: unknown) => void;
}

function abortError(): DOMException {
  // What the system clock rejects with (shared/adapters/system.ts): handlers test for the name.
  return new DOMException("The operation was aborted", "AbortError");
}

export class VirtualClock implements Clock {
  private time: number;
  private sequence = 0;
  /** Pending timers by their creation order, which also orders timers due at the same time. */
  private readonly timers = new Map<number, Timer>();

  /** @param onChange called when a timer is set, fires or is aborted: the driver's sign of progress. */
  constructor(
    start: number,
    private readonly onChange: () => void = () => {},
  ) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortError());
        return;
      }
      if (!(ms > 0)) {
        // Nothing to wait for: time need not move (a deadline already passed, a zero sleep).
        resolve();
        return;
      }
      const id = ++this.sequence;
      const onAbort = () => {
        if (!this.timers.delete(id)) return;
        reject(abortError());
        this.onChange();
      };
      this.timers.set(id, {
        at: this.time + ms,
        resolve: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
        reject,
      });
      signal?.addEventListener("abort", onAbort, { once: true });
      this.onChange();
    });
  }

  /** When the earliest pending timer fires, or undefined when none is pending. */
  nextTimerAt(): number | undefined {
    let next: number | undefined;
    for (const timer of this.timers.values()) if (next === undefined || timer.at < next) next = timer.at;
    return next;
  }

  /** Moves virtual time to `at` (never back) and fires every timer due by then, earliest first. */
  advanceTo(at: number): void {
    if (at < this.time)
      throw new RangeError(`virtual time cannot go back (now ${this.time}, asked for ${at})`);
    this.time = at;
    const due = [...this.timers.entries()]
      .filter(([, timer]) => timer.at <= at)
      .sort(([a, x], [b, y]) => x.at - y.at || a - b);
    for (const [id, timer] of due) {
      this.timers.delete(id);
      timer.resolve();
    }
    if (due.length > 0) this.onChange();
  }

  /** Rejects every pending timer with an AbortError (the runtime is closing: nothing will move time). */
  abortAll(): void {
    const pending = [...this.timers.values()];
    this.timers.clear();
    for (const timer of pending) timer.reject(abortError());
  }
}
