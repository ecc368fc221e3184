/**
 * The local runtime's dead-letter path and sweeper timer: a message whose processing keeps crashing is
 * moved to the in-memory DLQ after maxReceiveCount, the DLQ poller hands it to the dlq handler, and the
 * engine records a dead letter and fails the node (and the execution); the sweeper handler runs on its
 * timer and on demand.
 */
import { Logger } from "@aws-lambda-powertools/logger";
import { afterEach, describe, expect, it, vi } from "vitest";
import { type LocalRuntime, type LocalRuntimeOptions, startLocalRuntime } from "../../local/runtime.js";
import { HISTORY } from "../../shared/engine/lifecycle.js";
import type { EnginePorts, Store } from "../../shared/ports.js";
import { apiClient } from "../support/runtime.js";

const silent = (serviceName: string) => new Logger({ serviceName, logLevel: "SILENT" });
const silentEngineLogger = { info() {}, warn() {}, error() {} };

let runtime: LocalRuntime | undefined;
afterEach(async () => {
  await runtime?.stop();
  runtime = undefined;
});

function start(options: Partial<LocalRuntimeOptions> = {}): Promise<LocalRuntime> {
  return startLocalRuntime({
    backend: "memory",
    port: 0,
    env: {},
    waitSeconds: 0,
    onError: () => {},
    apiLogger: silent("api"),
    workerLogger: silent("worker"),
    dlqLogger: silent("dlq"),
    sweeperLogger: silent("sweeper"),
    engineOptions: { logger: silentEngineLogger },
    ...options,
  });
}

/**
 * A store whose claim of `nodeId` always throws, as a crashing worker would: the write that carries
 * its NodeStarted — a claim before the run, or a lazy claim carried by the attempt's ending.
 */
function crashOnClaim(nodeId: string, calls: { count: number }) {
  return (ports: EnginePorts): EnginePorts => {
    const store = new Proxy(ports.store, {
      get(target, property) {
        if (property === "transitionNode") {
          return (...args: Parameters<Store["transitionNode"]>) => {
            const events = args[4] === undefined ? [] : [args[4]].flat();
            if (args[1] === nodeId && events.some((e) => e.type === HISTORY.nodeStarted)) {
              calls.count++;
              return Promise.reject(new Error(`injected crash claiming ${nodeId}`));
            }
            return target.transitionNode(...args);
          };
        }
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    return { ...ports, store };
  };
}

async function until<T>(probe: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe("local runtime: dead-letter queue consumer", () => {
  it("turns a message that keeps crashing into a dead letter, a FAILED node and a FAILED execution", async () => {
    const claims = { count: 0 };
    runtime = await start({
      sweep: false,
      maxReceiveCount: 2,
      visibilityTimeoutSeconds: 0.2,
      wrapPorts: crashOnClaim("b", claims),
      // Every claim of b through its own message: counts receives exactly (no continuation from a).
      engineOptions: { maxContinuations: 0 },
    });
    const api = apiClient(runtime.url);
    const workflow = {
      name: "poisoned",
      nodes: [
        { id: "a", type: "pass", params: { value: 1 } },
        { id: "b", type: "noop", dependsOn: ["a"] },
        { id: "c", type: "noop", dependsOn: ["b"] },
      ],
    };
    expect((await api.call("POST", "/workflows", workflow)).status).toBe(201);
    const created = await api.call("POST", "/executions", { workflow: "poisoned" });
    expect(created.status).toBe(202);
    const executionId: string = created.body.executionId;

    const execution = await api.waitForEnd(executionId);
    expect(execution.status).toBe("FAILED");
    // Received maxReceiveCount times from the task queue, each claim crashing, then dead-lettered.
    expect(claims.count).toBe(2);
    const nodes = Object.fromEntries(execution.nodes.map((node) => [node.id, node]));
    expect(nodes.a).toMatchObject({ status: "COMPLETED", output: 1 });
    expect(nodes.b).toMatchObject({ status: "FAILED", attempt: 1, error: { name: "DeadLettered" } });
    expect(nodes.c?.status).toBe("CANCELLED");

    const dlq = await api.call("GET", "/dlq");
    expect(dlq.status).toBe(200);
    expect(dlq.body.deadLetters).toEqual([
      expect.objectContaining({
        executionId,
        nodeId: "b",
        attempt: 1,
        reason: "poison",
        // SQS's count carries over from the task queue: two failed receives there, one here.
        receiveCount: 3,
        error: expect.objectContaining({ name: "DeadLettered" }),
      }),
    ]);

    // The dlq handler acknowledged the record: the dead-letter queue is drained.
    await until(async () =>
      (runtime!.deadLetterConsumer as unknown as { size: number }).size === 0 ? true : undefined,
    );
  });

  it("acknowledges a dead-lettered body that is not a task message without failing anything", async () => {
    const dlqLogger = silent("dlq");
    const logged = vi.spyOn(dlqLogger, "error");
    runtime = await start({ sweep: false, dlqLogger });
    const deadLetter = runtime.deadLetterConsumer as unknown as {
      sendRaw(body: string): string;
      size: number;
    };
    deadLetter.sendRaw('{"secret":"hunter2"}');

    await until(async () => (deadLetter.size === 0 ? true : undefined));
    expect(logged).toHaveBeenCalledTimes(1);
    expect(JSON.stringify(logged.mock.calls[0])).not.toContain("hunter2");
    expect((await apiClient(runtime.url).call("GET", "/dlq")).body).toEqual({ deadLetters: [] });
  });
});

describe("local runtime: sweeper", () => {
  it("runs the sweeper handler on its timer", async () => {
    const sweeperLogger = silent("sweeper");
    const info = vi.spyOn(sweeperLogger, "info");
    runtime = await start({ sweepIntervalMs: 30, sweeperLogger });
    await until(async () => (info.mock.calls.length >= 2 ? true : undefined));
    expect(info.mock.calls[0]?.[0]).toBe("sweep finished");
    expect(info.mock.calls[0]?.[1]).toMatchObject({ executions: 0, recoveredLeases: 0, skipped: false });
  });

  it("does not run it with sweep: false, and sweep() runs one now", async () => {
    const sweeperLogger = silent("sweeper");
    const info = vi.spyOn(sweeperLogger, "info");
    runtime = await start({ sweep: false, sweepIntervalMs: 10, sweeperLogger });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(info).not.toHaveBeenCalled();
    const report = await runtime.sweep();
    expect(report).toEqual({
      skipped: false,
      executions: 0,
      recoveredLeases: 0,
      resent: 0,
      reDriven: 0,
      timedOut: 0,
      timers: 0,
    });
    expect(info).toHaveBeenCalledTimes(1);
  });

  it("applies engineOptions over the lease and WEFT_SWEEP_* settings", async () => {
    runtime = await start({
      sweep: false,
      leaseSeconds: 30,
      env: { WEFT_SWEEP_IDLE_SECONDS: "7", WEFT_SWEEP_GRACE_SECONDS: "9" },
      engineOptions: { logger: silentEngineLogger, leaseSeconds: 5, sweep: { graceMs: 1000 } },
    });
    expect(runtime.engine.options).toMatchObject({
      leaseSeconds: 5,
      sweep: { idleMs: 7000, graceMs: 1000 },
    });
  });

  it("refuses an invalid WEFT_SWEEP_* value", async () => {
    await expect(start({ env: { WEFT_SWEEP_GRACE_SECONDS: "soon" } })).rejects.toThrow(
      /WEFT_SWEEP_GRACE_SECONDS/,
    );
  });
});
