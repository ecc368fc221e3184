/**
 * A crash between arming a timer and its firing (issue 26): `npm start` on the emulator (moto) is
 * killed with SIGKILL while a `wait` and a callback's timeout are armed, and a new `npm start` on the
 * same table and queues (with no sweeper: `--sweep-interval 0`) takes over. Each timer fires once,
 * none before its time: the wait's node completes once, the callback fails once with
 * CallbackTimedOut. The timers are task messages delayed in the queue, which a crash does not touch.
 */
import { describe, expect, it } from "vitest";
import type { ExecutionView } from "../../shared/engine/views.js";
import { startNpmStart } from "../support/npm-start.js";
import { PATIENT, waitForProgress } from "../support/progress.js";
import { apiClient, type JsonBody } from "../support/runtime.js";

const WAIT_SECONDS = 8;

describe("timers across a crash (npm start, moto)", PATIENT, () => {
  it("fires a wait and a callback timeout armed before a kill -9 once each, after the restart, none early", async () => {
    const first = await startNpmStart();
    const api = apiClient(first.url);
    for (const definition of [
      {
        name: "later",
        nodes: [
          { id: "nap", type: "wait", params: { seconds: WAIT_SECONDS } },
          { id: "after", type: "pass", dependsOn: ["nap"], params: { value: "woke" } },
        ],
      },
      {
        name: "forgotten",
        nodes: [
          {
            id: "approve",
            type: "callback",
            params: { timeoutSeconds: WAIT_SECONDS },
            retry: { maxAttempts: 1 },
          },
        ],
      },
    ])
      expect([200, 201]).toContain((await api.call("POST", "/workflows", definition)).status);
    const later: string = (await api.call("POST", "/executions", { workflow: "later" })).body.executionId;
    const forgotten: string = (await api.call("POST", "/executions", { workflow: "forgotten" })).body
      .executionId;
    // Both armed: the wait queued for its time, the callback waiting with its token.
    await waitForProgress("both timers to be armed", async () => {
      const nap = nodeOf(await view(api, later), "nap");
      const approve = nodeOf(await view(api, forgotten), "approve");
      const armed = nap?.status === "QUEUED" && approve?.callbackToken !== undefined;
      return armed
        ? { done: true, value: undefined }
        : { done: false, progress: `${nap?.status} ${approve?.status}` };
    });
    const killedAt = Date.now();
    first.child.kill("SIGKILL");
    expect(await first.exited).toBeNull();

    const second = await startNpmStart(first.names);
    const after = apiClient(second.url);
    const waited = await after.waitForEnd(later);
    const timedOut = await after.waitForEnd(forgotten);

    expect(waited.status).toBe("SUCCEEDED");
    expect(nodeOf(waited, "after")?.output).toBe("woke");
    const napEvents = await eventsOf(after, later, "nap");
    expect(napEvents.filter((e) => e.type === "NodeStarted")).toHaveLength(1);
    expect(napEvents.filter((e) => e.type === "NodeCompleted")).toHaveLength(1);
    const queuedAt = Date.parse(napEvents.find((e) => e.type === "NodeQueued")!.at);
    const startedAt = Date.parse(napEvents.find((e) => e.type === "NodeStarted")!.at);
    // Killed between arming and firing (else this test would not test it), and not fired early.
    expect(queuedAt + WAIT_SECONDS * 1000).toBeGreaterThan(killedAt);
    expect(startedAt - queuedAt).toBeGreaterThanOrEqual(WAIT_SECONDS * 1000);

    expect(timedOut.status).toBe("FAILED");
    expect(nodeOf(timedOut, "approve")?.error?.name).toBe("CallbackTimedOut");
    const approveEvents = await eventsOf(after, forgotten, "approve");
    const failures = approveEvents.filter((e) => e.type === "NodeFailed");
    expect(failures).toHaveLength(1);
    const waitingSince = Date.parse(approveEvents.find((e) => e.type === "NodeStarted")!.at);
    expect(waitingSince + WAIT_SECONDS * 1000).toBeGreaterThan(killedAt);
    expect(Date.parse(failures[0]!.at) - waitingSince).toBeGreaterThanOrEqual(WAIT_SECONDS * 1000);
  });
});

async function view(api: ReturnType<typeof apiClient>, executionId: string): Promise<ExecutionView> {
  return (await api.call("GET", `/executions/${executionId}`)).body as ExecutionView;
}

function nodeOf(execution: ExecutionView, nodeId: string) {
  return execution.nodes.find((node) => node.id === nodeId);
}

async function eventsOf(
  api: ReturnType<typeof apiClient>,
  executionId: string,
  nodeId: string,
): Promise<JsonBody[]> {
  const events = (await api.call("GET", `/executions/${executionId}/events?limit=100`)).body
    .events as JsonBody[];
  return events.filter((e) => e.nodeId === nodeId);
}
