/**
 * The local poller's stop() while an invocation is held open by a long task that only a message sent
 * meanwhile ends: the cancellation of a child execution whose `sleep` node runs sends the `$cleanUp`
 * task that tells the node to stop. A stop() that stopped receiving at once left that message in the
 * queue and waited for the sleep to run to its end (test/e2e/children.test.ts and loops.test.ts on
 * the embedded backend: "Hook timed out in 60000ms"). The poller itself never stalled: these tests
 * also check that it goes on handing over messages while one invocation is held open.
 */
import type { SQSEvent } from "aws-lambda";
import { afterEach, describe, expect, it } from "vitest";
import { type Poller, startPoller } from "../../local/poller.js";
import { MemoryQueue } from "../../shared/adapters/memory/queue.js";
import { systemClock } from "../../shared/adapters/system.js";
import type { TaskMessage } from "../../shared/ports.js";

const message = (nodeId: string): TaskMessage => ({ executionId: "ex-1", nodeId, attempt: 1 });
const nodeIds = (event: SQSEvent): string[] =>
  event.Records.map((record) => (JSON.parse(record.body) as TaskMessage).nodeId);

async function until(condition: () => boolean, timeoutMs = 3000): Promise<void> {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > timeoutMs) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Whether `promise` settled within `ms` (a stop() that hangs fails the test instead of its timeout). */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true as const), late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A fake worker: a `nap` record holds its invocation until a `$cleanUp` record is handled (the
 * running sleep told to stop), or until the test lets it go; `chain` records (when `chaining`)
 * each send another, a workload that never runs dry.
 */
function napWorker(queue: MemoryQueue) {
  const handled: string[] = [];
  let wake: (() => void) | undefined;
  const woken = new Promise<void>((resolve) => {
    wake = resolve;
  });
  const state = {
    handled,
    napping: false,
    chaining: false,
    release: () => wake?.(),
    handler: async (event: SQSEvent) => {
      for (const nodeId of nodeIds(event)) {
        handled.push(nodeId);
        if (nodeId === "nap") {
          state.napping = true;
          await woken;
          state.napping = false;
        } else if (nodeId === "$cleanUp") state.release();
        else if (nodeId === "chain" && state.chaining) await queue.send([message("chain")]);
      }
      return { batchItemFailures: [] };
    },
  };
  return state;
}

let poller: Poller | undefined;
let release: (() => void) | undefined;
afterEach(async () => {
  // Never leave a held invocation behind: its poller's stop() would wait for it.
  release?.();
  await poller?.stop();
  poller = undefined;
  release = undefined;
});

const fast = { waitSeconds: 0, idleDelayMs: 5, batchSize: 1, concurrency: 4 } as const;

describe("local poller: an invocation held open by a long task", () => {
  it("goes on receiving and handing over messages while one invocation is held open", async () => {
    const queue = new MemoryQueue({ clock: systemClock });
    const worker = napWorker(queue);
    release = worker.release;
    poller = startPoller({ consumer: queue, handler: worker.handler, ...fast });
    await queue.send([message("nap")]);
    await until(() => worker.napping);
    await queue.send([message("other")]);
    await until(() => worker.handled.includes("other"));
    expect(worker.napping).toBe(true);
  });

  it("stop() right after a message that ends the held invocation was sent: still handed over, stop() resolves", async () => {
    const queue = new MemoryQueue({ clock: systemClock });
    const worker = napWorker(queue);
    release = worker.release;
    const running = startPoller({ consumer: queue, handler: worker.handler, ...fast });
    poller = running;
    await queue.send([message("nap")]);
    await until(() => worker.napping);
    // Sent and stopped in the same turn, as a cancellation's `$cleanUp` followed by the runtime's stop():
    // the poller has had no receive in between.
    await queue.send([message("$cleanUp")]);
    expect(await settlesWithin(running.stop(), 2000)).toBe(true);
    expect(worker.handled).toEqual(["nap", "$cleanUp"]);
    expect(worker.napping).toBe(false);
    expect(running.inFlight).toBe(0);
    expect(queue.size).toBe(0);
  });

  it("stops receiving once the invocations in flight at stop() have finished, however much work keeps coming", async () => {
    const queue = new MemoryQueue({ clock: systemClock });
    const worker = napWorker(queue);
    release = worker.release;
    const running = startPoller({ consumer: queue, handler: worker.handler, ...fast });
    poller = running;
    worker.chaining = true;
    await queue.send([message("nap"), message("chain")]);
    await until(() => worker.napping && worker.handled.filter((id) => id === "chain").length > 3);
    await queue.send([message("$cleanUp")]);
    expect(await settlesWithin(running.stop(), 2000)).toBe(true);
    expect(worker.handled).toContain("$cleanUp");
    const handledAtStop = worker.handled.length;
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(worker.handled.length).toBe(handledAtStop);
    // The chain's next message stays in the queue for the next run.
    expect(queue.size).toBe(1);
  });
});
