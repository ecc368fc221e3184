/**
 * Group commit of shard arrivals within one worker invocation. The messages of an SQS batch run at
 * once, so the parents of one wide fan-in often complete together: while a write to a shard is in
 * flight, the arrivals for that shard that come meanwhile wait and go together in the next write
 * (a set add, so one write records them all). The first arrival never waits, so a lone one costs
 * no latency; under load, a shard takes one write per round trip instead of one per parent.
 *
 * One batcher per invocation, never shared between invocations: a Lambda invocation lives and dies
 * as a whole, so no arrival waits on a write that an invocation which may crash separately owns.
 * No timer is involved: batches form only from what is already waiting.
 */
import type { ArrivalShard, ShardArrivalRequest, Store } from "../ports.js";

interface Waiting {
  parentIndexes: readonly number[];
  now: number;
  resolve: (shard: ArrivalShard) => void;
  reject: (error: unknown) => void;
}

interface Lane {
  request: Omit<ShardArrivalRequest, "parentIndexes" | "now">;
  waiting: Waiting[];
}

export class ArrivalBatcher {
  private readonly lanes = new Map<string, Lane>();

  constructor(private readonly store: Pick<Store, "recordShardArrival">) {}

  /** Records the parents in their shard, with whatever else waits for it; the shard after the write. */
  record(request: ShardArrivalRequest): Promise<ArrivalShard> {
    const key = `${request.executionId}\u0000${request.childId}\u0000${request.shard}`;
    return new Promise<ArrivalShard>((resolve, reject) => {
      const waiting: Waiting = { parentIndexes: request.parentIndexes, now: request.now, resolve, reject };
      const lane = this.lanes.get(key);
      if (lane) {
        lane.waiting.push(waiting);
        return;
      }
      const { executionId, childId, shard } = request;
      const fresh: Lane = { request: { executionId, childId, shard }, waiting: [waiting] };
      this.lanes.set(key, fresh);
      void this.drain(key, fresh);
    });
  }

  private async drain(key: string, lane: Lane): Promise<void> {
    while (lane.waiting.length > 0) {
      const batch = lane.waiting.splice(0);
      const parentIndexes = batch.flatMap((w) => w.parentIndexes);
      try {
        const now = Math.max(...batch.map((w) => w.now));
        const { shard } = await this.store.recordShardArrival({ ...lane.request, parentIndexes, now });
        for (const w of batch) w.resolve(shard);
      } catch (error) {
        for (const w of batch) w.reject(error);
      }
    }
    this.lanes.delete(key);
  }
}
