/** Drives the engine by hand in tests: receive task messages, hand them to the engine, inspect history. */
import { z } from "zod";
import type { ExecutionStatus, HistoryEvent } from "../../shared/domain/records.js";
import type { Engine } from "../../shared/engine/engine.js";
import type { QueueConsumer, ReceivedMessage, Store, TaskMessage } from "../../shared/ports.js";
import { defineTask } from "../../shared/tasks/task-type.js";

/** A task (sent, claimed, not inline like `merge`) whose output is the outputs of the dependencies it was given. */
export const collectTask = defineTask({
  type: "collect",
  params: z.object({}).strict().optional(),
  run: ({ deps }) => ({ ...deps }),
});

export async function receiveAll(
  consumer: QueueConsumer,
  expected = 1,
  timeoutMs = 5000,
): Promise<ReceivedMessage[]> {
  const received: ReceivedMessage[] = [];
  const deadline = Date.now() + timeoutMs;
  while (received.length < expected && Date.now() < deadline) {
    received.push(
      ...(await consumer.receive({ maxMessages: 10, waitSeconds: 0, visibilityTimeoutSeconds: 60 })),
    );
    if (received.length < expected) await new Promise((r) => setTimeout(r, 20));
  }
  return received;
}

export const taskOf = (message: ReceivedMessage): TaskMessage => JSON.parse(message.body) as TaskMessage;

/** Processes messages until the execution reaches a terminal status (like the worker event source). */
export async function runToEnd(
  engine: Engine,
  consumer: QueueConsumer,
  store: Store,
  executionId: string,
  timeoutMs = 20_000,
): Promise<ExecutionStatus> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const execution = await store.getExecution(executionId);
    if (execution && ["SUCCEEDED", "FAILED", "CANCELLED"].includes(execution.status)) return execution.status;
    if (Date.now() > deadline)
      throw new Error(`execution ${executionId} still ${execution?.status} after ${timeoutMs} ms`);
    const messages = await consumer.receive({
      maxMessages: 10,
      waitSeconds: 0,
      visibilityTimeoutSeconds: 60,
    });
    if (messages.length === 0) await new Promise((r) => setTimeout(r, 20));
    await Promise.all(
      messages.map(async (message) => {
        await engine.handleTask(taskOf(message), { receiveCount: message.receiveCount });
        await consumer.delete([message.receiptHandle]);
      }),
    );
  }
}

export function countEvents(history: HistoryEvent[], type: string, nodeId?: string): number {
  return history.filter((e) => e.type === type && (nodeId === undefined || e.nodeId === nodeId)).length;
}

/** `width` entry nodes `p0`, `p1`… of type `pass`, each outputting its index: the parents of a wide join. */
export function passParents(width: number): Array<{ id: string; type: string; params: { value: number } }> {
  return Array.from({ length: width }, (_, i) => ({ id: `p${i}`, type: "pass", params: { value: i } }));
}
