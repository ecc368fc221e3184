/**
 * How many partitions each execution's nodes span (ExecutionRecord.nodeShards, keys.ts), as the
 * store needs it for every key of a node, a map item or an arrival shard.
 *
 * The count is fixed when the execution is created, so once known it is known for good (like a
 * workflow version): a bounded LRU keeps it per execution, filled from every execution record the
 * store writes or reads, so the engine — which reads an execution before it writes any of its nodes —
 * almost never pays for it. A read of the execution in flight (one made beside a node's read, as an
 * attempt token's check does) is waited for rather than made twice. Else, on a miss, one strongly
 * consistent GetItem of the execution item reads it (projecting `nodeShards`, and the partition key
 * so that an existing item always answers). A missing execution item answers 1 (the keys of before)
 * and is not remembered: an execution created a moment later may have more.
 */
import type { ExecutionRecord } from "../../domain/records.js";
import { ATTR, executionKey } from "./keys.js";
import type { TableIO } from "./table-io.js";

/** Executions remembered at most: a few hundred kilobytes. */
const DEFAULT_CAPACITY = 10_000;

export class NodePartitions {
  /** Insertion order is recency: a hit moves its entry to the end, the first entry goes first. */
  private readonly known = new Map<string, number>();
  /** Reads of execution records under way (getExecution), by execution. */
  private readonly reading = new Map<string, Promise<unknown>>();

  constructor(
    private readonly io: TableIO,
    private readonly capacity = DEFAULT_CAPACITY,
  ) {}

  /** Remembers the count of each record (absent: 1). */
  remember(...records: ReadonlyArray<Pick<ExecutionRecord, "executionId" | "nodeShards"> | undefined>): void {
    for (const record of records) {
      if (record !== undefined) this.put(record.executionId, shardsOf(record.nodeShards));
    }
  }

  /**
   * A read of an execution's record, made known while under way: a lookup of its shards meanwhile
   * waits for it. `read` remembers the record it finds before it settles.
   */
  read<T>(executionId: string, read: Promise<T>): Promise<T> {
    const settled = read.finally(() => {
      if (this.reading.get(executionId) === settled) this.reading.delete(executionId);
    });
    this.reading.set(executionId, settled);
    return settled;
  }

  /** The node shards of an execution: remembered, or read from its item (1 when it has none). */
  async of(executionId: string): Promise<number> {
    const known = this.recall(executionId);
    if (known !== undefined) return known;
    const under = this.reading.get(executionId);
    if (under !== undefined) {
      // Its outcome is not ours to handle (the reader's): only what it remembered counts.
      await under.catch(() => undefined);
      const read = this.recall(executionId);
      if (read !== undefined) return read;
    }
    const item = await this.io.get(executionKey(executionId), [ATTR.pk, "nodeShards"]);
    if (item === undefined) return 1;
    const shards = shardsOf(item.nodeShards);
    this.put(executionId, shards);
    return shards;
  }

  private recall(executionId: string): number | undefined {
    const known = this.known.get(executionId);
    if (known !== undefined) {
      this.known.delete(executionId);
      this.known.set(executionId, known);
    }
    return known;
  }

  private put(executionId: string, shards: number): void {
    this.known.delete(executionId);
    this.known.set(executionId, shards);
    if (this.known.size > this.capacity) {
      const oldest = this.known.keys().next().value;
      if (oldest !== undefined) this.known.delete(oldest);
    }
  }
}

function shardsOf(value: unknown): number {
  const shards = Number(value ?? 1);
  return Number.isSafeInteger(shards) && shards >= 1 ? shards : 1;
}
