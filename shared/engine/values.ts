/**
 * Dependencies' outputs resolved to values: what a handler's deps and an expression's scope see. A
 * module of its own, below every caller (prepare, propagation, waiting), so none imports another for it.
 */
import type { Payload } from "../domain/payload.js";
import type { EngineContext } from "./context.js";

/** Dependencies' outputs as values, keyed by node id. */
export async function loadValues(
  ctx: EngineContext,
  deps: ReadonlyArray<readonly [string, Payload]>,
): Promise<Record<string, unknown>> {
  const values = await Promise.all(deps.map(async ([id, payload]) => [id, await ctx.payloads.load(payload)]));
  return Object.fromEntries(values);
}
