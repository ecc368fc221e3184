/**
 * A small seeded PRNG (mulberry32): the only source of chance in a simulated world, so a run is a
 * pure function of its seed. `fork` derives an independent stream (for ids, faults, the DAG) so that
 * drawing one more number in one place does not shift every other decision.
 */
import { mulberry32Step } from "../shared/adapters/seeded-random.js";

export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    const step = mulberry32Step(this.state);
    this.state = step.state;
    return step.value;
  }

  /** Uniform integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(p: number): boolean {
    return p > 0 && this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error("Rng.pick of an empty list");
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** A 32-bit integer: a seed for a derived stream or for fast-check. */
  seed32(): number {
    return Math.floor(this.next() * 4294967296) | 0;
  }

  /** An independent stream, derived from this seed and a label. */
  fork(label: string): Rng {
    let h = this.state ^ 0x9e3779b9;
    for (let i = 0; i < label.length; i++) h = Math.imul(h ^ label.charCodeAt(i), 0x01000193);
    return new Rng(h >>> 0);
  }
}
