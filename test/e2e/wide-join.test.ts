/**
 * A wide `all` join through the local runtime (SQS-shaped batches into the worker handler): the
 * arrivals of the messages of one invocation at the join's shard share writes (arrival-batcher.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalRuntime } from "../../local/runtime.js";
import type { EnginePorts } from "../../shared/ports.js";
import { BACKEND_KINDS } from "../support/backends.js";
import { passParents } from "../support/harness.js";
import { PATIENT } from "../support/progress.js";
import { type ApiClient, apiClient, startRuntime } from "../support/runtime.js";

describe.each(BACKEND_KINDS)("a wide join end to end (%s)", PATIENT, (kind) => {
  let runtime: LocalRuntime;
  let api: ApiClient;
  const shardWrites: number[] = [];

  beforeAll(async () => {
    const countShardWrites = (ports: EnginePorts): EnginePorts => {
      const store = ports.store;
      return {
        ...ports,
        store: new Proxy(store, {
          get(target, property, receiver) {
            if (property !== "recordShardArrival") return Reflect.get(target, property, receiver);
            return (request: Parameters<typeof store.recordShardArrival>[0]) => {
              shardWrites.push(request.parentIndexes.length);
              return target.recordShardArrival(request);
            };
          },
        }),
      };
    };
    runtime = await startRuntime(kind, { concurrency: 2, wrapPorts: countShardWrites });
    api = apiClient(runtime.url);
  });
  afterAll(async () => {
    await runtime?.stop();
  });

  it("joins 40 parents once, recording their arrivals in fewer writes than parents", async () => {
    const parents = passParents(40);
    const definition = {
      name: `wide-join-${kind}`,
      nodes: [
        { id: "start", type: "noop" },
        ...parents.map((p) => ({ ...p, dependsOn: ["start"] })),
        { id: "join", type: "merge", dependsOn: parents.map((p) => p.id) },
      ],
    };
    expect((await api.call("POST", "/workflows", definition)).status).toBe(201);
    const started = await api.call("POST", "/executions", { workflow: definition.name });
    expect(started.status).toBe(202);
    const view = await api.waitForEnd(started.body.executionId);
    expect(view.status).toBe("SUCCEEDED");
    expect(Object.keys((view.output?.join ?? {}) as object)).toHaveLength(40);
    const events = await api.call("GET", `/executions/${started.body.executionId}/events?limit=500`);
    const queued = events.body.events.filter(
      (e: { type: string; nodeId?: string }) => e.type === "NodeQueued" && e.nodeId === "join",
    );
    expect(queued).toHaveLength(1);
    // Every parent arrived (a set: repeats would not show), in fewer writes than parents: the
    // messages of one SQS batch completed together and shared the join shard's writes.
    expect(shardWrites.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(40);
    expect(shardWrites.length).toBeLessThan(40);
    expect(Math.max(...shardWrites)).toBeGreaterThan(1);
  });
});
