/**
 * One engine per test over a fresh backend: the embedded in-memory adapters, or DynamoDB + SQS +
 * EventBridge on the emulator (its own table, queues and bus, so test files can run in parallel).
 */
import { randomUUID } from "node:crypto";
import { inject } from "vitest";
import { MemoryEventPublisher } from "../../shared/adapters/memory/events.js";
import { MemoryQueue } from "../../shared/adapters/memory/queue.js";
import { MemoryStore } from "../../shared/adapters/memory/store.js";
import { systemClock } from "../../shared/adapters/system.js";
import { Engine } from "../../shared/engine/engine.js";
import type { EventPublisher, IdGenerator, LifecycleEvent, QueueConsumer, Store, TaskQueue } from "../../shared/ports.js";
import { createTaskRegistry } from "../../shared/tasks/builtins.js";
import type { TaskType } from "../../shared/tasks/task-type.js";
import { createTestBackend } from "./aws.js";

export const BACKEND_KINDS = ["memory", "moto"] as const;
export type BackendKind = (typeof BACKEND_KINDS)[number];

export interface Backend {
  engine: Engine;
  store: Store;
  queue: TaskQueue;
  consumer: QueueConsumer;
  /** Lifecycle events the engine published (recorded on the way to the real bus). */
  events: LifecycleEvent[];
  cleanup(): Promise<void>;
}

export interface BackendOptions {
  leaseSeconds?: number;
  tasks?: TaskType<unknown>[];
}

class RecordingPublisher implements EventPublisher {
  readonly events: LifecycleEvent[] = [];
  constructor(private readonly inner: EventPublisher) {}
  async publish(events: readonly LifecycleEvent[]): Promise<void> {
    this.events.push(...events);
    await this.inner.publish(events);
  }
}

const ids: IdGenerator = { executionId: randomUUID, token: randomUUID, random: Math.random };

export async function createBackend(kind: BackendKind, options: BackendOptions = {}): Promise<Backend> {
  const tasks = createTaskRegistry(options.tasks ?? []);
  const engineOptions = options.leaseSeconds === undefined ? {} : { leaseSeconds: options.leaseSeconds };
  if (kind === "memory") {
    const store = new MemoryStore();
    const queue = new MemoryQueue({ clock: systemClock });
    const events = new MemoryEventPublisher();
    const engine = new Engine({ store, queue, events, clock: systemClock, ids }, tasks, engineOptions);
    return { engine, store, queue, consumer: queue, events: events.events, cleanup: async () => {} };
  }
  const aws = await createTestBackend(inject("awsEndpoint"));
  const events = new RecordingPublisher(aws.events);
  const engine = new Engine({ store: aws.store, queue: aws.queue, events, clock: systemClock, ids }, tasks, engineOptions);
  return { engine, store: aws.store, queue: aws.queue, consumer: aws.consumer, events: events.events, cleanup: aws.cleanup };
}
