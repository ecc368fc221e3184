/**
 * An execution's node shards (domain/node-shards.ts) are decided from its graph when it is created
 * and kept on its record: absent for a small graph (its keys those of before), 16 for a graph of
 * more than 64 nodes or with a `map`. Executions of each kind run to their end on each backend
 * (on DynamoDB, their nodes over 16 partitions: test/contract/store.test.ts looks at the table).
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { BACKEND_KINDS, createBackend } from "../support/backends.js";
import { runToEnd } from "../support/harness.js";
import { PATIENT } from "../support/progress.js";

const small = (name: string) => ({
  name,
  nodes: [
    { id: "a", type: "pass", params: { value: 1 } },
    { id: "b", type: "pass", params: { value: 2 }, dependsOn: ["a"] },
  ],
});

/** 1 → 70 → merge: 72 nodes. */
const fanOut = (name: string) => ({
  name,
  nodes: [
    { id: "root", type: "pass", params: { value: 0 } },
    ...Array.from({ length: 70 }, (_, i) => ({
      id: `w${i}`,
      type: "pass",
      params: { value: i },
      dependsOn: ["root"],
    })),
    { id: "join", type: "merge", dependsOn: Array.from({ length: 70 }, (_, i) => `w${i}`) },
  ],
});

const map = (name: string) => ({
  name,
  nodes: [
    { id: "list", type: "pass", params: { value: Array.from({ length: 40 }, (_, i) => i) } },
    {
      id: "each",
      type: "map",
      dependsOn: ["list"],
      params: {
        items: "{% deps.list %}",
        task: { type: "pass", params: { value: "{% $item * 2 %}" } },
        maxConcurrency: 8,
      },
    },
  ],
});

describe.each(BACKEND_KINDS)("node shards of an execution (%s)", PATIENT, (kind) => {
  it("are kept on the record from its graph, and wide executions run to their end", async () => {
    const backend = await createBackend(kind);
    try {
      const { engine, store, consumer } = backend;
      const started: Record<string, string> = {};
      for (const [label, definition] of Object.entries({ small, fanOut, map })) {
        const name = `${label}-${randomUUID().slice(0, 8)}`;
        await engine.registerWorkflow(definition(name));
        started[label] = (await engine.createExecution({ workflow: name })).executionId;
      }
      const shards = async (id: string) => (await store.getExecution(id))?.nodeShards;
      expect(await shards(started.small!)).toBeUndefined();
      expect(await shards(started.fanOut!)).toBe(16);
      expect(await shards(started.map!)).toBe(16);

      for (const id of Object.values(started))
        expect(await runToEnd(engine, consumer, store, id)).toBe("SUCCEEDED");
      expect(await store.listNodes(started.fanOut!)).toHaveLength(72);
      const join = await store.getNode(started.fanOut!, "join");
      expect(join?.status).toBe("COMPLETED");
      const items = await store.listMapItems(started.map!, "each", 1);
      expect(items.map((item) => item.nodeId).sort()).toEqual(
        Array.from({ length: 40 }, (_, i) => `each[1.${i}]`).sort(),
      );
      expect(items.every((item) => item.status === "COMPLETED")).toBe(true);
      const view = await engine.describeExecution(started.map!);
      expect(view.output).toEqual({ each: Array.from({ length: 40 }, (_, i) => i * 2) });
    } finally {
      await backend.cleanup();
    }
  });
});
