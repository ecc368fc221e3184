/** The IdGenerator port from a seeded stream: readable, unique, and the same on every replay. */
import type { IdGenerator } from "../shared/ports.js";
import type { Rng } from "./prng.js";

export class SimIds implements IdGenerator {
  private executions = 0;
  private tokens = 0;

  constructor(private readonly rng: Rng) {}

  executionId(): string {
    return `ex${++this.executions}`;
  }

  token(): string {
    return `tk${++this.tokens}-${(this.rng.seed32() >>> 0).toString(36)}`;
  }

  random(): number {
    return this.rng.next();
  }
}
