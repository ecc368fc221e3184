/**
 * The IdGenerator port of the test runtime. Execution ids and lease tokens are random UUIDs, as
 * deployed: ids stay unique across runtimes and test files (a task sending its idempotency key to a
 * stub sees distinct keys). Retry jitter draws from a seeded stream instead, so the virtual times a
 * test sees are the same on every run.
 */
import { randomUUID } from "node:crypto";
import { seededRandom } from "../shared/adapters/seeded-random.js";
import type { IdGenerator } from "../shared/ports.js";

/** The default seed of the jitter stream. */
export const DEFAULT_SEED = 0x5eed;

export function testIds(seed: number = DEFAULT_SEED): IdGenerator {
  return {
    executionId: () => randomUUID(),
    token: () => randomUUID(),
    random: seededRandom(seed),
  };
}
