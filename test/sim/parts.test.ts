/** The simulation's own parts: the fake clock's timers, the scheduler's determinism, SimQueue's SQS semantics. */
import { describe, expect, it } from "vitest";
import { FakeClock } from "../../sim/clock.js";
import { Rng } from "../../sim/prng.js";
import { Scheduler } from "../../sim/scheduler.js";
import { SimQueue } from "../../sim/sim-queue.js";
import { Trace } from "../../sim/trace.js";

const calmFaults = { crash: 0, stall: 0, stallMs: () => 0, tick: 0, tickMs: () => 0 };

function world(seed = 1) {
  const trace = new Trace(1000, true);
  const scheduler = new Scheduler(new Rng(seed), calmFaults, trace);
  return { scheduler, clock: new FakeClock(scheduler), trace };
}

const idle = { actions: () => [], nextTime: () => undefined, finished: () => false };

describe("simulation parts", () => {
  it("Rng is a pure function of its seed", () => {
    const a = new Rng(99);
    const b = new Rng(99);
    const draws = Array.from({ length: 5 }, () => a.next());
    expect(Array.from({ length: 5 }, () => b.next())).toEqual(draws);
    expect(new Rng(100).next()).not.toBe(draws[0]);
    expect(a.fork("x").next()).toBe(b.fork("x").next());
  });

  it("virtual timers fire in time order, advancing virtual time only when nothing else can run", async () => {
    const { scheduler, clock } = world();
    const fired: Array<[string, number]> = [];
    const start = clock.now();
    scheduler.spawn("api", "a", async () => {
      await clock.sleep(5_000);
      fired.push(["a", clock.now() - start]);
    });
    scheduler.spawn("api", "b", async () => {
      await clock.sleep(1_000);
      fired.push(["b", clock.now() - start]);
      await clock.sleep(10_000);
      fired.push(["b2", clock.now() - start]);
    });
    expect(await scheduler.run(idle, { maxSteps: 100, maxTime: 60_000 })).toBe("idle");
    expect(fired).toEqual([
      ["b", 1_000],
      ["a", 5_000],
      ["b2", 11_000],
    ]);
  });

  it("a sleep rejects with an AbortError when its signal fires", async () => {
    const { scheduler, clock } = world();
    const controller = new AbortController();
    let outcome = "";
    scheduler.spawn("worker", "sleeper", async () => {
      await clock.sleep(60_000, controller.signal).then(
        () => {
          outcome = "slept";
        },
        (error: Error) => {
          outcome = `${error.name} at ${scheduler.now}`;
        },
      );
    });
    scheduler.spawn("worker", "aborter", async () => {
      await clock.sleep(2_000);
      controller.abort();
    });
    await scheduler.run(idle, { maxSteps: 100, maxTime: 120_000 });
    expect(outcome).toBe("AbortError at 2000");
  });

  it("a crashed process never runs again", async () => {
    const trace = new Trace(100, true);
    const scheduler = new Scheduler(
      new Rng(1),
      { crash: 1, stall: 0, stallMs: () => 0, tick: 0, tickMs: () => 0 },
      trace,
    );
    const clock = new FakeClock(scheduler);
    let after = false;
    scheduler.spawn("worker", "doomed", async () => {
      await clock.sleep(10);
      after = true;
    });
    await scheduler.run(idle, { maxSteps: 10, maxTime: 1_000 });
    expect(after).toBe(false);
    expect(scheduler.stats.crashes).toBe(1);
    expect(scheduler.hasPendingWork()).toBe(false);
  });

  it("a stalled process pauses in virtual time, then resumes", async () => {
    const trace = new Trace(100, true);
    const faults = {
      crash: 0,
      stall: 1,
      stallMs: () => {
        faults.stall = 0; // stall once
        return 30_000;
      },
      tick: 0,
      tickMs: () => 0,
    };
    const scheduler = new Scheduler(new Rng(3), faults, trace);
    const clock = new FakeClock(scheduler);
    const seen: number[] = [];
    scheduler.spawn("worker", "zombie", async () => {
      await clock.sleep(1_000);
      seen.push(scheduler.now);
    });
    await scheduler.run(idle, { maxSteps: 20, maxTime: 120_000 });
    expect(scheduler.stats.stalls).toBe(1);
    expect(seen).toEqual([31_000]); // its timer was due at 1 s; it ran once the 30 s stall was over
  });

  it("SimQueue: delay, visibility timeout, redelivery, receipt handles and the DLQ after maxReceiveCount", () => {
    let now = 0;
    const options = {
      visibilityMs: 30_000,
      duplicateSend: 0,
      duplicateReceive: 0,
      extraDelay: 0,
      extraDelayMaxMs: 1,
    };
    const dlq = new SimQueue(() => now, new Rng(1), { ...options, name: "d" });
    const queue = new SimQueue(() => now, new Rng(1), {
      ...options,
      name: "m",
      maxReceiveCount: 2,
      deadLetter: dlq,
    });
    void queue.send([{ executionId: "e", nodeId: "n", attempt: 1 }], { delaySeconds: 5 });
    expect(queue.visible()).toEqual([]);
    expect(queue.nextVisibleAt()).toBe(5_000);
    now = 5_000;
    const [message] = queue.visible();
    const first = queue.receive(message!.id);
    if (!first || first === "deadLettered") throw new Error("expected a receive");
    expect(queue.visible()).toEqual([]);
    now = 35_000; // visibility expired: delivered again
    const second = queue.receive(message!.id);
    if (!second || second === "deadLettered") throw new Error("expected a receive");
    expect(second.message.receiveCount).toBe(2);
    expect(queue.delete(first.receipt)).toBe(false); // an old receipt no longer deletes
    now = 65_000;
    expect(queue.receive(message!.id)).toBe("deadLettered");
    expect(queue.size).toBe(0);
    expect(dlq.visible().map((m) => m.body)).toEqual([{ executionId: "e", nodeId: "n", attempt: 1 }]);
  });
});
