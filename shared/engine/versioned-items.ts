/**
 * Read-change-write of a flow-control item (Store.getSlots/putSlots: a limit's slots, a rate's
 * bucket) at the version read, tried again with jittered backoff when another write came first.
 */
import type { EngineContext } from "./context.js";

export interface RetryPolicy {
  maxRounds: number;
  baseMs: number;
  capMs: number;
  /** The error once `maxRounds` writes in a row were refused. */
  exhausted: () => Error;
}

/**
 * `change` gets the stored state (undefined: none yet) and answers its result and, to write, the new
 * state; nothing to write answers at once. Resolves once a write is in (or none was needed).
 */
export async function updateVersioned<T>(
  ctx: EngineContext,
  key: string,
  policy: RetryPolicy,
  change: (state: string | undefined) => Promise<{ result: T; state?: string }>,
): Promise<T> {
  for (let round = 0; ; round++) {
    const item = await ctx.store.getSlots(key);
    const outcome = await change(item?.state);
    if (outcome.state === undefined) return outcome.result;
    const version = item?.version ?? 0;
    if (
      await ctx.store.putSlots(key, { version: version + 1, state: outcome.state }, version, ctx.clock.now())
    )
      return outcome.result;
    if (round + 1 >= policy.maxRounds) throw policy.exhausted();
    const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** Math.min(round, 16));
    await ctx.clock.sleep(Math.floor(ctx.ids.random() * ceiling));
  }
}
