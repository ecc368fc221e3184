/**
 * The issue-3 routes on the real engine with in-memory ports: cancel, history, execution listing,
 * dead letters and redrive — status codes, answers, and the error contract.
 */
import { beforeEach, describe, expect, it } from "vitest";
import {
  type ApiFixture,
  chainDefinition,
  createApiFixture,
  detailPaths,
  expectErrorAnswer,
} from "./helpers.js";

let api: ApiFixture;
beforeEach(async () => {
  api = createApiFixture();
  expect((await api.call({ method: "POST", path: "/workflows", body: chainDefinition() })).status).toBe(201);
});

async function start(body: Record<string, unknown> = {}): Promise<string> {
  const answer = await api.call({
    method: "POST",
    path: "/executions",
    body: { workflow: "chain", ...body },
  });
  expect(answer.status).toBe(202);
  return (answer.body as { executionId: string }).executionId;
}

/** Dead-letters the entry node "a" (attempt 1) the way the DLQ function does; the execution fails. */
async function deadLetterEntry(executionId: string, messageId = `msg-${executionId}`): Promise<void> {
  await api.engine.recordDeadLetter({ executionId, nodeId: "a", attempt: 1 }, { messageId, receiveCount: 6 });
}

describe("POST /executions/{id}/cancel", () => {
  it("cancels a running execution (202) with a reason, and its pending nodes", async () => {
    const executionId = await start();
    const answer = await api.call({
      method: "POST",
      path: `/executions/${executionId}/cancel`,
      body: { reason: "operator stop" },
    });
    expect(answer.status).toBe(202);
    expect(answer.body).toEqual({ executionId, status: "CANCELLED" });

    const described = await api.call({ method: "GET", path: `/executions/${executionId}` });
    expect(described.body).toMatchObject({ status: "CANCELLED", error: { message: "operator stop" } });
    const nodes = (described.body as { nodes: Array<{ id: string; status: string }> }).nodes;
    expect(nodes.every((node) => node.status === "CANCELLED")).toBe(true);
  });

  it("accepts an empty body and cancels a PENDING execution", async () => {
    const executionId = await start({ start: false });
    const answer = await api.call({ method: "POST", path: `/executions/${executionId}/cancel` });
    expect(answer.status).toBe(202);
    expect(answer.body).toEqual({ executionId, status: "CANCELLED" });
  });

  it("answers 409 for a finished execution and 404 for an unknown one", async () => {
    const executionId = await start();
    await api.call({ method: "POST", path: `/executions/${executionId}/cancel` });
    const again = expectErrorAnswer(
      await api.call({ method: "POST", path: `/executions/${executionId}/cancel` }),
      409,
      "Conflict",
    );
    expect(again.message).toContain("CANCELLED");

    const failed = await start();
    await deadLetterEntry(failed);
    expectErrorAnswer(
      await api.call({ method: "POST", path: `/executions/${failed}/cancel` }),
      409,
      "Conflict",
    );

    expectErrorAnswer(await api.call({ method: "POST", path: "/executions/nope/cancel" }), 404, "NotFound");
  });

  it("refuses a reason over 1000 characters, a non-string reason and unknown fields, changing nothing", async () => {
    const executionId = await start();
    const tooLong = expectErrorAnswer(
      await api.call({
        method: "POST",
        path: `/executions/${executionId}/cancel`,
        body: { reason: "x".repeat(1001) },
      }),
      400,
      "InvalidRequest",
    );
    expect(detailPaths(tooLong)).toEqual(["reason"]);
    const both = expectErrorAnswer(
      await api.call({
        method: "POST",
        path: `/executions/${executionId}/cancel`,
        body: { reason: 7, why: "x" },
      }),
      400,
      "InvalidRequest",
    );
    expect(detailPaths(both)).toEqual(["reason", "why"]);
    expectErrorAnswer(
      await api.call({ method: "POST", path: `/executions/${executionId}/cancel`, rawBody: "{" }),
      400,
      "InvalidJson",
    );
    const described = await api.call({ method: "GET", path: `/executions/${executionId}` });
    expect(described.body).toMatchObject({ status: "RUNNING" });
  });
});

describe("GET /executions/{id}/events", () => {
  it("pages the history in order with ISO times and a cursor", async () => {
    const executionId = await start();
    await api.call({ method: "POST", path: `/executions/${executionId}/cancel`, body: { reason: "r" } });

    const all = await api.call({ method: "GET", path: `/executions/${executionId}/events` });
    expect(all.status).toBe(200);
    const { events, next } = all.body as { events: Array<{ at: string; type: string }>; next?: string };
    expect(next).toBeUndefined();
    expect(events.length).toBeGreaterThanOrEqual(2);
    for (const event of events) {
      expect(event.at).toMatch(/^\d{4}-\d\d-\d\dT.*Z$/);
      expect(event.type).toEqual(expect.any(String));
    }
    const times = events.map((event) => event.at);
    expect([...times].sort()).toEqual(times);

    const paged: unknown[] = [];
    let cursor: string | undefined;
    do {
      const query = cursor === undefined ? "?limit=1" : `?limit=1&after=${encodeURIComponent(cursor)}`;
      const page = await api.call({ method: "GET", path: `/executions/${executionId}/events${query}` });
      expect(page.status).toBe(200);
      const body = page.body as { events: unknown[]; next?: string };
      expect(body.events).toHaveLength(1);
      paged.push(...body.events);
      cursor = body.next;
    } while (cursor !== undefined);
    expect(paged).toEqual(events);
  });

  it("answers 400 for a limit out of 1–1000 or not a number, and for a bad cursor", async () => {
    const executionId = await start();
    for (const limit of ["0", "1001", "abc", "2.5", "-1"]) {
      const error = expectErrorAnswer(
        await api.call({ method: "GET", path: `/executions/${executionId}/events?limit=${limit}` }),
        400,
        "InvalidRequest",
      );
      expect(detailPaths(error)).toEqual(["query.limit"]);
    }
    const ok = await api.call({ method: "GET", path: `/executions/${executionId}/events?limit=1000` });
    expect(ok.status).toBe(200);

    const answer = await api.call({
      method: "GET",
      path: `/executions/${executionId}/events?after=not-a-cursor`,
    });
    expect(answer.status).toBe(400);
    expect(detailPaths((answer.body as { error: Parameters<typeof detailPaths>[0] }).error)).toEqual([
      "query.after",
    ]);
  });

  it("answers 404 for an unknown execution", async () => {
    expectErrorAnswer(await api.call({ method: "GET", path: "/executions/nope/events" }), 404, "NotFound");
  });
});

describe("GET /executions", () => {
  it("lists executions newest first, filtered by workflow and status, in pages", async () => {
    await api.call({ method: "POST", path: "/workflows", body: chainDefinition("other") });
    const first = await start();
    const second = await start({ start: false });
    const third = await start();
    const otherAnswer = await api.call({ method: "POST", path: "/executions", body: { workflow: "other" } });
    const other = (otherAnswer.body as { executionId: string }).executionId;

    const all = await api.call({ method: "GET", path: "/executions" });
    expect(all.status).toBe(200);
    const body = all.body as { executions: Array<Record<string, unknown>>; next?: string };
    expect(body.executions.map((e) => e.executionId)).toEqual([other, third, second, first]);
    expect(body.next).toBeUndefined();
    expect(body.executions[1]).toMatchObject({
      executionId: third,
      workflow: "chain",
      version: 1,
      status: "RUNNING",
      createdAt: expect.stringMatching(/Z$/),
      startedAt: expect.stringMatching(/Z$/),
    });

    const chain = await api.call({ method: "GET", path: "/executions?workflow=chain&status=RUNNING" });
    expect((chain.body as typeof body).executions.map((e) => e.executionId)).toEqual([third, first]);
    const pending = await api.call({ method: "GET", path: "/executions?status=PENDING&workflow=" });
    expect((pending.body as typeof body).executions.map((e) => e.executionId)).toEqual([second]);

    const seen: unknown[] = [];
    let next: string | undefined;
    do {
      const query = next === undefined ? "?limit=3" : `?limit=3&next=${encodeURIComponent(next)}`;
      const page = (await api.call({ method: "GET", path: `/executions${query}` })).body as typeof body;
      expect(page.executions.length).toBeLessThanOrEqual(3);
      seen.push(...page.executions.map((e) => e.executionId));
      next = page.next;
    } while (next !== undefined);
    expect(seen).toEqual([other, third, second, first]);
  });

  it("answers 400 with a detail per bad parameter (status, limit 1–200, workflow)", async () => {
    const error = expectErrorAnswer(
      await api.call({ method: "GET", path: "/executions?status=DONE&limit=201&workflow=bad%20name" }),
      400,
      "InvalidRequest",
    );
    expect(detailPaths(error)).toEqual(["query.limit", "query.status", "query.workflow"]);
    expect(error.details.find((d) => d.path === "query.status")?.message).toContain("SUCCEEDED");
    const zero = expectErrorAnswer(
      await api.call({ method: "GET", path: "/executions?limit=0" }),
      400,
      "InvalidRequest",
    );
    expect(detailPaths(zero)).toEqual(["query.limit"]);
    expect((await api.call({ method: "GET", path: "/executions?limit=200" })).status).toBe(200);
  });

  it("answers 400 at query.next for a cursor the store cannot decode", async () => {
    await start();
    for (const path of ["/executions?next=garbage", "/executions?next=99999", "/dlq?next=garbage"]) {
      const error = expectErrorAnswer(await api.call({ method: "GET", path }), 400, "InvalidCursor");
      expect(error.details).toEqual([
        { path: "query.next", code: "invalid_cursor", message: expect.any(String) },
      ]);
    }
    // Any other error from the store is a fault, never taken for bad input.
    api.ports.store.listExecutions = async () => {
      throw new RangeError("cannot encode -1 in a key");
    };
    expectErrorAnswer(await api.call({ method: "GET", path: "/executions" }), 500, "InternalError");
  });

  it("answers 400 naming the parameter for an execution id no execution can have", async () => {
    const long = "x".repeat(2048);
    for (const [method, path] of [
      ["GET", `/executions/${long}`],
      ["GET", `/executions/${long}/events`],
      ["POST", `/executions/${long}/cancel`],
      ["POST", `/executions/${long}/trigger`],
    ] as const) {
      const error = expectErrorAnswer(await api.call({ method, path }), 400, "InvalidRequest");
      expect(error.details).toEqual([{ path: "path.id", code: "too_big", message: expect.any(String) }]);
    }
    const name = expectErrorAnswer(
      await api.call({ method: "GET", path: `/workflows/${"n".repeat(2048)}` }),
      400,
      "InvalidRequest",
    );
    expect(name.details.map((d) => d.path)).toEqual(["path.name"]);
  });
});

describe("GET /dlq and POST /dlq/redrive", () => {
  it("lists dead-lettered work with its error, ISO time, reason and receive count", async () => {
    const executionId = await start();
    await deadLetterEntry(executionId, "sqs-message-1");

    const answer = await api.call({ method: "GET", path: "/dlq" });
    expect(answer.status).toBe(200);
    const body = answer.body as { deadLetters: Array<Record<string, unknown>>; next?: string };
    expect(body.next).toBeUndefined();
    expect(body.deadLetters).toEqual([
      {
        id: expect.stringContaining("sqs-message-1"),
        executionId,
        nodeId: "a",
        attempt: 1,
        error: expect.objectContaining({ name: "DeadLettered", message: expect.stringContaining("6 times") }),
        at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
        reason: "poison",
        receiveCount: 6,
      },
    ]);
    const described = await api.call({ method: "GET", path: `/executions/${executionId}` });
    expect(described.body).toMatchObject({ status: "FAILED" });
  });

  it("pages with limit and next, and validates limit", async () => {
    for (let i = 0; i < 3; i++) await deadLetterEntry(await start(), `m-${i}`);
    const first = (await api.call({ method: "GET", path: "/dlq?limit=2" })).body as {
      deadLetters: Array<{ id: string }>;
      next?: string;
    };
    expect(first.deadLetters).toHaveLength(2);
    expect(first.next).toEqual(expect.any(String));
    const second = (
      await api.call({ method: "GET", path: `/dlq?limit=2&next=${encodeURIComponent(first.next!)}` })
    ).body as typeof first;
    expect(second.deadLetters).toHaveLength(1);
    expect(second.next).toBeUndefined();

    for (const limit of ["0", "201", "x"]) {
      const error = expectErrorAnswer(
        await api.call({ method: "GET", path: `/dlq?limit=${limit}` }),
        400,
        "InvalidRequest",
      );
      expect(detailPaths(error)).toEqual(["query.limit"]);
    }
  });

  it("redrives everything on an empty body (202), reviving the execution", async () => {
    const executionId = await start();
    await deadLetterEntry(executionId);
    const { deadLetters } = (await api.call({ method: "GET", path: "/dlq" })).body as {
      deadLetters: Array<{ id: string }>;
    };

    const answer = await api.call({ method: "POST", path: "/dlq/redrive" });
    expect(answer.status).toBe(202);
    expect(answer.body).toEqual({ redriven: deadLetters.map((d) => d.id), skipped: [] });

    expect((await api.call({ method: "GET", path: "/dlq" })).body).toEqual({ deadLetters: [] });
    const described = await api.call({ method: "GET", path: `/executions/${executionId}` });
    expect(described.body).toMatchObject({ status: "RUNNING" });
    const nodeA = (
      described.body as { nodes: Array<{ id: string; status: string; attempt: number }> }
    ).nodes.find((node) => node.id === "a");
    expect(nodeA).toMatchObject({ status: "QUEUED", attempt: 2 });
  });

  it("redrives chosen ids and reports unknown ones as skipped", async () => {
    const executionId = await start();
    await deadLetterEntry(executionId);
    const [record] = (
      (await api.call({ method: "GET", path: "/dlq" })).body as { deadLetters: Array<{ id: string }> }
    ).deadLetters;
    const answer = await api.call({
      method: "POST",
      path: "/dlq/redrive",
      body: { messageIds: [record!.id, "no-such-id"] },
    });
    expect(answer.status).toBe(202);
    expect(answer.body).toEqual({
      redriven: [record!.id],
      skipped: [{ id: "no-such-id", reason: expect.any(String) }],
    });
  });

  it("refuses an empty id list, more than 500 ids, empty ids and unknown fields", async () => {
    const empty = expectErrorAnswer(
      await api.call({ method: "POST", path: "/dlq/redrive", body: { messageIds: [] } }),
      400,
      "InvalidRequest",
    );
    expect(detailPaths(empty)).toEqual(["messageIds"]);
    const many = Array.from({ length: 501 }, (_, i) => `id-${i}`);
    expectErrorAnswer(
      await api.call({ method: "POST", path: "/dlq/redrive", body: { messageIds: many } }),
      400,
      "InvalidRequest",
    );
    const bad = expectErrorAnswer(
      await api.call({ method: "POST", path: "/dlq/redrive", body: { messageIds: ["ok", ""], all: true } }),
      400,
      "InvalidRequest",
    );
    expect(detailPaths(bad)).toEqual(["all", "messageIds.1"]);
    expect((await api.call({ method: "POST", path: "/dlq/redrive", body: {} })).status).toBe(202);
  });
});
