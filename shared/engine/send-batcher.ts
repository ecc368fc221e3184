/**
 * Group commit of task messages within one worker invocation. The records of an SQS batch run at
 * once, so their completions often send children at about the same moment: while a send is in
 * flight, the sends that come meanwhile (with the same delay) wait and go together in the next
 * call — one SendMessageBatch for up to ten messages instead of one per record. The first send
 * never waits, so a lone one costs no latency. Each caller's promise settles with the call that
 * carried its messages: resolved once SQS has them, rejected (its record then comes back) if not.
 *
 * One batcher per invocation, for the reason given in arrival-batcher.ts. No timer is involved.
 */
import type { TaskMessage, TaskQueue } from "../ports.js";

interface Waiting {
  messages: readonly TaskMessage[];
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class SendBatcher implements TaskQueue {
  /** Per delay (seconds): the sends waiting for the call in flight. */
  private readonly lanes = new Map<number, Waiting[]>();

  constructor(private readonly queue: TaskQueue) {}

  send(messages: readonly TaskMessage[], options: { delaySeconds?: number } = {}): Promise<void> {
    if (messages.length === 0) return Promise.resolve();
    const delaySeconds = options.delaySeconds ?? 0;
    return new Promise<void>((resolve, reject) => {
      const waiting: Waiting = { messages, resolve, reject };
      const lane = this.lanes.get(delaySeconds);
      if (lane) {
        lane.push(waiting);
        return;
      }
      const fresh = [waiting];
      this.lanes.set(delaySeconds, fresh);
      void this.drain(delaySeconds, fresh);
    });
  }

  private async drain(delaySeconds: number, lane: Waiting[]): Promise<void> {
    while (lane.length > 0) {
      const batch = lane.splice(0);
      try {
        await this.queue.send(
          batch.flatMap((w) => w.messages),
          delaySeconds > 0 ? { delaySeconds } : undefined,
        );
        for (const w of batch) w.resolve();
      } catch (error) {
        for (const w of batch) w.reject(error);
      }
    }
    this.lanes.delete(delaySeconds);
  }
}
