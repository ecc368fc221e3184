/**
 * External workers and callbacks through the deployed routes: a worker registers, long-polls the
 * node its pool was offered (the worker function's offer), heartbeats it and completes it; then a
 * callback node waits until its token — read from GET /executions/{id} — settles it. Second
 * settlements are 409, an idle poll 204, and the worker deregisters (DELETE).
 */
import { isDeepStrictEqual } from "node:util";
import type { ApiAnswer } from "../client.js";
import { waitFor } from "../wait.js";
import type { Scenario } from "./context.js";
import { check, expectStatus, nodeOf, register, start, waitForEnd, waitForExecution } from "./helpers.js";

interface PolledTask {
  taskToken: string;
  executionId: string;
  nodeId: string;
  attempt: number;
  input: unknown;
  params: unknown;
  heartbeatSeconds: number;
}

export const workersScenario: Scenario = {
  name: "external worker and callback (register, poll, heartbeat, complete; callback token; DELETE)",
  timeoutMs: 120_000,
  async run(ctx) {
    const pool = ctx.unique("gpu");
    const workerId = ctx.unique("worker");
    const name = ctx.unique("external");
    await register(ctx, {
      name,
      nodes: [
        {
          id: "gpu",
          type: "transcode",
          params: { preset: "fast" },
          runsOn: { pool, executors: ["ffmpeg"] },
          heartbeatSeconds: 5,
        },
        { id: "approve", type: "callback", dependsOn: ["gpu"], params: { timeoutSeconds: 120 } },
        { id: "publish", type: "pass", dependsOn: ["approve"] },
      ],
    });

    const registered = expectStatus(
      await ctx.api.post<{ workerId: string; heartbeatSeconds: number }>("/workers", {
        workerId,
        pool,
        executors: ["ffmpeg"],
        maxParallel: 2,
      }),
      201,
      "POST /workers",
    );
    check(registered.workerId === workerId, `registered as ${registered.workerId}`);
    const listed = expectStatus(
      await ctx.api.get<{ workers: Array<{ workerId: string; status: string }> }>("/workers"),
      200,
      "GET /workers",
    );
    check(
      listed.workers.some((w) => w.workerId === workerId && w.status === "healthy"),
      "GET /workers lists the worker, healthy",
    );

    const executionId = await start(ctx, { workflow: name, input: { file: "a.mov" } });
    // The worker function offers the node to its pool when it gets its task message; the long
    // poll (≤ 10 s a call, well within the 30 s integration timeout) takes it.
    const task = await waitFor(
      "the external node to be offered and taken",
      async () => {
        const answer: ApiAnswer<PolledTask> = await ctx.api.post(`/workers/${workerId}/poll`, {
          waitSeconds: 10,
        });
        if (answer.status === 204) return undefined;
        return expectStatus(answer, 200, "POST /workers/{id}/poll");
      },
      { timeoutMs: 60_000, intervalMs: 0 },
    );
    check(
      task.executionId === executionId && task.nodeId === "gpu" && task.attempt === 1,
      `polled ${task.executionId}/${task.nodeId}#${task.attempt}`,
    );
    check(isDeepStrictEqual(task.params, { preset: "fast" }), `params ${JSON.stringify(task.params)}`);
    check(task.heartbeatSeconds === 5, `heartbeatSeconds ${task.heartbeatSeconds}`);
    const running = nodeOf(
      await waitForExecution(ctx, executionId, (v) => nodeOf(v, "gpu").status === "RUNNING", "gpu RUNNING"),
      "gpu",
    ) as { workerId?: string };
    check(running.workerId === workerId, `gpu runs on ${running.workerId}`);

    const beat = expectStatus(
      await ctx.api.post<{ cancelRequested: boolean }>("/tasks/heartbeat", { taskToken: task.taskToken }),
      200,
      "POST /tasks/heartbeat",
    );
    check(beat.cancelRequested === false, "no cancellation requested");
    const workerBeat = expectStatus(
      await ctx.api.post<{ cancellations: unknown[] }>(`/workers/${workerId}/heartbeat`),
      200,
      "POST /workers/{id}/heartbeat",
    );
    check(workerBeat.cancellations.length === 0, "no task to stop");

    const output = { frames: 1200, file: "a.mp4" };
    expectStatus(
      await ctx.api.post("/tasks/complete", { taskToken: task.taskToken, output }),
      202,
      "POST /tasks/complete",
    );
    expectStatus(
      await ctx.api.post("/tasks/complete", { taskToken: task.taskToken, output }),
      409,
      "a second POST /tasks/complete",
    );
    const idle = await ctx.api.post(`/workers/${workerId}/poll`, { waitSeconds: 1 });
    check(idle.status === 204 && idle.text === "", `an idle poll answered ${idle.status} ${idle.text}`);

    // The callback waits; its token is in its node's view.
    const waiting = await waitForExecution(
      ctx,
      executionId,
      (v) => (nodeOf(v, "approve") as { callbackToken?: string }).callbackToken !== undefined,
      "the callback node to wait with its token",
    );
    const token = (nodeOf(waiting, "approve") as { callbackToken?: string }).callbackToken as string;
    expectStatus(await ctx.api.post("/callbacks/heartbeat", { token }), 202, "POST /callbacks/heartbeat");
    const approval = { approved: true, by: "rehearsal" };
    expectStatus(
      await ctx.api.post("/callbacks/complete", { token, output: approval }),
      202,
      "POST /callbacks/complete",
    );
    expectStatus(
      await ctx.api.post("/callbacks/complete", { token, output: approval }),
      409,
      "a second POST /callbacks/complete",
    );
    expectStatus(
      await ctx.api.post("/callbacks/complete", { token: "not-a-token" }),
      400,
      "a malformed callback token",
    );

    const view = await waitForEnd(ctx, executionId);
    check(view.status === "SUCCEEDED", `ended ${view.status}: ${JSON.stringify(view.error)}`);
    check(isDeepStrictEqual(nodeOf(view, "gpu").output, output), "gpu's output is the worker's");
    check(
      isDeepStrictEqual(nodeOf(view, "approve").output, approval),
      `approve's output ${JSON.stringify(nodeOf(view, "approve").output)}`,
    );

    const gone = expectStatus(
      await ctx.api.request<{ workerId: string; released: number }>("DELETE", `/workers/${workerId}`),
      200,
      "DELETE /workers/{id}",
    );
    check(gone.released === 0, `released ${gone.released}`);
    expectStatus(await ctx.api.request("DELETE", `/workers/${workerId}`), 404, "a second DELETE");
    return "task polled, heartbeaten and completed; callback completed by its token; 409s, 204, DELETE";
  },
};
