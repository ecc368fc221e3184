/**
 * The external-worker and callback routes on the real engine with in-memory ports: a task through
 * register → poll → heartbeat → complete, a callback settled with the token GET /executions/{id}
 * shows, status codes (201, 200, 202, 204), and the error contract — 400 naming what is wrong,
 * 404 for a worker not registered, 409 for a stale token, never a 500.
 */
import fc from "fast-check";
import { beforeEach, describe, expect, it } from "vitest";
import { encodeAttemptToken } from "../../shared/domain/attempt-token.js";
import { PLACEMENT_LIMITS } from "../../shared/domain/placement.js";
import type { ExternalTask } from "../../shared/engine/external.js";
import type { ExecutionView } from "../../shared/engine/views.js";
import { API_ROUTES, type RouteName } from "../../shared/http/contract.js";
import { taskOf } from "../support/harness.js";
import { jsonValue } from "../support/json-arbitrary.js";
import { type ApiFixture, apiEvent, createApiFixture, detailPaths, expectErrorAnswer } from "./helpers.js";

let api: ApiFixture;
beforeEach(async () => {
  api = createApiFixture();
  for (const definition of [TRANSCODE, APPROVAL]) {
    expect((await api.call({ method: "POST", path: "/workflows", body: definition })).status).toBe(201);
  }
});

const TRANSCODE = {
  name: "transcode",
  nodes: [
    { id: "gpu", type: "transcode", runsOn: { pool: "gpu" }, heartbeatSeconds: 5 },
    { id: "after", type: "noop", dependsOn: ["gpu"] },
  ],
};

const APPROVAL = {
  name: "approval",
  nodes: [
    { id: "approve", type: "callback", params: { timeoutSeconds: 60 } },
    { id: "after", type: "noop", dependsOn: ["approve"] },
  ],
};

/** Hands the engine every task message waiting, as the worker function would. */
async function deliver(): Promise<number> {
  let handled = 0;
  for (;;) {
    const batch = await api.queue.receive({ maxMessages: 10, waitSeconds: 0, visibilityTimeoutSeconds: 30 });
    if (batch.length === 0) return handled;
    for (const message of batch) {
      await api.engine.handleTask(taskOf(message), { receiveCount: message.receiveCount });
      await api.queue.delete([message.receiptHandle]);
      handled++;
    }
  }
}

/** Delivers messages until the execution stops moving; answers its view. */
async function settle(executionId: string): Promise<ExecutionView> {
  while ((await deliver()) > 0) {
    // keep going: each batch may send the next
  }
  return describeExecution(executionId);
}

async function describeExecution(executionId: string): Promise<ExecutionView> {
  const answer = await api.call({ method: "GET", path: `/executions/${executionId}` });
  expect(answer.status).toBe(200);
  return answer.body as ExecutionView;
}

async function start(workflow: string): Promise<string> {
  const answer = await api.call({ method: "POST", path: "/executions", body: { workflow } });
  expect(answer.status).toBe(202);
  return (answer.body as { executionId: string }).executionId;
}

async function registerWorker(body: Record<string, unknown> = { pool: "gpu" }) {
  const answer = await api.call({ method: "POST", path: "/workers", body });
  expect(answer.status).toBe(201);
  return answer.body as { workerId: string; heartbeatSeconds: number };
}

/** An external node offered to its pool, taken by `workerId` through the API. */
async function takeTask(workerId: string): Promise<ExternalTask> {
  const executionId = await start("transcode");
  await deliver();
  const answer = await api.call({
    method: "POST",
    path: `/workers/${workerId}/poll`,
    body: { waitSeconds: 0 },
  });
  expect(answer.status).toBe(200);
  const task = answer.body as ExternalTask;
  expect(task).toMatchObject({
    executionId,
    nodeId: "gpu",
    attempt: 1,
    type: "transcode",
    heartbeatSeconds: 5,
  });
  return task;
}

/** A callback node waiting, and the token its view shows. */
async function waitingCallback(): Promise<{ executionId: string; token: string }> {
  const executionId = await start("approval");
  const view = await settle(executionId);
  const node = view.nodes.find((n) => n.id === "approve");
  expect(node?.status).toBe("RUNNING");
  expect(typeof node?.callbackToken).toBe("string");
  return { executionId, token: node?.callbackToken as string };
}

const nodeStatus = (view: ExecutionView, id: string) => view.nodes.find((n) => n.id === id)?.status;

describe("POST /workers, GET /workers, DELETE /workers/{id}", () => {
  it("registers a worker (201, an id given or made), lists it, and deregisters it (200, then 404)", async () => {
    const named = await registerWorker({
      workerId: "gpu-1",
      pool: "gpu",
      executors: ["ffmpeg"],
      capabilities: { gpu: "nvidia" },
      labels: ["big"],
      maxParallel: 2,
    });
    expect(named).toEqual({ workerId: "gpu-1", heartbeatSeconds: expect.any(Number) });
    const made = await registerWorker({ pool: "cpu" });
    expect(made.workerId).toMatch(/^[A-Za-z0-9]/);
    expect(made.workerId).not.toBe("gpu-1");

    const listed = await api.call({ method: "GET", path: "/workers" });
    expect(listed.status).toBe(200);
    const { workers } = listed.body as { workers: Array<Record<string, unknown>> };
    expect(workers.map((w) => w.workerId).sort()).toEqual(["gpu-1", made.workerId].sort());
    expect(workers.find((w) => w.workerId === "gpu-1")).toMatchObject({
      pool: "gpu",
      status: "healthy",
      executors: ["ffmpeg"],
      capabilities: { gpu: "nvidia" },
      labels: ["big"],
      maxParallel: 2,
      tasks: [],
    });

    const gone = await api.call({ method: "DELETE", path: "/workers/gpu-1" });
    expect(gone.status).toBe(200);
    expect(gone.body).toEqual({ workerId: "gpu-1", released: 0 });
    expectErrorAnswer(await api.call({ method: "DELETE", path: "/workers/gpu-1" }), 404, "NotFound");
    const after = (await api.call({ method: "GET", path: "/workers" })).body as { workers: unknown[] };
    expect(after.workers).toHaveLength(1);
  });

  it("registers again under the same id (201), keeping one worker", async () => {
    await registerWorker({ workerId: "w1", pool: "gpu" });
    await registerWorker({ workerId: "w1", pool: "gpu", maxParallel: 4 });
    const { workers } = (await api.call({ method: "GET", path: "/workers" })).body as {
      workers: Array<{ workerId: string; maxParallel: number }>;
    };
    expect(workers).toEqual([expect.objectContaining({ workerId: "w1", maxParallel: 4 })]);
  });

  it("refuses a missing body, unknown fields, bad names and out-of-range numbers, naming each", async () => {
    expectErrorAnswer(await api.call({ method: "POST", path: "/workers" }), 400, "InvalidJson");
    expectErrorAnswer(
      await api.call({ method: "POST", path: "/workers", rawBody: "{pool:" }),
      400,
      "InvalidJson",
    );
    expectErrorAnswer(await api.call({ method: "POST", path: "/workers", body: [] }), 400, "InvalidRequest");
    const error = expectErrorAnswer(
      await api.call({
        method: "POST",
        path: "/workers",
        body: {
          workerId: "has space",
          pool: "-x",
          executors: ["ok", "-bad"],
          capabilities: { gpu: 1 },
          labels: "big",
          maxParallel: 0,
          color: "red",
        },
      }),
      400,
      "InvalidRequest",
    );
    expect(detailPaths(error)).toEqual(
      ["capabilities.gpu", "color", "executors.1", "labels", "maxParallel", "pool", "workerId"].sort(),
    );
    expect(error.details.find((d) => d.path === "color")?.message).toBe('unknown field "color"');
    const noPool = expectErrorAnswer(
      await api.call({ method: "POST", path: "/workers", body: { workerId: "w" } }),
      400,
      "InvalidRequest",
    );
    expect(detailPaths(noPool)).toEqual(["pool"]);
    expect((await api.call({ method: "GET", path: "/workers" })).body).toEqual({ workers: [] });
  });

  it("refuses a worker id no worker can have in the path (400 at path.id), and a body on DELETE", async () => {
    const long = "w".repeat(65);
    for (const [method, path] of [
      ["DELETE", `/workers/${long}`],
      ["POST", `/workers/${long}/heartbeat`],
      ["POST", `/workers/${long}/poll`],
      ["POST", "/workers/bad%20id/poll"],
      ["DELETE", "/workers/.dot"],
    ] as const) {
      const error = expectErrorAnswer(await api.call({ method, path }), 400, "InvalidRequest");
      expect(detailPaths(error), `${method} ${path}`).toEqual(["path.id"]);
    }
    await registerWorker({ workerId: "w1", pool: "gpu" });
    const error = expectErrorAnswer(
      await api.call({ method: "DELETE", path: "/workers/w1", body: { force: true } }),
      400,
      "InvalidRequest",
    );
    expect(detailPaths(error)).toEqual(["force"]);
    expect((await api.call({ method: "DELETE", path: "/workers/w1", body: {} })).status).toBe(200);
  });

  it("answers 405 with the methods a worker path has, DELETE among them", async () => {
    const answer = await api.call({ method: "GET", path: "/workers/w1" });
    expectErrorAnswer(answer, 405, "MethodNotAllowed");
    expect(answer.headers.allow).toBe("DELETE");
    const listing = await api.call({ method: "DELETE", path: "/workers" });
    expectErrorAnswer(listing, 405, "MethodNotAllowed");
    expect(listing.headers.allow).toBe("GET, POST");
  });
});

describe("the worker registry, bounded", () => {
  /** Writes a registration as the store keeps it, heard from last at `heartbeatAt`. */
  async function silence(workerId: string, heartbeatAt: number): Promise<void> {
    const record = (await api.ports.store.getWorker(workerId))!;
    const { holds: _holds, version: _version, ...fields } = record;
    const put = await api.ports.store.putWorker({ ...fields, heartbeatAt }, 0);
    expect(put.ok).toBe(true);
  }

  it("pages GET /workers (limit, next), every worker once; 400 for a bad cursor or limit", async () => {
    const ids = Array.from({ length: 120 }, (_, i) => `w-${String(i).padStart(3, "0")}`);
    for (const workerId of ids) await registerWorker({ workerId, pool: "gpu" });
    const seen: string[] = [];
    const sizes: number[] = [];
    let next: string | undefined;
    do {
      const query = next === undefined ? "" : `&next=${encodeURIComponent(next)}`;
      const page = await api.call({ method: "GET", path: `/workers?limit=50${query}` });
      expect(page.status).toBe(200);
      const body = page.body as { workers: Array<{ workerId: string }>; next?: string };
      sizes.push(body.workers.length);
      seen.push(...body.workers.map((w) => w.workerId));
      next = body.next;
    } while (next !== undefined);
    expect(sizes).toEqual([50, 50, 20]);
    expect(seen).toEqual(ids);
    // Without a limit: the default page.
    const first = (await api.call({ method: "GET", path: "/workers" })).body as {
      workers: unknown[];
      next?: string;
    };
    expect(first.workers).toHaveLength(PLACEMENT_LIMITS.defaultWorkersPerPage);
    expect(first.next).toEqual(expect.any(String));
    const badCursor = expectErrorAnswer(
      await api.call({ method: "GET", path: "/workers?next=nope" }),
      400,
      "InvalidCursor",
    );
    expect(badCursor.details.map((d) => d.path)).toEqual(["query.next"]);
    const badLimit = expectErrorAnswer(
      await api.call({ method: "GET", path: `/workers?limit=${PLACEMENT_LIMITS.maxWorkersPerPage + 1}` }),
      400,
      "InvalidRequest",
    );
    expect(badLimit.details.map((d) => d.path)).toEqual(["query.limit"]);
  });

  it("lists a worker's held tasks up to a bound, with their count", async () => {
    const { workerId } = await registerWorker({ workerId: "busy", pool: "gpu", maxParallel: 1000 });
    const held = PLACEMENT_LIMITS.maxTasksPerWorkerView + 10;
    for (let i = 0; i < held; i++) await start("transcode");
    await deliver();
    for (let i = 0; i < held; i++) {
      const polled = await api.call({
        method: "POST",
        path: `/workers/${workerId}/poll`,
        body: { waitSeconds: 0 },
      });
      expect(polled.status).toBe(200);
    }
    const view = (await api.call({ method: "GET", path: "/workers" })).body as {
      workers: Array<{ tasks: unknown[]; taskCount: number }>;
    };
    expect(view.workers[0]!.tasks).toHaveLength(PLACEMENT_LIMITS.maxTasksPerWorkerView);
    expect(view.workers[0]!.taskCount).toBe(held);
  });

  it("answers 409 WorkerIdTaken when a live worker's id registers with another pool or placement, changing nothing", async () => {
    await registerWorker({ workerId: "w-1", pool: "gpu", labels: ["eu"] });
    for (const other of [
      { pool: "cpu" },
      { pool: "gpu", labels: ["us"] },
      { pool: "gpu", executors: ["ffmpeg"] },
    ]) {
      const error = expectErrorAnswer(
        await api.call({ method: "POST", path: "/workers", body: { workerId: "w-1", ...other } }),
        409,
        "WorkerIdTaken",
      );
      expect(error.message).toContain('worker "w-1"');
      expect(error.message).toContain('pool "gpu"');
    }
    expect(await api.ports.store.getWorker("w-1")).toMatchObject({ pool: "gpu", labels: ["eu"], version: 1 });
    // The same placement again (another maxParallel, labels in another order) is the same worker.
    await registerWorker({ workerId: "w-1", pool: "gpu", labels: ["eu"], maxParallel: 3 });
    // Dead (silent for more than its dead-after beats): another placement may have the id.
    await silence("w-1", Date.now() - (PLACEMENT_LIMITS.deadAfterBeats + 1) * 30_000);
    await registerWorker({ workerId: "w-1", pool: "cpu" });
    expect(await api.ports.store.getWorker("w-1")).toMatchObject({ pool: "cpu" });
  });

  it("never lists a registration past its retention", async () => {
    await registerWorker({ workerId: "old", pool: "gpu" });
    await registerWorker({ workerId: "new", pool: "gpu" });
    await silence("old", Date.now() - PLACEMENT_LIMITS.workerRetentionSeconds * 1000 - 1000);
    const { workers } = (await api.call({ method: "GET", path: "/workers" })).body as {
      workers: Array<{ workerId: string }>;
    };
    expect(workers.map((w) => w.workerId)).toEqual(["new"]);
  });

  it("answers 409 TooManyWorkers past the live workers a pool takes; a dead one frees its place", async () => {
    const max = PLACEMENT_LIMITS.maxWorkersPerPool;
    for (let i = 0; i < max; i++)
      await api.engine.registerWorker({
        workerId: `p-${i}`,
        pool: "full",
        executors: [],
        capabilities: {},
        labels: [],
        maxParallel: 1,
      });
    const error = expectErrorAnswer(
      await api.call({ method: "POST", path: "/workers", body: { workerId: "one-more", pool: "full" } }),
      409,
      "TooManyWorkers",
    );
    expect(error.message).toContain(`pool "full" has ${max} live workers; a pool takes at most ${max}`);
    expect(await api.ports.store.getWorker("one-more")).toBeUndefined();
    // Other pools are not affected, and a worker already in the pool registers again.
    await registerWorker({ workerId: "elsewhere", pool: "other-pool" });
    await registerWorker({ workerId: "p-0", pool: "full" });
    await silence("p-1", Date.now() - (PLACEMENT_LIMITS.deadAfterBeats + 1) * 30_000);
    await registerWorker({ workerId: "one-more", pool: "full" });
    // p-1 comes back from the dead: its place was taken meanwhile, so it joins like a new worker.
    expectErrorAnswer(
      await api.call({ method: "POST", path: "/workers", body: { workerId: "p-1", pool: "full" } }),
      409,
      "TooManyWorkers",
    );
  });

  it("never leaves a pool over its bound when registrations race for its last places", async () => {
    const max = PLACEMENT_LIMITS.maxWorkersPerPool;
    for (let i = 0; i < max - 3; i++)
      await api.engine.registerWorker({
        workerId: `r-${i}`,
        pool: "race",
        executors: [],
        capabilities: {},
        labels: [],
        maxParallel: 1,
      });
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        api.call({ method: "POST", path: "/workers", body: { workerId: `racer-${i}`, pool: "race" } }),
      ),
    );
    for (const answer of answers) expect([201, 409]).toContain(answer.status);
    const admitted = answers.filter((a) => a.status === 201).length;
    expect(admitted).toBeLessThanOrEqual(3);
    const members = (await api.ports.store.listWorkers()).filter((w) => w.pool === "race");
    expect(members.length).toBe(max - 3 + admitted);
    expect(members.length).toBeLessThanOrEqual(max);
  });
});

describe("POST /workers/{id}/heartbeat", () => {
  it("answers 200 with no cancellations for a healthy worker, 404 for one not registered", async () => {
    const { workerId } = await registerWorker();
    const answer = await api.call({ method: "POST", path: `/workers/${workerId}/heartbeat` });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ cancellations: [] });
    expect(
      (await api.call({ method: "POST", path: `/workers/${workerId}/heartbeat`, body: {} })).status,
    ).toBe(200);
    expectErrorAnswer(await api.call({ method: "POST", path: "/workers/nobody/heartbeat" }), 404, "NotFound");
    const extra = expectErrorAnswer(
      await api.call({ method: "POST", path: `/workers/${workerId}/heartbeat`, body: { tasks: [] } }),
      400,
      "InvalidRequest",
    );
    expect(detailPaths(extra)).toEqual(["tasks"]);
  });

  it("tells the worker to stop a task whose execution was cancelled", async () => {
    const { workerId } = await registerWorker();
    const task = await takeTask(workerId);
    expect(
      (await api.call({ method: "POST", path: `/executions/${task.executionId}/cancel`, body: {} })).status,
    ).toBe(202);
    const answer = await api.call({ method: "POST", path: `/workers/${workerId}/heartbeat` });
    expect(answer.status).toBe(200);
    const { cancellations } = answer.body as { cancellations: Array<Record<string, unknown>> };
    expect(cancellations).toEqual([
      expect.objectContaining({ taskToken: task.taskToken, executionId: task.executionId, nodeId: "gpu" }),
    ]);
    const beat = await api.call({
      method: "POST",
      path: "/tasks/heartbeat",
      body: { taskToken: task.taskToken },
    });
    expect(beat.status).toBe(200);
    expect(beat.body).toEqual({ cancelRequested: true });
    const failed = await api.call({
      method: "POST",
      path: "/tasks/fail",
      body: { taskToken: task.taskToken, error: { name: "Stopped", message: "told to stop" } },
    });
    expect(failed.status).toBe(202);
    const view = await settle(task.executionId);
    expect(view.status).toBe("CANCELLED");
    expect(nodeStatus(view, "gpu")).toBe("CANCELLED");
  });
});

describe("an external task through the API", () => {
  it("register → poll (200) → heartbeat (200) → complete (202); a second complete is 409", async () => {
    const { workerId } = await registerWorker({ workerId: "gpu-1", pool: "gpu" });
    const task = await takeTask(workerId);
    expect(task.idempotencyKey).toEqual(expect.any(String));
    expect(task.taskToken.length).toBeGreaterThan(0);

    const running = await describeExecution(task.executionId);
    expect(running.nodes.find((n) => n.id === "gpu")).toMatchObject({ status: "RUNNING", workerId: "gpu-1" });
    const { workers } = (await api.call({ method: "GET", path: "/workers" })).body as {
      workers: Array<{ tasks: Array<{ executionId: string; nodeId: string }> }>;
    };
    expect(workers[0]?.tasks).toEqual([
      expect.objectContaining({ executionId: task.executionId, nodeId: "gpu", attempt: 1 }),
    ]);

    const beat = await api.call({
      method: "POST",
      path: "/tasks/heartbeat",
      body: { taskToken: task.taskToken },
    });
    expect(beat.status).toBe(200);
    expect(beat.body).toEqual({ cancelRequested: false });

    // Exact JSON: -0 and 1e400 (what JSON.parse makes Infinity) come back as sent.
    const done = await api.call({
      method: "POST",
      path: "/tasks/complete",
      rawBody: `{"taskToken":${JSON.stringify(task.taskToken)},"output":{"frames":1200,"ratio":-0,"big":1e400}}`,
    });
    expect(done.status).toBe(202);
    expect(done.body).toEqual({ accepted: true });

    const again = await api.call({
      method: "POST",
      path: "/tasks/complete",
      body: { taskToken: task.taskToken, output: { frames: 1 } },
    });
    expectErrorAnswer(again, 409, "Conflict");
    expectErrorAnswer(
      await api.call({ method: "POST", path: "/tasks/heartbeat", body: { taskToken: task.taskToken } }),
      409,
      "Conflict",
    );
    expectErrorAnswer(
      await api.call({ method: "POST", path: "/tasks/fail", body: { taskToken: task.taskToken, error: {} } }),
      409,
      "Conflict",
    );

    const view = await settle(task.executionId);
    expect(view.status).toBe("SUCCEEDED");
    expect(view.nodes.find((n) => n.id === "gpu")?.output).toEqual({
      frames: 1200,
      ratio: -0,
      big: Number.POSITIVE_INFINITY,
    });
    const after = (await api.call({ method: "GET", path: "/workers" })).body as {
      workers: Array<{ tasks: unknown[] }>;
    };
    expect(after.workers[0]?.tasks).toEqual([]);
  });

  it("completes with no output as null", async () => {
    const { workerId } = await registerWorker();
    const task = await takeTask(workerId);
    const done = await api.call({
      method: "POST",
      path: "/tasks/complete",
      body: { taskToken: task.taskToken },
    });
    expect(done.status).toBe(202);
    const view = await settle(task.executionId);
    expect(view.status).toBe("SUCCEEDED");
    expect(view.nodes.find((n) => n.id === "gpu")?.output).toBeNull();
  });

  it("fails a task for good (retryable false): the execution FAILED with the reported error", async () => {
    const { workerId } = await registerWorker();
    const task = await takeTask(workerId);
    const failed = await api.call({
      method: "POST",
      path: "/tasks/fail",
      body: {
        taskToken: task.taskToken,
        error: { name: "CorruptInput", message: "the file is not a video", retryable: false },
      },
    });
    expect(failed.status).toBe(202);
    expect(failed.body).toEqual({ accepted: true });
    const view = await settle(task.executionId);
    expect(view.status).toBe("FAILED");
    expect(view.nodes.find((n) => n.id === "gpu")?.error).toMatchObject({
      name: "CorruptInput",
      message: "the file is not a video",
    });
  });

  it("answers 204 without a body when no task comes within the wait, and 404 for a worker not registered", async () => {
    const { workerId } = await registerWorker();
    for (const body of [{ waitSeconds: 0 }, undefined]) {
      const answer =
        body === undefined
          ? await api.call({
              method: "POST",
              path: `/workers/${workerId}/poll`,
              rawBody: '{"waitSeconds":0}',
            })
          : await api.call({ method: "POST", path: `/workers/${workerId}/poll`, body });
      expect(answer.status).toBe(204);
      expect(answer.raw.body).toBeUndefined();
      expect(answer.headers["content-type"]).toBeUndefined();
    }
    const waited = Date.now();
    const answer = await api.call({
      method: "POST",
      path: `/workers/${workerId}/poll`,
      body: { waitSeconds: 1 },
    });
    expect(answer.status).toBe(204);
    expect(Date.now() - waited).toBeGreaterThanOrEqual(900);
    expectErrorAnswer(
      await api.call({ method: "POST", path: "/workers/nobody/poll", body: { waitSeconds: 0 } }),
      404,
      "NotFound",
    );
  });

  it("stops a long poll when the caller goes away (its signal aborted)", async () => {
    const { workerId } = await registerWorker();
    const controller = new AbortController();
    const began = Date.now();
    setTimeout(() => controller.abort(), 100);
    const raw = await api.handler(
      apiEvent({ method: "POST", path: `/workers/${workerId}/poll`, body: { waitSeconds: 20 } }),
      { signal: controller.signal },
    );
    expect(raw.statusCode).toBe(204);
    expect(Date.now() - began).toBeLessThan(5000);
  });

  it("a long poll takes a task offered while it waits", async () => {
    const { workerId } = await registerWorker();
    const polling = api.call({
      method: "POST",
      path: `/workers/${workerId}/poll`,
      body: { waitSeconds: 10 },
    });
    const executionId = await start("transcode");
    await deliver();
    const answer = await polling;
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ executionId, nodeId: "gpu" });
  });

  it("refuses poll bodies with unknown fields or a wait out of 0–20 s", async () => {
    const { workerId } = await registerWorker();
    for (const [body, path] of [
      [{ waitSeconds: 21 }, "waitSeconds"],
      [{ waitSeconds: -1 }, "waitSeconds"],
      [{ waitSeconds: 1.5 }, "waitSeconds"],
      [{ waitSeconds: "5" }, "waitSeconds"],
      [{ wait: 5 }, "wait"],
    ] as const) {
      const error = expectErrorAnswer(
        await api.call({ method: "POST", path: `/workers/${workerId}/poll`, body }),
        400,
        "InvalidRequest",
      );
      expect(detailPaths(error), JSON.stringify(body)).toEqual([path]);
    }
    expectErrorAnswer(
      await api.call({ method: "POST", path: `/workers/${workerId}/poll`, rawBody: "{" }),
      400,
      "InvalidJson",
    );
  });

  it("refuses malformed task tokens (400 naming taskToken) and forged ones (409), changing nothing", async () => {
    const { workerId } = await registerWorker();
    const task = await takeTask(workerId);
    for (const path of ["/tasks/heartbeat", "/tasks/complete", "/tasks/fail"]) {
      const extra = path === "/tasks/fail" ? { error: { name: "E", message: "m" } } : {};
      for (const taskToken of ["nope", "wt1.", "wt1.!!!", `wt1.${Buffer.from("{}").toString("base64url")}`]) {
        const error = expectErrorAnswer(
          await api.call({ method: "POST", path, body: { taskToken, ...extra } }),
          400,
          "InvalidRequest",
        );
        expect(detailPaths(error), `${path} ${taskToken}`).toEqual(["taskToken"]);
        // Never the token in the answer.
        if (taskToken.length > 4) expect(JSON.stringify(error)).not.toContain(taskToken);
      }
      for (const [body, paths] of [
        [{ ...extra }, ["taskToken"]],
        [{ taskToken: "", ...extra }, ["taskToken"]],
        [{ taskToken: "x".repeat(2049), ...extra }, ["taskToken"]],
        [{ taskToken: 7, ...extra }, ["taskToken"]],
        [{ taskToken: task.taskToken, ...extra, extra: 1 }, ["extra"]],
      ] as const) {
        const error = expectErrorAnswer(
          await api.call({ method: "POST", path, body }),
          400,
          "InvalidRequest",
        );
        expect(detailPaths(error), `${path} ${JSON.stringify(body).slice(0, 80)}`).toEqual([...paths]);
      }
      expectErrorAnswer(await api.call({ method: "POST", path }), 400, "InvalidJson");
      const forged = encodeAttemptToken({
        executionId: task.executionId,
        nodeId: "gpu",
        attempt: 1,
        leaseToken: "guessed",
      });
      expectErrorAnswer(
        await api.call({ method: "POST", path, body: { taskToken: forged, ...extra } }),
        409,
        "Conflict",
      );
      const nowhere = encodeAttemptToken({
        executionId: "no-such",
        nodeId: "gpu",
        attempt: 1,
        leaseToken: "x",
      });
      expectErrorAnswer(
        await api.call({ method: "POST", path, body: { taskToken: nowhere, ...extra } }),
        409,
        "Conflict",
      );
    }
    const badErrors = expectErrorAnswer(
      await api.call({
        method: "POST",
        path: "/tasks/fail",
        body: { taskToken: task.taskToken, error: { name: "", message: 5, retryable: "no", stack: "…" } },
      }),
      400,
      "InvalidRequest",
    );
    expect(detailPaths(badErrors)).toEqual(["error.message", "error.name", "error.retryable", "error.stack"]);
    expectErrorAnswer(
      await api.call({ method: "POST", path: "/tasks/fail", body: { taskToken: task.taskToken } }),
      400,
      "InvalidRequest",
    );
    // The task is still the worker's.
    const beat = await api.call({
      method: "POST",
      path: "/tasks/heartbeat",
      body: { taskToken: task.taskToken },
    });
    expect(beat.body).toEqual({ cancelRequested: false });
  });

  it("answers 400 for a body nested deeper than a value may be, and keeps the task", async () => {
    const { workerId } = await registerWorker();
    const task = await takeTask(workerId);
    const deep = `${"[".repeat(600)}${"]".repeat(600)}`;
    const answer = await api.call({
      method: "POST",
      path: "/tasks/complete",
      rawBody: `{"taskToken":${JSON.stringify(task.taskToken)},"output":${deep}}`,
    });
    expectErrorAnswer(answer, 400, "PayloadTooDeep");
    const beat = await api.call({
      method: "POST",
      path: "/tasks/heartbeat",
      body: { taskToken: task.taskToken },
    });
    expect(beat.status).toBe(200);
  });

  it("deregistering a worker gives up the task it holds (released 1), retried by policy", async () => {
    const { workerId } = await registerWorker();
    const task = await takeTask(workerId);
    const gone = await api.call({ method: "DELETE", path: `/workers/${workerId}` });
    expect(gone.status).toBe(200);
    expect(gone.body).toEqual({ workerId, released: 1 });
    expectErrorAnswer(
      await api.call({ method: "POST", path: "/tasks/complete", body: { taskToken: task.taskToken } }),
      409,
      "Conflict",
    );
  });
});

describe("callbacks through the API", () => {
  it("completes a waiting callback with the token GET /executions/{id} shows (202); a second is 409", async () => {
    const { executionId, token } = await waitingCallback();
    const beat = await api.call({ method: "POST", path: "/callbacks/heartbeat", body: { token } });
    expect(beat.status).toBe(202);
    expect(beat.body).toEqual({ accepted: true });
    const done = await api.call({
      method: "POST",
      path: "/callbacks/complete",
      body: { token, output: { approved: true, by: "ana" } },
    });
    expect(done.status).toBe(202);
    expect(done.body).toEqual({ accepted: true });
    expectErrorAnswer(
      await api.call({ method: "POST", path: "/callbacks/complete", body: { token, output: 1 } }),
      409,
      "Conflict",
    );
    expectErrorAnswer(
      await api.call({ method: "POST", path: "/callbacks/heartbeat", body: { token } }),
      409,
      "Conflict",
    );
    const view = await settle(executionId);
    expect(view.status).toBe("SUCCEEDED");
    const node = view.nodes.find((n) => n.id === "approve");
    expect(node?.output).toEqual({ approved: true, by: "ana" });
    expect(node?.callbackToken).toBeUndefined();
  });

  it("fails a callback (202): for good unless retryable", async () => {
    const { executionId, token } = await waitingCallback();
    const failed = await api.call({
      method: "POST",
      path: "/callbacks/fail",
      body: { token, error: { name: "Rejected", message: "not approved" } },
    });
    expect(failed.status).toBe(202);
    expectErrorAnswer(
      await api.call({ method: "POST", path: "/callbacks/fail", body: { token, error: {} } }),
      409,
      "Conflict",
    );
    const view = await settle(executionId);
    expect(view.status).toBe("FAILED");
    expect(view.nodes.find((n) => n.id === "approve")?.error).toMatchObject({
      name: "Rejected",
      message: "not approved",
    });
  });

  it("refuses malformed callback tokens (400 naming token) and a task's token (409)", async () => {
    const { token } = await waitingCallback();
    for (const path of ["/callbacks/heartbeat", "/callbacks/complete", "/callbacks/fail"]) {
      const extra = path === "/callbacks/fail" ? { error: { name: "E" } } : {};
      for (const body of [
        { token: "abc", ...extra },
        { token: "wt1.e30", ...extra },
        { token: "", ...extra },
        { ...extra },
        { token: 1, ...extra },
      ]) {
        const error = expectErrorAnswer(
          await api.call({ method: "POST", path, body }),
          400,
          "InvalidRequest",
        );
        expect(detailPaths(error), `${path} ${JSON.stringify(body)}`).toEqual(["token"]);
      }
      const error = expectErrorAnswer(
        await api.call({ method: "POST", path, body: { token, taskToken: token, ...extra } }),
        400,
        "InvalidRequest",
      );
      expect(detailPaths(error)).toEqual(["taskToken"]);
    }
    // A task's token is no callback's.
    const { workerId } = await registerWorker();
    const task = await takeTask(workerId);
    const wrong = expectErrorAnswer(
      await api.call({ method: "POST", path: "/callbacks/complete", body: { token: task.taskToken } }),
      409,
      "WrongTokenKind",
    );
    expect(wrong.message).toContain("this is a task token");
    expect(wrong.message).toContain("POST /tasks/complete");
    // The callback still waits.
    expect((await api.call({ method: "POST", path: "/callbacks/heartbeat", body: { token } })).status).toBe(
      202,
    );
  });
});

describe("tokens of the right kind", () => {
  it("answers 409 WrongTokenKind naming the kind for a callback's token on /tasks/* and a task's on /callbacks/*, changing nothing", async () => {
    const { executionId, token } = await waitingCallback();
    const { workerId } = await registerWorker();
    const task = await takeTask(workerId);
    const before = [await describeExecution(executionId), await describeExecution(task.executionId)];
    const error = { name: "Rejected", message: "no" };
    for (const [path, body, kind, use] of [
      ["/tasks/heartbeat", { taskToken: token }, "callback", "POST /callbacks/heartbeat"],
      [
        "/tasks/complete",
        { taskToken: token, output: { by: "mallory" } },
        "callback",
        "POST /callbacks/complete",
      ],
      ["/tasks/fail", { taskToken: token, error }, "callback", "POST /callbacks/fail"],
      ["/callbacks/heartbeat", { token: task.taskToken }, "task", "POST /tasks/heartbeat"],
      ["/callbacks/complete", { token: task.taskToken, output: 1 }, "task", "POST /tasks/complete"],
      ["/callbacks/fail", { token: task.taskToken, error }, "task", "POST /tasks/fail"],
    ] as const) {
      const refused = expectErrorAnswer(
        await api.call({ method: "POST", path, body }),
        409,
        "WrongTokenKind",
      );
      expect(refused.message, path).toContain(`this is a ${kind} token`);
      expect(refused.message, path).toContain(use);
      // Never the token in the answer.
      expect(JSON.stringify(refused)).not.toContain(body.taskToken ?? body.token);
    }
    // Both executions as they were: same node states, no history added.
    expect(await describeExecution(executionId)).toEqual(before[0]);
    expect(await describeExecution(task.executionId)).toEqual(before[1]);
    // The task goes on through /tasks/*, the callback settles through /callbacks/*.
    const beat = await api.call({
      method: "POST",
      path: "/tasks/heartbeat",
      body: { taskToken: task.taskToken },
    });
    expect(beat.body).toEqual({ cancelRequested: false });
    expect(
      (
        await api.call({
          method: "POST",
          path: "/tasks/complete",
          body: { taskToken: task.taskToken, output: 2 },
        })
      ).status,
    ).toBe(202);
    const done = await api.call({
      method: "POST",
      path: "/callbacks/complete",
      body: { token, output: { by: "ana" } },
    });
    expect(done.status).toBe(202);
    const approved = await settle(executionId);
    expect(approved.status).toBe("SUCCEEDED");
    expect(approved.nodes.find((n) => n.id === "approve")).toMatchObject({
      attempt: 1,
      output: { by: "ana" },
    });
    expect((await settle(task.executionId)).status).toBe("SUCCEEDED");
  });
});

describe("the worker and callback routes never answer 500", () => {
  const ROUTES: RouteName[] = [
    "registerWorker",
    "listWorkers",
    "workerHeartbeat",
    "deregisterWorker",
    "pollTask",
    "heartbeatTask",
    "completeTask",
    "failTask",
    "completeCallback",
    "failCallback",
    "heartbeatCallback",
  ];
  /** A body close to the real ones: their fields, with any JSON (or a token-shaped forgery) in them. */
  const fieldValue = fc.oneof(
    jsonValue,
    fc
      .record({
        executionId: fc.string({ minLength: 1, maxLength: 40 }),
        nodeId: fc.string({ minLength: 1, maxLength: 40 }),
        attempt: fc.integer({ min: 1, max: 5 }),
        leaseToken: fc.string({ minLength: 1, maxLength: 20 }),
      })
      .map((t) => encodeAttemptToken(t)),
  );
  const FIELDS = [
    "taskToken",
    "token",
    "output",
    "error",
    "waitSeconds",
    "pool",
    "workerId",
    "executors",
    "capabilities",
    "labels",
    "maxParallel",
  ];
  const body = fc.oneof(
    jsonValue,
    fc.dictionary(fc.constantFrom(...FIELDS), fieldValue, { maxKeys: 4 }),
    fc.record({ name: fc.string(), message: fc.anything() }).map((error) => ({ taskToken: "wt1.x", error })),
  );
  const workerId = fc.oneof(
    fc.constantFrom("gpu-1", "nobody", "%E0%A4%A", "a%2Fb", "w".repeat(80)),
    fc.string({ minLength: 1, maxLength: 30 }).map(encodeURIComponent),
  );

  it("answers < 500 to random bodies and ids on every new route", async () => {
    await registerWorker({ workerId: "gpu-1", pool: "gpu" });
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ROUTES), body, workerId, async (route, value, id) => {
        const spec = API_ROUTES[route];
        // The poll only for a worker not registered: a random body may ask it to wait.
        const pathId = route === "pollTask" && id === "gpu-1" ? "nobody" : id;
        const answer = await api.call({
          method: spec.method,
          path: spec.path.replace("{id}", pathId),
          rawBody: JSON.stringify(value) ?? "null",
        });
        if (answer.status >= 500) throw new Error(`${route} answered ${answer.status}: ${answer.raw.body}`);
      }),
      { numRuns: 300 },
    );
  });
});
