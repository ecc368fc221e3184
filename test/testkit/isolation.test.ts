/** Two test runtimes in one process share nothing: workflows, executions, clocks. */
import { afterAll, expect, it } from "vitest";
import { createTestRuntime } from "../../sdk/testing.js";

const first = await createTestRuntime({ startAt: Date.UTC(2030, 0, 1) });
const second = await createTestRuntime({ startAt: Date.UTC(2030, 0, 1) });
afterAll(() => Promise.all([first.close(), second.close()]));

it("keeps two runtimes apart, even running at once", async () => {
  // One name, different content in each: each has its own version 1.
  const slow = {
    name: "job",
    nodes: [
      { id: "wait", type: "wait", params: { seconds: 86_400 } },
      { id: "done", type: "pass", dependsOn: ["wait"], params: { value: "slow" } },
    ],
  };
  const quick = { name: "job", nodes: [{ id: "done", type: "pass", params: { value: "quick" } }] };
  const [a, b] = await Promise.all([first.run(slow), second.run(quick)]);
  expect(a).toMatchObject({ status: "SUCCEEDED", version: 1, output: { done: "slow" } });
  expect(b).toMatchObject({ status: "SUCCEEDED", version: 1, output: { done: "quick" } });

  // Each clock moved for its own work only.
  expect(first.clock.now() - Date.UTC(2030, 0, 1)).toBeGreaterThanOrEqual(86_400_000);
  expect(second.clock.now()).toBe(Date.UTC(2030, 0, 1));

  // An execution of one is unknown to the other.
  await expect(second.execution(a.executionId)).rejects.toThrow(/does not exist/);
  expect(first.events.some((e) => e.detail.executionId === b.executionId)).toBe(false);
});

it("runs executions of one runtime side by side", async () => {
  const waits = [3600, 60, 600].map((seconds) => ({
    name: `wait-${seconds}`,
    nodes: [{ id: "wait", type: "wait", params: { seconds } }],
  }));
  const runs = await Promise.all(waits.map((workflow) => first.run(workflow)));
  expect(runs.map((run) => run.status)).toEqual(["SUCCEEDED", "SUCCEEDED", "SUCCEEDED"]);
  expect(runs.map((run) => run.output)).toEqual(
    [3600, 60, 600].map((seconds) => ({ wait: { waitedSeconds: seconds } })),
  );
});

it("closes with a handler parked on the virtual clock, and refuses to run afterwards", async () => {
  const weft = await createTestRuntime();
  const id = await weft.start({ name: "nap", nodes: [{ id: "nap", type: "sleep", params: { ms: 60_000 } }] });
  await weft.clock.advance(10_000); // the nap has started and sleeps on
  expect((await weft.execution(id)).nodes.nap?.status).toBe("RUNNING");
  const closing = Date.now();
  await weft.close();
  expect(Date.now() - closing).toBeLessThan(1000);
  await weft.close(); // idempotent
  await expect(weft.runToEnd(id)).rejects.toThrow(/closed/);
});
