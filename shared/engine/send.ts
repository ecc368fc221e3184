/**
 * Sending task messages that may have to wait. SQS delays a message by at most 15 minutes; a node
 * due later is not sent now: it becomes a durable timer (timers.ts), which the sweep sends once it
 * is within reach. So a long `wait` or backoff costs no compute while it waits.
 */
import { MAX_DELAY_SECONDS, timerSortKey } from "../domain/timers.js";
import { executionTrace } from "../domain/trace.js";
import type { TaskMessage } from "../ports.js";
import type { EngineContext } from "./context.js";
import { armTimers, pendingTimers } from "./timers.js";

export interface OutgoingTask {
  message: TaskMessage;
  /** Epoch ms before which the task must not run. */
  notBefore?: number;
}

/**
 * A task message for a node of `execution`, carrying its trace context (domain/trace.ts), so the
 * worker that receives it knows the trace before it reads anything.
 */
export function taskMessage(
  execution: { executionId: string; trace?: string },
  nodeId: string,
  attempt: number,
  deps?: readonly number[],
): TaskMessage {
  return {
    executionId: execution.executionId,
    nodeId,
    attempt,
    ...(deps ? { deps: [...deps] } : {}),
    trace: executionTrace(execution).traceparent,
  };
}

/**
 * Sends again tasks that may not have been sent (a look of the sweeper at nodes queued for later,
 * whose writer may have died before arming them). A durable timer already stored that no sweep has
 * reached yet is left alone: the sweep that reaches it sends it. Reading it costs a read unit where
 * putting it again (a conditional put that changes nothing) costs a write unit.
 */
export async function rearmTasks(ctx: EngineContext, tasks: readonly OutgoingTask[]): Promise<void> {
  const now = ctx.clock.now();
  const far = tasks.filter((task) => (task.notBefore ?? now) - now > MAX_DELAY_SECONDS * 1000);
  if (far.length === 0) return sendTasks(ctx, tasks);
  const pending = await pendingTimers(
    ctx,
    far.map((task) => ({ message: task.message, dueAt: task.notBefore! })),
  );
  await sendTasks(
    ctx,
    tasks.filter(
      (task) =>
        !far.includes(task) || !pending.has(timerSortKey({ message: task.message, dueAt: task.notBefore! })),
    ),
  );
}

export async function sendTasks(ctx: EngineContext, tasks: readonly OutgoingTask[]): Promise<void> {
  if (tasks.length === 0) return;
  const now = ctx.clock.now();
  const byDelay = new Map<number, TaskMessage[]>();
  const later: OutgoingTask[] = [];
  for (const task of tasks) {
    const waitMs = (task.notBefore ?? now) - now;
    if (waitMs > MAX_DELAY_SECONDS * 1000) {
      later.push(task);
      continue;
    }
    const delaySeconds = Math.max(0, Math.ceil(waitMs / 1000));
    byDelay.set(delaySeconds, [...(byDelay.get(delaySeconds) ?? []), task.message]);
  }
  await Promise.all(
    [...byDelay].map(([delaySeconds, messages]) =>
      ctx.queue.send(messages, delaySeconds > 0 ? { delaySeconds } : undefined),
    ),
  );
  await armTimers(
    ctx,
    later.map((task) => ({ message: task.message, dueAt: task.notBefore! })),
  );
}
