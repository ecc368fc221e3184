/**
 * A run's settings and fault rates, drawn from its seed. Rates vary from run to run (some runs are
 * calm, some brutal) so a campaign explores both the common paths and the rare interleavings.
 */
import type { Rng } from "./prng.js";

export interface Profile {
  /** Executions started (1–4) over how many distinct workflows (1–2). */
  executions: number;
  workflows: number;
  /** Engine instances ("Lambda containers"), each with its own graph cache and sweeper identity. */
  engines: number;
  /** Concurrent worker invocations at most. */
  workers: number;
  leaseSeconds: number;
  visibilitySeconds: number;
  maxReceiveCount: number;
  sweep: { firstCheckMs: number; idleMs: number; graceMs: number };
  sweepEveryMs: number;
  /** Extra sweeps at random moments (some forced past the sweeper lease, some two at once). */
  extraSweeps: number;
  doubleSweep: number;
  forceSweep: number;
  /** Chance that an execution is created with start: false and triggered later. */
  twoStep: number;
  /** Chance that a client cancels an execution, at a random moment. */
  cancel: number;

  crash: number;
  stall: number;
  /** A stall lasts between one lease and this many leases. */
  stallMaxLeases: number;
  tick: number;
  tickMaxMs: number;
  portErrorBefore: number;
  portErrorAfter: number;
  duplicateSend: number;
  duplicateReceive: number;
  extraDelay: number;
  extraDelayMaxMs: number;
  /**
   * The engine's fan-in widths, drawn small so that the simulation's small DAGs exercise every way
   * a fan-in is decided (read, arrivals, sharded arrivals) and not only the defaults.
   */
  fanIn: { readMaxParents: number; shardSize: number };
  /** Messages a worker invocation takes at once (Lambda's SQS batch). */
  batchSize: number;
  /** Chance that an operator redrives an execution's dead letters (once it has some), at a random moment. */
  redrive: number;
  /** Chance that an eventually consistent read returns an item's version before its latest write. */
  staleReads: number;
  /**
   * The engine's payload sizes (EngineOptions.payloads), drawn small so that the simulation's small
   * values exercise every stored form: inline text, blobs, and merges of references (`parts`),
   * some of them too wide to keep on the item and written whole.
   */
  payloads: { inlineBytes: number; maxPartsBytes: number };
  /**
   * Clients reusing idempotency keys: the chance that an execution's create is sent once more at
   * about the same time (the same request, racing the first), and that, once it exists, a create
   * with its key but another input or start flag is sent (to be refused: IdempotencyKeyConflict).
   */
  duplicateCreate: number;
  conflictingCreate: number;
}

/**
 * The api function's timeout in a world: Lambda kills an api invocation then (29 s deployed, under
 * the engine's 120 s grace and first check). The engine relies on it: a check it arms before an api
 * write comes once that api process is surely gone, so what it finds is final (engine/checks.ts).
 */
export function apiTimeoutMs(profile: Pick<Profile, "sweep">): number {
  return Math.min(profile.sweep.graceMs, profile.sweep.firstCheckMs) - 1_000;
}

export function drawProfile(
  rng: Rng,
  fanInRng: Rng,
  operatorRng: Rng,
  replicaRng: Rng,
  payloadRng: Rng,
  clientRng: Rng,
): Profile {
  const fanIn = {
    readMaxParents: fanInRng.pick([0, 1, 2, 4, 4]),
    shardSize: fanInRng.pick([1, 2, 3, 100]),
  };
  const faults = drawFaults(rng);
  // Batches only with two workers or more: one worker taking batches through the heaviest stalls
  // and crashes drains too slowly for the run's four virtual hours (a world too slow, not a bug).
  const batchSize = faults.workers >= 2 ? fanInRng.pick([1, 1, 2, 3]) : 1;
  return {
    ...faults,
    fanIn,
    batchSize,
    redrive: operatorRng.pick([0, 0.5, 1]),
    staleReads: replicaRng.pick([0, 0.2, 0.6]),
    payloads: {
      // 1 byte: nearly every value a blob; 4096: the default, where only the large values are.
      inlineBytes: payloadRng.pick([1, 16, 64, 4096]),
      // 512 bytes holds about three blob references: wider merges are written whole.
      maxPartsBytes: payloadRng.pick([512, 64 * 1024, 64 * 1024]),
    },
    duplicateCreate: clientRng.pick([0, 0.3, 1]),
    conflictingCreate: clientRng.pick([0, 0.3, 1]),
  };
}

type DrawnFaults = Omit<
  Profile,
  "fanIn" | "batchSize" | "redrive" | "staleReads" | "payloads" | "duplicateCreate" | "conflictingCreate"
>;

function drawFaults(rng: Rng): DrawnFaults {
  const level = rng.pick([0, 1, 1, 2, 2, 3]); // 0 = calm
  const rate = (low: number, high: number) => (level === 0 ? 0 : rng.pick([0, low, high, high * level]));
  const leaseSeconds = rng.pick([5, 10, 30]);
  const drawn = draw(rng, rate, leaseSeconds);
  // One run in six hunts zombies: frequent long stalls, eager sweeps, early redelivery.
  if (rng.chance(1 / 6))
    return {
      ...drawn,
      stall: rng.pick([0.02, 0.05]),
      stallMaxLeases: 8,
      sweepEveryMs: rng.pick([5_000, 10_000]),
      visibilitySeconds: rng.pick([leaseSeconds / 2, leaseSeconds]),
    };
  return drawn;
}

function draw(rng: Rng, rate: (low: number, high: number) => number, leaseSeconds: number): DrawnFaults {
  return {
    executions: rng.int(1, 4),
    workflows: rng.int(1, 2),
    engines: rng.int(1, 3),
    workers: rng.int(1, 6),
    leaseSeconds,
    visibilitySeconds: rng.pick([leaseSeconds / 2, leaseSeconds * 2, leaseSeconds * 6]),
    maxReceiveCount: 5,
    sweep: { firstCheckMs: rng.pick([5_000, 20_000]), idleMs: 30_000, graceMs: rng.pick([3_000, 20_000]) },
    sweepEveryMs: rng.pick([10_000, 60_000]),
    extraSweeps: rng.int(0, 4),
    doubleSweep: rng.pick([0, 0.3]),
    forceSweep: rng.pick([0, 0.3]),
    twoStep: rng.pick([0, 0.3]),
    cancel: rng.pick([0, 0.2, 0.5]),
    crash: rate(0.003, 0.01),
    stall: rate(0.002, 0.006),
    stallMaxLeases: rng.pick([2, 6]),
    tick: rng.pick([0, 0.02, 0.1]),
    tickMaxMs: rng.pick([200, 2_000]),
    portErrorBefore: rate(0.002, 0.006),
    portErrorAfter: rate(0.002, 0.006),
    duplicateSend: rate(0.05, 0.15),
    duplicateReceive: rate(0.05, 0.15),
    extraDelay: rate(0.1, 0.3),
    extraDelayMaxMs: 5_000,
  };
}

/** A profile with every fault off (for the replay and reference tests). */
export function calm(profile: Profile): Profile {
  return {
    ...profile,
    crash: 0,
    stall: 0,
    portErrorBefore: 0,
    portErrorAfter: 0,
    duplicateSend: 0,
    duplicateReceive: 0,
    extraDelay: 0,
    cancel: 0,
    redrive: 0,
    staleReads: 0,
    duplicateCreate: 0,
    conflictingCreate: 0,
  };
}

/** A profile that makes zombies likely: long, frequent stalls, eager sweeps, early redelivery, no crashes. */
export function zombieHunt(profile: Profile): Profile {
  return {
    ...profile,
    crash: 0,
    stall: 0.05,
    stallMaxLeases: 8,
    workers: 6,
    sweepEveryMs: 5_000,
    visibilitySeconds: profile.leaseSeconds / 2,
  };
}
