/**
 * Virtual time: backoffs, `wait` and `sleep` nodes take no real time, `clock.advance` lets time pass
 * on demand, and time never moves while a handler is doing real work.
 */
import { afterAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { defineTask, RetryableError } from "../../sdk/tasks.js";
import { createTestRuntime } from "../../sdk/testing.js";

/** Fails its first two attempts, then succeeds. */
const flaky = defineTask({
  type: "flaky",
  params: z.object({}).strict().optional(),
  run: ({ context }) => {
    if (context.attempt < 3) throw new RetryableError(`attempt ${context.attempt} failed`);
    return { attempt: context.attempt, at: context.now() };
  },
});

/** Real work: a real 30 ms timer, reading virtual time before and after it. */
const slow = defineTask({
  type: "slow",
  params: z.object({}).strict().optional(),
  run: async ({ context }) => {
    const before = context.now();
    await new Promise((resolve) => setTimeout(resolve, 30));
    return { before, after: context.now() };
  },
});

/** Waits on the engine's clock through its context, as a polling task would. */
const patient = defineTask({
  type: "patient",
  params: z.object({ ms: z.number() }).strict(),
  run: async ({ params, context }) => {
    const before = context.now();
    await context.sleep(params.ms);
    return { waited: context.now() - before };
  },
});

const weft = await createTestRuntime({ tasks: [flaky, slow, patient] });
afterAll(() => weft.close());

describe("virtual time", () => {
  it("retries with backoffs of minutes at once: one by a delayed message, one by the sweeper", async () => {
    const realStart = Date.now();
    const virtualStart = weft.clock.now();
    const run = await weft.run({
      name: "flaky",
      nodes: [
        {
          id: "flaky",
          type: "flaky",
          // 300 s, then 1200 s: beyond SQS's 15-minute delay, so the sweeper sends that retry.
          retry: {
            maxAttempts: 3,
            backoff: { initialSeconds: 300, multiplier: 4, maxSeconds: 3600, jitter: "none" },
          },
        },
      ],
    });
    expect(run.status).toBe("SUCCEEDED");
    expect(run.nodes.flaky).toMatchObject({ status: "COMPLETED", attempt: 3 });
    const retries = run.history.filter((event) => event.type === "NodeRetryScheduled");
    expect(retries).toHaveLength(2);
    const output = run.output?.flaky as { at: number };
    expect(output.at - virtualStart).toBeGreaterThanOrEqual(1500_000);
    expect(weft.clock.now() - virtualStart).toBeGreaterThanOrEqual(1500_000);
    // Loose: only "not 25 minutes".
    expect(Date.now() - realStart).toBeLessThan(10_000);
  });

  it("waits a day in no time", async () => {
    const realStart = Date.now();
    const virtualStart = weft.clock.now();
    const run = await weft.run({
      name: "tomorrow",
      nodes: [
        { id: "wait", type: "wait", params: { seconds: 86_400 } },
        { id: "after", type: "pass", dependsOn: ["wait"], params: { value: "{% $now() %}" } },
      ],
    });
    expect(run.status).toBe("SUCCEEDED");
    expect(run.nodes.wait?.output).toEqual({ waitedSeconds: 86_400 });
    const ranAt = Date.parse(run.output?.after as string);
    expect(ranAt - virtualStart).toBeGreaterThanOrEqual(86_400_000);
    expect(weft.clock.now() - virtualStart).toBeGreaterThanOrEqual(86_400_000);
    expect(Date.now() - realStart).toBeLessThan(10_000);
  });

  it("waits until a time, and for seconds given by expressions, on the virtual clock", async () => {
    const realStart = Date.now();
    const virtualStart = weft.clock.now();
    const until = new Date(virtualStart + 2 * 86_400_000).toISOString();
    const run = await weft.run(
      {
        name: "until-later",
        nodes: [
          { id: "until", type: "wait", params: { until: "{% input.until %}" } },
          { id: "delay", type: "wait", dependsOn: ["until"], params: { seconds: "{% input.delay %}" } },
          { id: "after", type: "pass", dependsOn: ["delay"], params: { value: "{% $now() %}" } },
        ],
      },
      { until, delay: 3600 },
    );
    expect(run.status).toBe("SUCCEEDED");
    expect(run.nodes.until?.output).toEqual({ waitedUntil: until });
    expect(run.nodes.delay?.output).toEqual({ waitedSeconds: 3600 });
    const ranAt = Date.parse(run.output?.after as string);
    expect(ranAt - virtualStart).toBeGreaterThanOrEqual(2 * 86_400_000 + 3_600_000);
    expect(Date.now() - realStart).toBeLessThan(10_000);
  });

  it("runs a sleep node and a handler's context.sleep on the virtual clock", async () => {
    const realStart = Date.now();
    const run = await weft.run({
      name: "naps",
      nodes: [
        { id: "nap", type: "sleep", params: { ms: 120_000 } },
        { id: "poll", type: "patient", params: { ms: 90_000 } },
      ],
    });
    expect(run.status).toBe("SUCCEEDED");
    expect(run.output).toEqual({ nap: { sleptMs: 120_000 }, poll: { waited: 90_000 } });
    expect(Date.now() - realStart).toBeLessThan(10_000);
  });

  it("never moves time while a handler does real work", async () => {
    const run = await weft.run({
      name: "real-work",
      nodes: [
        { id: "slow", type: "slow" },
        // Parked on the virtual clock beside it: time would move for it if nothing else ran.
        { id: "nap", type: "sleep", params: { ms: 60_000 } },
      ],
    });
    expect(run.status).toBe("SUCCEEDED");
    const slowOutput = run.output?.slow as { before: number; after: number };
    expect(slowOutput.after).toBe(slowOutput.before);
  });

  it("times an attempt out on the virtual clock", async () => {
    const run = await weft.run({
      name: "too-slow",
      nodes: [
        { id: "nap", type: "sleep", params: { ms: 120_000 }, timeoutSeconds: 60, retry: { maxAttempts: 1 } },
      ],
    });
    expect(run.status).toBe("FAILED");
    expect(run.nodes.nap?.error).toMatchObject({ name: "TimeoutError" });
  });

  it("lets time pass on demand with clock.advance", async () => {
    const id = await weft.start({
      name: "an-hour",
      nodes: [
        { id: "wait", type: "wait", params: { seconds: 3600 } },
        { id: "after", type: "pass", dependsOn: ["wait"], params: { value: "done" } },
      ],
    });
    const start = weft.clock.now();
    await weft.clock.advance(30 * 60_000);
    expect(weft.clock.now()).toBe(start + 30 * 60_000);
    expect((await weft.execution(id)).status).toBe("RUNNING");
    await weft.clock.advance(31 * 60_000);
    const run = await weft.execution(id);
    expect(run.status).toBe("SUCCEEDED");
    expect(run.output).toEqual({ after: "done" });
  });

  it("fails an execution past its own timeout", async () => {
    const run = await weft.run({
      name: "deadline",
      timeoutSeconds: 600,
      nodes: [{ id: "wait", type: "wait", params: { seconds: 7200 } }],
    });
    expect(run.status).toBe("FAILED");
    expect(run.error).toMatchObject({ name: "ExecutionTimedOut" });
  });
});

describe("alongside a test's fake timers", () => {
  it("still runs: the runtime needs no real timer of the test's", async () => {
    vi.useFakeTimers();
    try {
      const run = await weft.run({
        name: "faked",
        nodes: [{ id: "wait", type: "wait", params: { seconds: 600 } }],
      });
      expect(run.status).toBe("SUCCEEDED");
    } finally {
      vi.useRealTimers();
    }
  });
});
