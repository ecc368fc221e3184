/**
 * A concurrency slot's holder killed with SIGKILL (issue 29): `npm start` on the emulator (moto) runs
 * a node under a limit of 1 while a second execution's node waits for the slot; the process is
 * killed, and a new `npm start` on the same table and queues, with a sweeper, takes over. The dead
 * holder's attempt is taken back once its lease passed (it has no retries left: it fails), its slot
 * goes to the waiter, which runs and succeeds — no sooner than the lease, and never beside it.
 */
import { describe, expect, it } from "vitest";
import { startNpmStart } from "../support/npm-start.js";
import { PATIENT, waitForProgress } from "../support/progress.js";
import { apiClient, type JsonBody, nodeOf } from "../support/runtime.js";

const LEASE_SECONDS = 5;
/** Short sweeps, so the dead attempt is taken back soon after its lease. */
const SETTINGS = {
  WEFT_LEASE_SECONDS: String(LEASE_SECONDS),
  WEFT_SWEEP_FIRST_CHECK_SECONDS: "2",
  WEFT_SWEEP_IDLE_SECONDS: "2",
  WEFT_SWEEP_GRACE_SECONDS: "2",
};

describe("a slot's holder killed with SIGKILL (npm start, moto)", PATIENT, () => {
  it("gives the slot to the waiter once the holder's lease passed, never before", async () => {
    const first = await startNpmStart(undefined, { env: SETTINGS });
    const api = apiClient(first.url);
    await api.register({
      name: "one-at-a-time",
      nodes: [
        {
          id: "work",
          type: "sleep",
          params: { ms: "{% input.ms %}" },
          retry: { maxAttempts: 1 },
          concurrency: { key: "the-one-resource", limit: 1 },
        },
      ],
    });
    // The holder sleeps far longer than the test; the waiter briefly.
    const holder = await api.start("one-at-a-time", { ms: 600_000 });
    await waitForProgress("the holder to run", async () => {
      const work = nodeOf((await api.call("GET", `/executions/${holder}`)).body, "work");
      return work?.status === "RUNNING" ? { done: true, value: undefined } : { done: false, progress: work };
    });
    const waiter = await api.start("one-at-a-time", { ms: 100 });
    const waiting: JsonBody = await waitForProgress("the second to wait for the slot", async () => {
      const work = nodeOf((await api.call("GET", `/executions/${waiter}`)).body, "work");
      return work?.waitingFor ? { done: true, value: work } : { done: false, progress: work };
    });
    expect(waiting.waitingFor).toEqual({ reason: "concurrency", key: "the-one-resource" });

    const killedAt = Date.now();
    first.child.kill("SIGKILL");
    expect(await first.exited).toBeNull();
    const second = await startNpmStart(first.names, { sweepIntervalSeconds: 1, env: SETTINGS });
    const after = apiClient(second.url);

    const ran = await after.waitForEnd(waiter);
    expect(ran.status).toBe("SUCCEEDED");
    const dead = await after.waitForEnd(holder);
    expect(dead.status).toBe("FAILED");
    const holderWork = nodeOf(dead, "work");
    expect(holderWork.error.name).toBe("LeaseExpired");
    // The waiter ran only once the dead holder's lease had passed, and after its attempt was taken back.
    const waiterWork = nodeOf(ran, "work");
    expect(Date.parse(waiterWork.startedAt)).toBeGreaterThanOrEqual(killedAt);
    expect(Date.parse(waiterWork.startedAt)).toBeGreaterThanOrEqual(Date.parse(holderWork.finishedAt));
    expect(Date.parse(waiterWork.startedAt) - Date.parse(holderWork.startedAt)).toBeGreaterThanOrEqual(
      LEASE_SECONDS * 1000,
    );
  });
});
