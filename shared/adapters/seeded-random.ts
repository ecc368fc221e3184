/**
 * mulberry32: a small seeded generator of uniform numbers in [0, 1), for the places that want chance
 * that replays — the simulation's worlds, the benchmark's random DAG, the test runtime's retry jitter.
 * Not for secrets or ids (those come from randomIds).
 */

/** One step: the next state, and the number it yields. */
export function mulberry32Step(state: number): { state: number; value: number } {
  const next = (state + 0x6d2b79f5) >>> 0;
  let t = next;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return { state: next, value: ((t ^ (t >>> 14)) >>> 0) / 4294967296 };
}

/** A stream of uniform numbers in [0, 1) from `seed`: the same seed, the same stream. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    const step = mulberry32Step(state);
    state = step.state;
    return step.value;
  };
}
