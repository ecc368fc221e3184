/**
 * Task sends through the local runtime (SQS-shaped batches into the worker handler): the children
 * that the records of one invocation send at about the same moment share SendMessageBatch calls
 * (send-batcher.ts), and every child still runs exactly once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalRuntime } from "../../local/runtime.js";
import type { EnginePorts } from "../../shared/ports.js";
import { BACKEND_KINDS } from "../support/backends.js";
import { PATIENT } from "../support/progress.js";
import { type ApiClient, apiClient, startRuntime } from "../support/runtime.js";

const WIDTH = 30;

/**
 * Added to every send on the emulator, so that a send stays in flight long enough for the sends of the
 * invocation's other records to join it, whatever the load. moto answers SQS in a few milliseconds but
 * serializes DynamoDB: on a loaded machine the parents of one invocation complete hundreds of
 * milliseconds apart, each send is over before the next parent's comes, and nothing is grouped — a slow
 * machine, not a regression. (Measured under two CPU hogs: with no added latency 27–30 calls for 30
 * parents, failing now and then; with 250 ms, 13–19.)
 */
const SEND_LATENCY_MS = 500;

describe.each(BACKEND_KINDS)("task sends of one invocation end to end (%s)", PATIENT, (kind) => {
  let runtime: LocalRuntime;
  let api: ApiClient;
  /** Messages per queue send call of the workers, after the entry's. */
  const sends: number[] = [];

  beforeAll(async () => {
    const countSends = (ports: EnginePorts): EnginePorts => ({
      ...ports,
      queue: {
        send: async (messages, options) => {
          sends.push(messages.length);
          if (kind !== "memory") await new Promise((resolve) => setTimeout(resolve, SEND_LATENCY_MS));
          return ports.queue.send(messages, options);
        },
      },
    });
    runtime = await startRuntime(kind, { concurrency: 2, wrapPorts: countSends });
    api = apiClient(runtime.url);
  });
  afterAll(async () => {
    await runtime?.stop();
  });

  it(`sends the children of ${WIDTH} parents completing together in fewer calls than parents`, async () => {
    // Each parent has two direct children: one runs in the parent's invocation (continuation),
    // the other is sent. So the parents send WIDTH children, from concurrent records.
    const parents = Array.from({ length: WIDTH }, (_, i) => `p${i}`);
    const definition = {
      name: `batched-sends-${kind}`,
      nodes: [
        { id: "start", type: "noop" },
        ...parents.map((id) => ({ id, type: "noop", dependsOn: ["start"] })),
        ...parents.flatMap((id) => [
          { id: `${id}-kept`, type: "noop", dependsOn: [id] },
          { id: `${id}-sent`, type: "noop", dependsOn: [id] },
        ]),
      ],
    };
    expect((await api.call("POST", "/workflows", definition)).status).toBe(201);
    sends.length = 0;
    const started = await api.call("POST", "/executions", { workflow: definition.name });
    expect(started.status).toBe(202);
    const view = await api.waitForEnd(started.body.executionId);
    expect(view.status).toBe("SUCCEEDED");
    const events = await api.call("GET", `/executions/${started.body.executionId}/events?limit=1000`);
    const completed = events.body.events.filter((e: { type: string }) => e.type === "NodeCompleted");
    expect(completed).toHaveLength(1 + 3 * WIDTH); // every node once

    // The entry and start's children aside, the children sent by parents of one batch went
    // together: fewer calls than parents, some carrying several messages.
    const [, startsChildren, ...byParents] = sends;
    expect(startsChildren).toBe(WIDTH - 1); // one runs in start's invocation
    expect(byParents.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(WIDTH);
    expect(byParents.length).toBeLessThan(WIDTH);
    expect(Math.max(...byParents)).toBeGreaterThan(1);
  });
});
