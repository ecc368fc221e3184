/**
 * One engine per test over a fresh backend: the embedded in-memory adapters, or DynamoDB + SQS +
 * EventBridge on the emulators of this run (its own table, queues and bus, so test files can run in
 * parallel). The emulator kind is the run's (WEFT_TEST_EMULATOR: "moto", "dynamodb-local" or "localstack").
 */
import { randomUUID } from "node:crypto";
import { inject } from "vitest";
import { MemoryBlobStore } from "../../shared/adapters/memory/blobs.js";
import { MemoryEventPublisher } from "../../shared/adapters/memory/events.js";
import { MemoryQueue } from "../../shared/adapters/memory/queue.js";
import { MemoryStore } from "../../shared/adapters/memory/store.js";
import { systemClock } from "../../shared/adapters/system.js";
import type { SweepSettings } from "../../shared/engine/context.js";
import { Engine, type EngineOptions } from "../../shared/engine/engine.js";
import type {
  BlobStore,
  Clock,
  EventPublisher,
  IdGenerator,
  LifecycleEvent,
  QueueConsumer,
  Store,
  TaskQueue,
} from "../../shared/ports.js";
import { createTaskRegistry } from "../../shared/tasks/builtins.js";
import type { TaskType } from "../../shared/tasks/task-type.js";
import type { EmulatorKind } from "../../tools/emulators/set.js";
import { createTestBackend } from "./aws.js";

export type BackendKind = "memory" | EmulatorKind;

/** The emulator set this run started (test/setup/emulators.ts). */
export const EMULATOR: EmulatorKind = inject("awsEmulator");

/** The backends every backend-parametrized test runs on: in-memory and this run's emulators. */
export const BACKEND_KINDS: readonly BackendKind[] = ["memory", EMULATOR];

export interface Backend {
  engine: Engine;
  store: Store;
  blobs: BlobStore;
  queue: TaskQueue;
  consumer: QueueConsumer;
  deadLetterConsumer: QueueConsumer;
  /** Lifecycle events the engine published (recorded on the way to the real bus). */
  events: LifecycleEvent[];
  cleanup(): Promise<void>;
}

export interface BackendOptions {
  leaseSeconds?: number;
  /** EngineOptions.claimAfterSeconds (0: claims written before the handler runs). */
  claimAfterSeconds?: number;
  sweep?: Partial<SweepSettings>;
  tasks?: TaskType<unknown>[];
  /** Decorates the store (fault injection). */
  wrapStore?: (store: Store) => Store;
  /** Receives before SQS moves a message to the dead-letter queue. */
  maxReceiveCount?: number;
  fanIn?: EngineOptions["fanIn"];
  payloads?: EngineOptions["payloads"];
  /** The engine's clock (default the system's); the in-memory queues keep time by it too. */
  clock?: Clock;
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
  const engineOptions: EngineOptions = {
    ...(options.leaseSeconds === undefined ? {} : { leaseSeconds: options.leaseSeconds }),
    ...(options.claimAfterSeconds === undefined ? {} : { claimAfterSeconds: options.claimAfterSeconds }),
    ...(options.sweep === undefined ? {} : { sweep: options.sweep }),
    ...(options.fanIn === undefined ? {} : { fanIn: options.fanIn }),
    ...(options.payloads === undefined ? {} : { payloads: options.payloads }),
  };
  const wrap = options.wrapStore ?? ((store: Store) => store);
  const maxReceiveCount = options.maxReceiveCount ?? 5;
  const clock = options.clock ?? systemClock;
  if (kind === "memory") {
    const store = new MemoryStore();
    const blobs = new MemoryBlobStore();
    const deadLetter = new MemoryQueue({ clock });
    const queue = new MemoryQueue({ clock, maxReceiveCount, deadLetter });
    const events = new MemoryEventPublisher();
    const engine = new Engine({ store: wrap(store), blobs, queue, events, clock, ids }, tasks, engineOptions);
    return {
      engine,
      store,
      blobs,
      queue,
      consumer: queue,
      deadLetterConsumer: deadLetter,
      events: events.events,
      cleanup: async () => {},
    };
  }
  if (kind !== EMULATOR) throw new Error(`this run's emulators are ${EMULATOR}, not ${kind}`);
  const aws = await createTestBackend(inject("awsEndpoints"), { maxReceiveCount });
  const events = new RecordingPublisher(aws.events);
  const ports = {
    store: wrap(aws.store),
    blobs: aws.blobs,
    queue: aws.queue,
    events,
    clock,
    ids,
  };
  return {
    engine: new Engine(ports, tasks, engineOptions),
    store: aws.store,
    blobs: aws.blobs,
    queue: aws.queue,
    consumer: aws.consumer,
    deadLetterConsumer: aws.deadLetterConsumer,
    events: events.events,
    cleanup: aws.cleanup,
  };
}
