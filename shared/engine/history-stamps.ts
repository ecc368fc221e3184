/**
 * The stamps that order history across items (domain/history.ts). Each event is stamped as it is
 * made, from one sequence per clock: `at` is the time its writer took, raised to the latest stamp
 * when that is later (the time was taken before an await, and other events were stamped since),
 * and `seq` counts the events stamped in that millisecond. So stamps grow in the order events are
 * made, and an event made after its writer saw another event's write — what it caused — is
 * stamped after it, even in the same millisecond.
 *
 * One sequence per clock, not per engine: the engines of one process share its clock (the local
 * runtime, a Lambda container), and the simulation's engines its virtual clock, so none of them
 * can stamp an effect before its cause. Across machines, stamps of different sequences are ordered
 * by their clocks (docs/guarantees.md, "Where the guarantees stop").
 */
import type { Clock } from "../ports.js";

export interface Stamp {
  at: number;
  seq?: number;
}

export class HistoryStamps {
  private at = Number.NEGATIVE_INFINITY;
  private seq = 0;

  /** The stamp of an event made now, at `at` (the time its writer took). */
  stamp(at: number): Stamp {
    if (at > this.at) {
      this.at = at;
      this.seq = 0;
      return { at };
    }
    this.seq++;
    return { at: this.at, seq: this.seq };
  }
}

const sequences = new WeakMap<Clock, HistoryStamps>();

/** The sequence of everything stamped with `clock`'s time. */
export function historyStampsOf(clock: Clock): HistoryStamps {
  let stamps = sequences.get(clock);
  if (!stamps) {
    stamps = new HistoryStamps();
    sequences.set(clock, stamps);
  }
  return stamps;
}
