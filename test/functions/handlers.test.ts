/** The sweeper and dlq handlers (thin layers over the engine) and the engine's configuration from the environment. */
import { Logger } from "@aws-lambda-powertools/logger";
import { Tracer } from "@aws-lambda-powertools/tracer";
import type { SQSEvent, SQSRecord } from "aws-lambda";
import { describe, expect, it, vi } from "vitest";
import { MalformedTaskMessageError, parseTaskMessage } from "../../functions/common/task-message.js";
import { invocationTracing, NO_INVOCATION_TRACING, NO_TRACING } from "../../functions/common/tracing.js";
import { captureWith, TRACER_OPTIONS, traceInvocation, xrayTracing } from "../../functions/common/xray.js";
import { createDlqHandler } from "../../functions/dlq/app.js";
import { createSweeperHandler } from "../../functions/sweeper/app.js";
import { createWorkerHandler } from "../../functions/worker/app.js";
import { loadConfig, loadEngineSettings } from "../../shared/config/env.js";
import { createEngineFromEnv, powertoolsEngineLogger } from "../../shared/config/wiring.js";
import type { Engine } from "../../shared/engine/engine.js";
import type { SweepReport } from "../../shared/engine/sweeper.js";
import type { TaskMessage } from "../../shared/ports.js";

const silent = () => new Logger({ serviceName: "test", logLevel: "SILENT" });

const report: SweepReport = {
  skipped: false,
  executions: 3,
  recoveredLeases: 1,
  resent: 2,
  reDriven: 0,
  timedOut: 0,
  timers: 0,
};

function record(messageId: string, body: string, receiveCount = "6"): SQSRecord {
  return {
    messageId,
    receiptHandle: `${messageId}-handle`,
    body,
    attributes: {
      ApproximateReceiveCount: receiveCount,
      SentTimestamp: "0",
      SenderId: "000000000000",
      ApproximateFirstReceiveTimestamp: "0",
    },
    messageAttributes: {},
    md5OfBody: "",
    eventSource: "aws:sqs",
    eventSourceARN: "arn:aws:sqs:local:000000000000:dlq",
    awsRegion: "local",
  };
}

describe("task message bodies", () => {
  it("parse with or without a join's dependencies, and a bad one is refused naming the field", () => {
    const base = { executionId: "e", nodeId: "j", attempt: 1 };
    expect(parseTaskMessage(JSON.stringify(base))).toEqual(base);
    expect(parseTaskMessage(JSON.stringify({ ...base, deps: [0, 2] }))).toEqual({ ...base, deps: [0, 2] });
    expect(() => parseTaskMessage(JSON.stringify({ ...base, deps: [0, -1] }))).toThrow(
      MalformedTaskMessageError,
    );
    expect(() => parseTaskMessage(JSON.stringify({ ...base, deps: ["x"] }))).toThrow(/deps\.0/);
  });
});

describe("task message traces", () => {
  const base = { executionId: "e", nodeId: "n", attempt: 1 };
  const trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  it("accept a W3C traceparent in `trace`", () => {
    expect(parseTaskMessage(JSON.stringify({ ...base, trace }))).toEqual({ ...base, trace });
    expect(parseTaskMessage(JSON.stringify({ ...base, deps: [1], trace }))).toEqual({
      ...base,
      deps: [1],
      trace,
    });
  });

  it("drop a `trace` that is not one, and keep the message (a trace never costs the work)", () => {
    for (const bad of [
      "nope",
      7,
      { traceparent: trace },
      trace.toUpperCase(),
      `${trace}-x`,
      "x".repeat(600),
    ]) {
      const parsed = parseTaskMessage(JSON.stringify({ ...base, trace: bad }));
      expect(parsed).toEqual(base);
      expect("trace" in parsed).toBe(false);
    }
  });
});

describe("function tracing (X-Ray)", () => {
  it("is off outside Lambda: the Tracer is disabled and the helpers only run the work", async () => {
    const tracer = new Tracer({ serviceName: "test", ...TRACER_OPTIONS });
    expect(tracer.isTracingEnabled()).toBe(false);
    const client = { send: () => "sent" };
    expect(captureWith(tracer)(client)).toBe(client);
    const tracing = xrayTracing(tracer);
    tracing.annotate("4bf92f3577b34da6a3ce929d0e0e4736");
    await expect(
      tracing.span("weft task", "4bf92f3577b34da6a3ce929d0e0e4736", {}, async () => 7),
    ).resolves.toBe(7);
    await expect(traceInvocation(tracer, async () => "done")).resolves.toBe("done");
    await expect(NO_TRACING.span("x", undefined, {}, async () => 1)).resolves.toBe(1);
  });

  it("is loaded only when the construct turned it on (POWERTOOLS_TRACE_ENABLED=true)", async () => {
    for (const env of [{}, { POWERTOOLS_TRACE_ENABLED: "false" }, { POWERTOOLS_TRACE_ENABLED: "1" }]) {
      expect(await invocationTracing("weft-test", env)).toBe(NO_INVOCATION_TRACING);
    }
    const traced = await invocationTracing("weft-test", { POWERTOOLS_TRACE_ENABLED: "true" });
    expect(traced).not.toBe(NO_INVOCATION_TRACING);
    // A Powertools Tracer, a no-op outside Lambda: the work runs, the client is left as it is.
    const client = { send: () => "sent" };
    expect(traced.capture(client)).toBe(client);
    await expect(traced.invocation(async () => "done")).resolves.toBe("done");
    await expect(traced.app.span("weft task", undefined, {}, async () => 3)).resolves.toBe(3);
  });

  it("the worker handler runs each record in a span annotated with its message's trace id", async () => {
    const handled: string[] = [];
    const spans: Array<[string, string | undefined, Record<string, unknown>]> = [];
    const engine = {
      ports: { clock: { now: () => Date.now() } },
      invocation: () => ({ handleTask: async (m: TaskMessage) => void handled.push(m.nodeId) }),
    } as unknown as Engine;
    const tracing = {
      annotate() {},
      span: async <T>(
        name: string,
        traceId: string | undefined,
        detail: Record<string, unknown>,
        work: () => Promise<T>,
      ) => {
        spans.push([name, traceId, detail]);
        return work();
      },
    };
    const handler = createWorkerHandler(engine, { logger: silent(), tracing });
    const trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const response = await handler({
      Records: [
        record("m1", JSON.stringify({ executionId: "e", nodeId: "a", attempt: 1, trace }), "1"),
        record("m2", JSON.stringify({ executionId: "e", nodeId: "b", attempt: 2 }), "1"),
      ],
    } as SQSEvent);
    expect(response.batchItemFailures).toEqual([]);
    expect(handled.sort()).toEqual(["a", "b"]);
    expect(spans.sort((x, y) => String(x[2].nodeId).localeCompare(String(y[2].nodeId)))).toEqual([
      ["weft task", "4bf92f3577b34da6a3ce929d0e0e4736", { executionId: "e", nodeId: "a", attempt: 1 }],
      ["weft task", undefined, { executionId: "e", nodeId: "b", attempt: 2 }],
    ]);
  });
});

describe("sweeper handler", () => {
  it("sweeps once and logs the report's counts", async () => {
    const sweep = vi.fn(async () => report);
    const logger = silent();
    const info = vi.spyOn(logger, "info");
    const handler = createSweeperHandler({ sweep } as unknown as Engine, { logger });
    expect(await handler()).toEqual(report);
    expect(sweep).toHaveBeenCalledTimes(1);
    expect(info).toHaveBeenCalledWith("sweep finished", { ...report, durationMs: expect.any(Number) });
  });

  it("logs a skipped sweep, and logs and rethrows a failed one", async () => {
    const logger = silent();
    const info = vi.spyOn(logger, "info");
    const error = vi.spyOn(logger, "error");
    const skipped = createSweeperHandler(
      { sweep: async () => ({ ...report, skipped: true }) } as unknown as Engine,
      {
        logger,
      },
    );
    expect((await skipped()).skipped).toBe(true);
    expect(info.mock.calls[0]?.[0]).toMatch(/skipped/);

    const failing = createSweeperHandler(
      {
        sweep: async () => {
          throw new Error("store down");
        },
      } as unknown as Engine,
      { logger },
    );
    await expect(failing()).rejects.toThrow("store down");
    expect(error).toHaveBeenCalledTimes(1);
  });
});

describe("dlq handler", () => {
  it("records each task message with its SQS message id and receive count", async () => {
    const recorded: Array<[TaskMessage, { messageId: string; receiveCount: number }]> = [];
    const engine = {
      recordDeadLetter: async (
        message: TaskMessage,
        delivery: { messageId: string; receiveCount: number },
      ) => {
        recorded.push([message, delivery]);
      },
    } as unknown as Engine;
    const handler = createDlqHandler(engine, { logger: silent() });
    const message = { executionId: "ex-1", nodeId: "b", attempt: 2 };
    const response = await handler({ Records: [record("m-1", JSON.stringify(message))] });
    expect(response).toEqual({ batchItemFailures: [] });
    expect(recorded).toEqual([[message, { messageId: "m-1", receiveCount: 6 }]]);
  });

  it("acknowledges an unparseable body (logged without it) and fails only the records the engine refused", async () => {
    const engine = {
      recordDeadLetter: async (message: TaskMessage) => {
        if (message.nodeId === "boom") throw new Error("store down");
      },
    } as unknown as Engine;
    const logger = silent();
    const error = vi.spyOn(logger, "error");
    const handler = createDlqHandler(engine, { logger });
    const event: SQSEvent = {
      Records: [
        record("bad-json", "{not json with password=hunter2"),
        record("not-a-task", JSON.stringify({ executionId: "ex", secret: "hunter2" })),
        record("ok", JSON.stringify({ executionId: "ex", nodeId: "fine", attempt: 1 })),
        record("refused", JSON.stringify({ executionId: "ex", nodeId: "boom", attempt: 1 })),
      ],
    };
    const response = await handler(event);
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: "refused" }] });
    expect(error).toHaveBeenCalledTimes(2);
    expect(JSON.stringify(error.mock.calls)).not.toContain("hunter2");
  });
});

describe("engine configuration from the environment", () => {
  const base = {
    WEFT_TABLE_NAME: "t",
    WEFT_QUEUE_URL: "http://127.0.0.1:1/q",
    WEFT_EVENT_BUS_NAME: "bus",
    WEFT_PAYLOAD_BUCKET: "payloads",
  };

  it("maps WEFT_SWEEP_*_SECONDS to the engine's sweep settings in ms, leaving unset ones to the engine", () => {
    expect(loadConfig(base)).toMatchObject({ leaseSeconds: 60, sweep: {} });
    const config = loadConfig({
      ...base,
      WEFT_LEASE_SECONDS: "90",
      WEFT_SWEEP_FIRST_CHECK_SECONDS: "30",
      WEFT_SWEEP_IDLE_SECONDS: "",
      WEFT_SWEEP_GRACE_SECONDS: "45",
    });
    expect(config.leaseSeconds).toBe(90);
    expect(config.sweep).toEqual({ firstCheckMs: 30_000, graceMs: 45_000 });
    expect(loadEngineSettings({ WEFT_SWEEP_IDLE_SECONDS: "600" })).toEqual({
      leaseSeconds: 60,
      claimAfterSeconds: 5,
      defaultMaxAttempts: 3,
      sweep: { idleMs: 600_000 },
      workflowHeadCacheMs: 1000,
    });
  });

  it("reads WEFT_RETENTION_DAYS (the TTL of finished executions), optional", () => {
    expect(loadConfig(base).retentionDays).toBeUndefined();
    expect(loadConfig({ ...base, WEFT_RETENTION_DAYS: "30" }).retentionDays).toBe(30);
    expect(() => loadConfig({ ...base, WEFT_RETENTION_DAYS: "0" })).toThrow(/WEFT_RETENTION_DAYS/);
  });

  it("names every bad value", () => {
    expect(() =>
      loadConfig({ ...base, WEFT_SWEEP_FIRST_CHECK_SECONDS: "0", WEFT_SWEEP_IDLE_SECONDS: "1.5" }),
    ).toThrow(/WEFT_SWEEP_FIRST_CHECK_SECONDS.*WEFT_SWEEP_IDLE_SECONDS/);
  });

  it("builds the engine with those options and a Powertools-backed logger", () => {
    const logger = silent();
    const warn = vi.spyOn(logger, "warn");
    const engine = createEngineFromEnv({ ...base, WEFT_SWEEP_GRACE_SECONDS: "5" }, { logger });
    expect(engine.options).toMatchObject({ leaseSeconds: 60, sweep: { graceMs: 5000 } });
    engine.options.logger?.warn("stale", { executionId: "ex-1" });
    expect(warn).toHaveBeenCalledWith("stale", { executionId: "ex-1" });

    const adapter = powertoolsEngineLogger(logger);
    adapter.warn("bare");
    expect(warn).toHaveBeenLastCalledWith("bare");
  });
});
