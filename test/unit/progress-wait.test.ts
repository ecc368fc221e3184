/** The tests' progress wait (test/support/progress.ts): patient while things move, not when they stop. */
import { describe, expect, it } from "vitest";
import { NoProgressError, waitForProgress } from "../support/progress.js";

describe("waitForProgress", () => {
  it("keeps waiting past the idle limit while the fingerprint changes, and returns when done", async () => {
    const started = Date.now();
    let looks = 0;
    const value = await waitForProgress(
      "counter",
      async () => {
        looks += 1;
        return Date.now() - started > 300 ? { done: true, value: looks } : { done: false, progress: looks };
      },
      { idleMs: 100, intervalMs: 10 },
    );
    expect(value).toBe(looks);
    expect(Date.now() - started).toBeGreaterThan(300); // three times the idle limit: progress kept it going
  });

  it("gives up after the idle limit with no change, saying what it saw last", async () => {
    let looks = 0;
    const waiting = waitForProgress(
      "stuck execution",
      async () => {
        looks += 1;
        return { done: false, progress: Math.min(looks, 3), state: `look ${Math.min(looks, 3)}` };
      },
      { idleMs: 100, intervalMs: 10, maxIntervalMs: 20 },
    );
    await expect(waiting).rejects.toBeInstanceOf(NoProgressError);
    await expect(waiting).rejects.toThrow(/^stuck execution: no progress for \d+ ms .*last seen: look 3$/);
  });

  it("gives up after maxMs even while moving", async () => {
    let looks = 0;
    await expect(
      waitForProgress("livelock", async () => ({ done: false, progress: ++looks }), {
        idleMs: 1000,
        maxMs: 100,
        intervalMs: 5,
      }),
    ).rejects.toThrow(/^livelock: not done after \d+ ms, still moving/);
  });

  it("passes on what the observation throws", async () => {
    await expect(
      waitForProgress("broken", async () => {
        throw new Error("emulator gone");
      }),
    ).rejects.toThrow("emulator gone");
  });
});
