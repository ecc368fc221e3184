/**
 * Timer worlds (issue 26): what makes a world exercise the durable timers, drawn from its own fork
 * so the rest of a seed's world is drawn as before.
 *  - Far waits: some `wait` nodes wait beyond SQS's 15-minute delay, so their message is a timer in
 *    the due index (engine/timers.ts) that the sweeps send when it comes within reach.
 *  - A sweeper outage: for a while no scheduled sweep runs (weft down, or the clock jumping ahead
 *    of the sweeps); the timers due meanwhile fire late, once, when the sweeps are back, as the
 *    cursor (not the look-back) says what is left to send.
 */

import type { WorkflowDefinition } from "../shared/domain/definition.js";
import { MAX_DELAY_SECONDS } from "../shared/domain/timers.js";
import type { Rng } from "./prng.js";
import type { Profile } from "./profile.js";

export interface TimerWorld {
  /** The share of `wait` nodes made far. */
  farWaits: number;
  /** When (virtual ms from the world's start) and how long no scheduled sweep runs. */
  outage?: { fromMs: number; forMs: number };
}

export function drawTimerWorld(rng: Rng): TimerWorld {
  const farWaits = rng.pick([0, 0, 0.25, 0.5, 1]);
  const outage = rng.chance(0.3)
    ? { fromMs: rng.int(0, 3_600_000), forMs: rng.pick([10 * 60_000, 30 * 60_000, 90 * 60_000]) }
    : undefined;
  return { farWaits, ...(outage ? { outage } : {}) };
}

/** The definition with a share of its literal `wait` seconds made far (beyond the queue's delay). */
export function withFarWaits(
  definition: WorkflowDefinition,
  world: TimerWorld,
  rng: Rng,
): WorkflowDefinition {
  if (world.farWaits === 0) return definition;
  return {
    ...definition,
    nodes: definition.nodes.map((node) => {
      const params = node.params as { seconds?: unknown } | undefined;
      if (node.type !== "wait" || typeof params?.seconds !== "number" || !rng.chance(world.farWaits))
        return node;
      return { ...node, params: { ...params, seconds: rng.int(MAX_DELAY_SECONDS + 1, 3 * 3600) } };
    }),
  };
}

/** Whether the scheduled sweeps are down at `now` (virtual ms from the world's start). */
export function inOutage(world: TimerWorld, now: number): boolean {
  const outage = world.outage;
  return outage !== undefined && now >= outage.fromMs && now < outage.fromMs + outage.forMs;
}

/** The sweeper's lease (engine/sweeper.ts): a sweep that stalls holding it delays the next that long. */
const SWEEPER_LEASE_MS = 50_000;

/**
 * How late past its time a timer may be sent in a world: a sweep period, the outage, a stalled
 * sweep's lease and two of its stalls (a sweep reads with one call per shard and page), and a
 * minute of slack for the scheduler's ticks.
 */
export function timerLateBoundMs(profile: Profile, world: TimerWorld): number {
  const stalls = profile.stall > 0 ? 2 * profile.stallMaxLeases * profile.leaseSeconds * 1000 : 0;
  return profile.sweepEveryMs + (world.outage?.forMs ?? 0) + SWEEPER_LEASE_MS + stalls + 60_000;
}

/** Whether a wait's params wait beyond the queue's delay (a far wait). */
export function farWait(params: unknown): boolean {
  const seconds = (params as { seconds?: unknown } | undefined)?.seconds;
  return typeof seconds === "number" && seconds > MAX_DELAY_SECONDS;
}
