/** Waiting on progress: poll a probe until it gives a value, with a deadline; never a fixed sleep. */

export class WaitTimeoutError extends Error {
  override readonly name = "WaitTimeoutError";
}

export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Calls `probe` until it returns something other than undefined; throws when `timeoutMs` passes
 * (with the last value seen, to say what was left undone).
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  options: { timeoutMs: number; intervalMs?: number; describe?: () => string },
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  const interval = options.intervalMs ?? 250;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) {
      const detail = options.describe ? ` (${options.describe()})` : "";
      throw new WaitTimeoutError(`${what}: not within ${Math.round(options.timeoutMs / 1000)} s${detail}`);
    }
    await pause(interval);
  }
}
