/**
 * Traces end to end (shared/domain/trace.ts, docs/observability.md): one W3C `traceparent` followed
 * from `POST /executions` — through the local runtime's HTTP API, and through the api handler
 * itself — across the queue and the worker to the outgoing request of an `http` task, received by
 * a test server on loopback (the local runtime allows loopback; the engine-level tests allow it as
 * `npm start` does). Each attempt is a span of its own in the caller's trace; history events, task
 * messages, child executions, external workers' tasks and callbacks' lifecycle events carry it; a
 * malformed traceparent is ignored (a new trace, 202).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { APIGatewayProxyEventV2 } from "aws-lambda";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createApiHandler } from "../../functions/api/app.js";
import type { FunctionTracing } from "../../functions/common/tracing.js";
import type { LocalRuntime } from "../../local/runtime.js";
import { httpEgressPolicy } from "../../shared/config/egress.js";
import type { HistoryEvent } from "../../shared/domain/records.js";
import {
  attemptTrace,
  executionTrace,
  parseTraceparent,
  startTrace,
  type TraceContext,
} from "../../shared/domain/trace.js";
import type { TracedCreateRequest } from "../../shared/engine/executions.js";
import { HISTORY } from "../../shared/engine/lifecycle.js";
import { httpTask } from "../../shared/tasks/http.js";
import { defineTask } from "../../shared/tasks/task-type.js";
import { BACKEND_KINDS, type Backend, createBackend } from "../support/backends.js";
import { receiveAll, runToEnd, taskOf } from "../support/harness.js";
import { PATIENT } from "../support/progress.js";
import { type ApiClient, apiClient, type JsonBody, startRuntime } from "../support/runtime.js";

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN = "00f067aa0ba902b7";
const TRACEPARENT = `00-${TRACE_ID}-${CALLER_SPAN}-01`;
const fastRetry = { maxAttempts: 3, backoff: { initialSeconds: 0.05, jitter: "none" } } as const;

interface Received {
  path: string;
  traceparent: string | undefined;
}

let server: Server;
let baseUrl: string;
const received: Received[] = [];

beforeAll(async () => {
  // The first request to /flaky answers 503 (so its node is retried); everything else 200.
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const traceparent = req.headers.traceparent;
    received.push({
      path: req.url ?? "",
      traceparent: typeof traceparent === "string" ? traceparent : undefined,
    });
    const first = received.filter((r) => r.path === req.url).length === 1;
    res.writeHead(req.url?.startsWith("/flaky") && first ? 503 : 200, { "content-type": "application/json" });
    res.end(JSON.stringify({ ok: true }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** A pass node, then an `http` call retried once (its first answer is a 503). */
const tracedWorkflow = (name: string, path: string) => ({
  name,
  nodes: [
    { id: "a", type: "pass", params: { value: 1 } },
    {
      id: "call",
      type: "http",
      dependsOn: ["a"],
      params: { method: "GET", url: `${baseUrl}${path}` },
      retry: fastRetry,
    },
  ],
});

const started = (history: ReadonlyArray<Pick<HistoryEvent, "type" | "nodeId" | "trace">>, nodeId: string) =>
  history.filter((e) => e.type === HISTORY.nodeStarted && e.nodeId === nodeId).map((e) => e.trace);

describe.each(BACKEND_KINDS)("a traceparent through the local runtime (%s)", PATIENT, (kind) => {
  let runtime: LocalRuntime;
  let api: ApiClient;

  beforeAll(async () => {
    runtime = await startRuntime(kind);
    api = apiClient(runtime.url);
  });
  afterAll(async () => {
    await runtime?.stop();
  });

  async function start(workflow: string, traceparent: string): Promise<{ status: number; body: JsonBody }> {
    const response = await fetch(`${runtime.url}/executions`, {
      method: "POST",
      headers: { "content-type": "application/json", traceparent },
      body: JSON.stringify({ workflow }),
    });
    return { status: response.status, body: await response.json() };
  }

  async function events(executionId: string): Promise<HistoryEvent[]> {
    const { body } = await api.call("GET", `/executions/${executionId}/events?limit=1000`);
    return body.events;
  }

  it("reaches the http task's request with the caller's trace id and a span id per attempt; history carries it", async () => {
    const workflow = `traced-${kind}`;
    const path = `/flaky/${kind}`;
    expect((await api.call("POST", "/workflows", tracedWorkflow(workflow, path))).status).toBe(201);
    const { status, body } = await start(workflow, TRACEPARENT);
    expect(status).toBe(202);
    const view = await api.waitForEnd(body.executionId);
    expect(view.status).toBe("SUCCEEDED");
    expect(view.nodes.find((n) => n.id === "call")?.attempt).toBe(2);

    const sent = received.filter((r) => r.path === path).map((r) => r.traceparent);
    expect(sent).toHaveLength(2);
    const spans = sent.map((t) => parseTraceparent(t));
    for (const span of spans) {
      expect(span).toMatchObject({ traceId: TRACE_ID, flags: "01" });
      expect(span?.parentId).not.toBe(CALLER_SPAN);
    }
    expect(spans[0]?.parentId).not.toBe(spans[1]?.parentId);

    const history = await events(body.executionId);
    const begun = history.find((e) => e.type === HISTORY.executionStarted);
    expect(begun?.trace).toBe(TRACEPARENT);
    // The events that begin each attempt carry the span its request was sent from.
    expect(started(history, "call")).toEqual(sent);
    expect(started(history, "a").map((t) => parseTraceparent(t)?.traceId)).toEqual([TRACE_ID]);
  });

  it("ignores a malformed traceparent: 202, and the execution starts a trace of its own", async () => {
    const workflow = `untraced-${kind}`;
    const path = `/ok/${kind}`;
    await api.call("POST", "/workflows", tracedWorkflow(workflow, path));
    const malformed = `00-${TRACE_ID.toUpperCase()}-${CALLER_SPAN}-01`;
    const { status, body } = await start(workflow, malformed);
    expect(status).toBe(202);
    expect((await api.waitForEnd(body.executionId)).status).toBe("SUCCEEDED");
    const own = startTrace(body.executionId);
    const history = await events(body.executionId);
    expect(history.find((e) => e.type === HISTORY.executionStarted)?.trace).toBe(own);
    const sent = parseTraceparent(received.find((r) => r.path === path)?.traceparent);
    expect(sent?.traceId).toBe(parseTraceparent(own)?.traceId);
    expect(sent?.traceId).not.toBe(TRACE_ID);
  });
});

describe("a traceparent through the api handler and the engine (memory)", () => {
  /** Every handler's context.trace, by node id. */
  const seen = new Map<string, TraceContext | undefined>();
  const traceTask = defineTask({
    type: "trace",
    params: z.object({}).strict().optional(),
    run: ({ context }) => {
      seen.set(context.nodeId, context.trace);
      return context.trace?.traceId ?? null;
    },
  });
  let backend: Backend;
  const annotations: string[] = [];
  const tracing: FunctionTracing = {
    annotate: (traceId) => void annotations.push(traceId),
    span: (_name, _traceId, _detail, work) => work(),
  };

  beforeAll(async () => {
    backend = await createBackend("memory", {
      tasks: [httpTask({ egress: httpEgressPolicy(undefined, "local") }), traceTask],
    });
  });
  afterEach(() => {
    annotations.length = 0;
    seen.clear();
  });

  function post(body: unknown, headers: Record<string, string>): APIGatewayProxyEventV2 {
    return {
      version: "2.0",
      routeKey: "$default",
      rawPath: "/executions",
      rawQueryString: "",
      headers: { "content-type": "application/json", ...headers },
      requestContext: { http: { method: "POST", path: "/executions" }, stage: "$default" },
      body: JSON.stringify(body),
      isBase64Encoded: false,
    } as unknown as APIGatewayProxyEventV2;
  }

  it("keeps it on the execution, carries it in every task message and sends it with the http request", async () => {
    const { engine, consumer, store } = backend;
    const path = "/flaky/api-handler";
    await engine.registerWorkflow(tracedWorkflow("traced-api", path));
    const handler = createApiHandler(engine, { tracing });
    // Header names as a client may write them: API Gateway lower-cases them, a test event need not.
    const response = await handler(post({ workflow: "traced-api" }, { TraceParent: TRACEPARENT }));
    expect(response.statusCode).toBe(202);
    const { executionId } = JSON.parse(response.body as string) as { executionId: string };
    expect((await store.getExecution(executionId))?.trace).toBe(TRACEPARENT);
    // X-Ray's segment is joined to the caller's trace.
    expect(annotations).toEqual([TRACE_ID]);

    // The entry node's message, and every message after it, carries the execution's trace context.
    const [first] = await receiveAll(consumer, 1);
    expect(taskOf(first!)).toMatchObject({ executionId, nodeId: "a", attempt: 1, trace: TRACEPARENT });
    await engine.handleTask(taskOf(first!), { receiveCount: 1 });
    await consumer.delete([first!.receiptHandle]);
    const [second] = await receiveAll(consumer, 1);
    expect(taskOf(second!)).toMatchObject({ nodeId: "call", attempt: 1, trace: TRACEPARENT });
    await consumer.changeVisibility(second!.receiptHandle, 0);
    expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED");

    const sent = received.filter((r) => r.path === path).map((r) => r.traceparent);
    const execution = (await store.getExecution(executionId))!;
    expect(sent).toEqual([
      attemptTrace(execution, "call", 1).traceparent,
      attemptTrace(execution, "call", 2).traceparent,
    ]);
    expect(sent.map((t) => parseTraceparent(t)?.traceId)).toEqual([TRACE_ID, TRACE_ID]);
    const history = await store.listHistory(executionId);
    expect(started(history, "call")).toEqual(sent);
  });

  it("ignores a malformed header (202) and annotates the new trace the execution started", async () => {
    const { engine, store } = backend;
    await engine.registerWorkflow({ name: "one", nodes: [{ id: "a", type: "noop" }] });
    const handler = createApiHandler(engine, { tracing });
    for (const malformed of [
      "garbage",
      `00-${"0".repeat(32)}-${CALLER_SPAN}-01`,
      `${TRACEPARENT},${TRACEPARENT}`,
    ]) {
      const response = await handler(post({ workflow: "one" }, { traceparent: malformed }));
      expect(response.statusCode).toBe(202);
      const { executionId } = JSON.parse(response.body as string) as { executionId: string };
      const execution = (await store.getExecution(executionId))!;
      expect(execution.trace).toBe(startTrace(executionId));
      expect(annotations.at(-1)).toBe(executionTrace(execution).traceId);
    }
  });

  it("hands each attempt's span to its handler in context.trace", async () => {
    const { engine, consumer, store } = backend;
    await engine.registerWorkflow({ name: "seen", nodes: [{ id: "t", type: "trace" }] });
    const request: TracedCreateRequest = { workflow: "seen", traceparent: TRACEPARENT };
    const { executionId } = await engine.createExecution(request);
    expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED");
    expect(seen.get("t")).toEqual(attemptTrace({ executionId, trace: TRACEPARENT }, "t", 1));
  });

  it("continues the parent's trace in a child execution (a `workflow` node)", async () => {
    const { engine, consumer, store } = backend;
    await engine.registerWorkflow({ name: "kid", nodes: [{ id: "k", type: "trace" }] });
    await engine.registerWorkflow({
      name: "parent",
      nodes: [{ id: "w", type: "workflow", params: { name: "kid" } }],
    });
    const request: TracedCreateRequest = { workflow: "parent", traceparent: TRACEPARENT };
    const { executionId } = await engine.createExecution(request);
    expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED");
    const parentAttempt = attemptTrace({ executionId, trace: TRACEPARENT }, "w", 1);
    const childId = (await engine.describeExecution(executionId)).nodes[0]?.childExecutionId;
    const child = (await store.getExecution(childId!))!;
    // The child's context is the parent attempt's span; its own attempts are spans below it.
    expect(child.trace).toBe(parentAttempt.traceparent);
    expect(seen.get("k")).toEqual(attemptTrace(child, "k", 1));
    expect(seen.get("k")?.traceId).toBe(TRACE_ID);
    const history = await store.listHistory(executionId);
    expect(history.find((e) => e.type === HISTORY.childStarted)?.trace).toBe(parentAttempt.traceparent);
  });

  it("gives it to an external worker in the poll's task", async () => {
    const { engine, consumer, store } = backend;
    await engine.registerWorkflow({
      name: "outside",
      nodes: [{ id: "x", type: "render", runsOn: { pool: "traced" } }],
    });
    const { workerId } = await engine.registerWorker({
      pool: "traced",
      executors: [],
      capabilities: {},
      labels: [],
      maxParallel: 1,
    });
    const request: TracedCreateRequest = { workflow: "outside", traceparent: TRACEPARENT };
    const { executionId } = await engine.createExecution(request);
    // Its message, on the Lambda worker, offers it to the pool.
    const [message] = await receiveAll(consumer, 1);
    expect(taskOf(message!).trace).toBe(TRACEPARENT);
    await engine.handleTask(taskOf(message!), { receiveCount: 1 });
    await consumer.delete([message!.receiptHandle]);
    const task = await engine.pollTask(workerId, { waitSeconds: 0 });
    expect(task?.trace).toEqual(attemptTrace({ executionId, trace: TRACEPARENT }, "x", 1));
    await engine.completeTask(task!.taskToken, { done: true });
    expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED");
    const history = await store.listHistory(executionId);
    expect(started(history, "x")).toEqual([task?.trace?.traceparent]);
  });

  it("publishes it with a callback's waiting event (and every lifecycle event)", async () => {
    const { engine, consumer, store } = backend;
    await engine.registerWorkflow({
      name: "approval",
      nodes: [{ id: "approve", type: "callback", params: { timeoutSeconds: 3600 } }],
    });
    const request: TracedCreateRequest = { workflow: "approval", traceparent: TRACEPARENT };
    const { executionId } = await engine.createExecution(request);
    const [message] = await receiveAll(consumer, 1);
    await engine.handleTask(taskOf(message!), { receiveCount: 1 });
    await consumer.delete([message!.receiptHandle]);
    const ofThis = backend.events.filter((e) => e.detail.executionId === executionId);
    const waiting = ofThis.find((e) => e.detailType === "Node Waiting For Callback");
    expect(waiting?.detail.trace).toEqual(attemptTrace({ executionId, trace: TRACEPARENT }, "approve", 1));
    const begun = ofThis.find((e) => e.detailType === "Execution Started");
    expect(begun?.detail.trace).toEqual({ traceparent: TRACEPARENT, traceId: TRACE_ID, spanId: CALLER_SPAN });
    const history = await store.listHistory(executionId);
    expect(history.find((e) => e.type === HISTORY.callbackWaiting)?.trace).toBe(
      attemptTrace({ executionId, trace: TRACEPARENT }, "approve", 1).traceparent,
    );
  });
});
