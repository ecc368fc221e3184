/**
 * The test runtime's sign of progress: everything that can move an execution on (a timer set or
 * fired, a message sent, a handler starting, parking or ending, a delivery settling) bumps it. The
 * driver moves virtual time only after a quiet spell with no bump, and waits on it while a handler
 * is doing real work.
 */
export class Activity {
  private count = 0;
  private waiters: Array<() => void> = [];

  /** How many bumps so far: unchanged across a wait means nothing moved. */
  get version(): number {
    return this.count;
  }

  bump(): void {
    this.count += 1;
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  /** Resolves at the next bump. */
  next(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}

/**
 * The real setImmediate, taken when this module loads: a test that installs fake timers afterwards
 * (vi.useFakeTimers) must not stop the driver, whose only use of the event loop this is.
 */
const realSetImmediate = globalThis.setImmediate;

/** One turn of the event loop: every promise chain that waits on nothing but promises has run on. */
export function macrotask(): Promise<void> {
  return new Promise((resolve) => realSetImmediate(resolve));
}
