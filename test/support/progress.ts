/**
 * Waiting on progress, not on a fixed budget. On a loaded two-core machine an execution on an emulator
 * can take many times as long as on an idle one, so a wait that gives up after N seconds fails tests
 * that were only slow. These waits keep going while what they watch moves (nodes change status,
 * messages arrive, events appear) and give up only after a long stretch in which nothing changed at
 * all, saying what they last saw.
 *
 * Tests that wait this way set a vitest timeout of PATIENT_TEST_TIMEOUT_MS, so that vitest does not cut
 * them short: the waits decide when to give up.
 */

/** How long a wait goes on with nothing changing before it gives up. */
export const NO_PROGRESS_MS = 60_000;

/** A ceiling on one wait, progress or not, so that a livelock still ends (with the wait's message). */
export const MAX_WAIT_MS = 10 * 60_000;

/** vitest timeout for tests that wait on progress: above MAX_WAIT_MS, so the waits decide, not vitest. */
export const PATIENT_TEST_TIMEOUT_MS = 30 * 60_000;

export interface ProgressWaitOptions {
  /** Give up after this long without progress (NO_PROGRESS_MS). */
  idleMs?: number;
  /** Give up after this long in all (MAX_WAIT_MS). */
  maxMs?: number;
  /** Pause after an observation that saw progress (50 ms; 0 looks again at once). */
  intervalMs?: number;
  /** While nothing changes the pause doubles, up to this (500 ms): idle waits poll the emulator less. */
  maxIntervalMs?: number;
}

/** One look at what is awaited: the result when it is there, or a fingerprint of how far it got. */
export type Observation<T> =
  | { done: true; value: T }
  | {
      done: false;
      /** Any JSON value; a change from the previous observation is progress. */
      progress: unknown;
      /** The state, for the message when the wait gives up (the progress value if absent). */
      state?: string;
    };

export class NoProgressError extends Error {
  override readonly name = "NoProgressError";
}

/**
 * Observes until `observe` says done, resetting the idle clock whenever the progress fingerprint
 * changes. Throws NoProgressError after `idleMs` without a change (or `maxMs` in all); errors thrown by
 * `observe` propagate.
 */
export async function waitForProgress<T>(
  what: string,
  observe: () => Promise<Observation<T>>,
  options: ProgressWaitOptions = {},
): Promise<T> {
  const idleMs = options.idleMs ?? NO_PROGRESS_MS;
  const maxMs = options.maxMs ?? MAX_WAIT_MS;
  const intervalMs = options.intervalMs ?? 50;
  const maxIntervalMs = Math.max(intervalMs, options.maxIntervalMs ?? 500);
  const started = Date.now();
  let lastChange = started;
  let last: string | undefined;
  let pause = intervalMs;
  for (let first = true; ; first = false) {
    const seen = await observe();
    if (seen.done) return seen.value;
    const fingerprint = JSON.stringify(seen.progress) ?? "undefined";
    const now = Date.now();
    if (first || fingerprint !== last) {
      last = fingerprint;
      lastChange = now;
      pause = intervalMs;
    } else {
      pause = Math.min(maxIntervalMs, Math.max(pause * 2, 10));
    }
    const state = seen.state ?? fingerprint;
    if (now - lastChange > idleMs) {
      throw new NoProgressError(
        `${what}: no progress for ${now - lastChange} ms (after ${now - started} ms in all); last seen: ${state}`,
      );
    }
    if (now - started > maxMs) {
      throw new NoProgressError(
        `${what}: not done after ${now - started} ms, still moving; last seen: ${state}`,
      );
    }
    if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

/** Suite options for tests that wait on progress: `describe("…", PATIENT, () => …)`. */
export const PATIENT = { timeout: PATIENT_TEST_TIMEOUT_MS } as const;
