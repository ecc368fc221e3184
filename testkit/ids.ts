/**
 * The IdGenerator port of the test runtime. Execution ids and lease tokens are random UUIDs, as
 * deployed: ids stay unique across runtimes and test files (a task sending its idempotency key to a
 * stub sees distinct keys). Retry jitter draws from a seeded stream instead, so the virtual times a
 * test sees are the same on every run.
 */
import { randomUUID } from "node:crypto";
import type { IdGenerator } from "../shared/ports.js";

/** The default seed of the jitter stream. */
export const DEFAULT_SEED = 0x5eed;

export function testIds(seed: number = DEFAULT_SEED): IdGenerator {
  return {
    executionId: () => randomUUID(),
    token: () => randomUUID(),
    random: mulberry32(seed),
  };
}

/** A small seeded generator of uniform numbers in [0, 1) (mulberry32); plenty for jitter. */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
