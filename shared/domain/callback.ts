/**
 * The `callback` built-in type: a node that waits, holding no worker, until someone outside settles
 * it with its token (engine/callbacks.ts) — a person approving, a third party's webhook — or its
 * time runs out. Its token stands for one attempt (domain/attempt-token.ts): a retry waits anew,
 * with a new token.
 */
import { PLACEMENT_LIMITS } from "./placement.js";
import * as z from "./zod.js";

export const callbackParamsSchema = z.strictObject({
  /** How long it waits for its settlement (up to a year). */
  timeoutSeconds: z.number().check(z.int(), z.gte(1), z.lte(PLACEMENT_LIMITS.maxExternalTimeoutSeconds)),
  /** When given, a heartbeat (POST /callbacks/heartbeat) must come at least this often. */
  heartbeatSeconds: z.optional(
    z.number().check(z.int(), z.gte(1), z.lte(PLACEMENT_LIMITS.maxExternalTimeoutSeconds)),
  ),
});

export type CallbackParams = z.output<typeof callbackParamsSchema>;

/** When a waiting callback must have been settled or heartbeaten, whichever comes first. */
export function callbackDueAt(state: {
  deadline: number;
  heartbeatSeconds?: number;
  heartbeatAt: number;
}): number {
  return state.heartbeatSeconds === undefined
    ? state.deadline
    : Math.min(state.deadline, state.heartbeatAt + state.heartbeatSeconds * 1000);
}
