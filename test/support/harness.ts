/** Drives the engine by hand in tests: receive task messages, hand them to the engine, inspect history. */
import { z } from "zod";
import type { ExecutionStatus, HistoryEvent } from "../../shared/domain/records.js";
import type { Engine } from "../../shared/engine/engine.js";
import type { QueueConsumer, ReceivedMessage, Store, TaskMessage } from "../../shared/ports.js";
import { defineTask } from "../../shared/tasks/task-type.js";
import { NO_PROGRESS_MS, waitForProgress } from "./progress.js";

/** A task (sent, claimed, not inline like `merge`) whose output is the outputs of the dependencies it was given. */
export const collectTask = defineTask({
  type: "collect",
  params: z.object({}).strict().optional(),
  run: ({ deps }) => ({ ...deps }),
});

/**
 * Receives until `expected` messages arrived, or none arrived for `idleMs` (each arrival restarts that
 * clock: a slow emulator still delivering is waited for). A small `idleMs` asks for a quiet period:
 * `receiveAll(consumer, 2, 300)` when one message is expected checks that no second one comes.
 */
export async function receiveAll(
  consumer: QueueConsumer,
  expected = 1,
  idleMs = 10_000,
): Promise<ReceivedMessage[]> {
  const received: ReceivedMessage[] = [];
  let deadline = Date.now() + idleMs;
  while (received.length < expected && Date.now() < deadline) {
    const batch = await consumer.receive({ maxMessages: 10, waitSeconds: 0, visibilityTimeoutSeconds: 60 });
    received.push(...batch);
    if (batch.length > 0) deadline = Date.now() + idleMs;
    else if (received.length < expected) await new Promise((r) => setTimeout(r, 20));
  }
  return received;
}

export const taskOf = (message: ReceivedMessage): TaskMessage => JSON.parse(message.body) as TaskMessage;

/**
 * Processes messages until the execution reaches a terminal status (like the worker event source).
 * Waits on progress (test/support/progress.ts): gives up only after `idleMs` (NO_PROGRESS_MS) in which
 * no message was handled and the execution's status did not change.
 */
export async function runToEnd(
  engine: Engine,
  consumer: QueueConsumer,
  store: Store,
  executionId: string,
  idleMs = NO_PROGRESS_MS,
): Promise<ExecutionStatus> {
  let handled = 0;
  return waitForProgress(
    `execution ${executionId}`,
    async () => {
      const execution = await store.getExecution(executionId);
      if (execution && ["SUCCEEDED", "FAILED", "CANCELLED"].includes(execution.status))
        return { done: true, value: execution.status };
      const messages = await consumer.receive({
        maxMessages: 10,
        waitSeconds: 0,
        visibilityTimeoutSeconds: 60,
      });
      await Promise.all(
        messages.map(async (message) => {
          await engine.handleTask(taskOf(message), { receiveCount: message.receiveCount });
          await consumer.delete([message.receiptHandle]);
        }),
      );
      handled += messages.length;
      return {
        done: false,
        progress: [execution?.status, handled],
        state: `${execution?.status}, ${handled} messages handled`,
      };
    },
    // After handling messages, look again at once; while the queue is empty, every 20 ms.
    { idleMs, intervalMs: 0, maxIntervalMs: 20 },
  );
}

export function countEvents(history: HistoryEvent[], type: string, nodeId?: string): number {
  return history.filter((e) => e.type === type && (nodeId === undefined || e.nodeId === nodeId)).length;
}

/** `width` entry nodes `p0`, `p1`… of type `pass`, each outputting its index: the parents of a wide join. */
export function passParents(width: number): Array<{ id: string; type: string; params: { value: number } }> {
  return Array.from({ length: width }, (_, i) => ({ id: `p${i}`, type: "pass", params: { value: i } }));
}
