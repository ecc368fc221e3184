/**
 * DynamoDB use by partition: every modeled charge of calls.ts (write units, read units) attributed to
 * the partition key it lands on — the table's `pk`, or an index's partition key for its own writes
 * and queries — and each call counted once per partition it touches. The capacity table
 * (capacity-table.ts) groups these by key shape.
 */

/** A partition: the table's (`index` undefined) or a global secondary index's. */
export interface PartitionRef {
  index?: string;
  pk: string;
}

export interface PartitionUse extends PartitionRef {
  /** Calls that touched the partition (a transaction or batch counts once per partition). */
  requests: number;
  /** Modeled write units (table writes on the table's partition, index writes on the index's). */
  writeUnits: number;
  /** Modeled read units: strongly consistent reads in full, eventually consistent ones at half. */
  readUnits: number;
  /** Of the read units, those of strongly consistent reads. */
  strongReadUnits: number;
}

const refKey = (ref: PartitionRef) => `${ref.index ?? ""}|${ref.pk}`;

export class PartitionTally {
  private readonly uses = new Map<string, PartitionUse & { lastCall: number }>();
  private call = 0;

  /** A new DynamoDB call: the partitions it touches from now on count one request each. */
  beginCall(): void {
    this.call += 1;
  }

  charge(ref: PartitionRef, kind: "write" | "read", units: number, consistent = false): void {
    const key = refKey(ref);
    let use = this.uses.get(key);
    if (!use) {
      use = {
        ...(ref.index === undefined ? {} : { index: ref.index }),
        pk: ref.pk,
        requests: 0,
        writeUnits: 0,
        readUnits: 0,
        strongReadUnits: 0,
        lastCall: 0,
      };
      this.uses.set(key, use);
    }
    if (use.lastCall !== this.call) {
      use.lastCall = this.call;
      use.requests += 1;
    }
    if (kind === "write") use.writeUnits += units;
    else {
      use.readUnits += units;
      if (consistent) use.strongReadUnits += units;
    }
  }

  reset(): void {
    this.uses.clear();
  }

  list(): PartitionUse[] {
    return [...this.uses.values()].map(({ lastCall: _, ...use }) => use);
  }
}

/**
 * The shape of a partition key: its prefix up to the first `#` with the rest as `<…>` (named for
 * the shapes weft has), so that every execution's `EX#<id>` is one shape — and a key the store
 * shards (`XW#<workflow>#<n>`, an execution's node shards `EX#<id>#<n>`) stays the same shape with
 * its load spread over more keys.
 */
export function shapeOf(ref: PartitionRef): string {
  const hash = ref.pk.indexOf("#");
  const prefix = hash < 0 ? ref.pk : ref.pk.slice(0, hash + 1);
  const rest = hash < 0 ? "" : (SHAPE_NAMES[prefix] ?? "<…>");
  const shape = `${prefix}${rest}`;
  return ref.index === undefined ? shape : `${ref.index} ${shape}`;
}

const SHAPE_NAMES: Record<string, string> = {
  "EX#": "<id>",
  "WF#": "<name>",
  "XW#": "<workflow>",
  "XA#": "<n>",
  "SW#": "<n>",
  "POOL#": "<pool>",
  "WORKERS#": "<shard>",
  "OFFER#": "<id>",
  "OFFERED#": "<id>",
  "IDEM#": "<workflow>#<key>",
  "LEASE#": "<name>",
  "TM#": "<shard>#<day>",
};
