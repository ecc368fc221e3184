/**
 * The worker reads its execution and its dependencies' outputs eventually consistently (half the
 * read units) and reads again strongly what a lagging replica may have missed (engine/reads.ts).
 * Here the replica has missed everything: every eventually consistent read answers as the item was
 * before its latest write. The run must still succeed with every input intact, on each backend.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { ExecutionRecord, NodeRecord } from "../../shared/domain/records.js";
import type { Consistency, Store } from "../../shared/ports.js";
import { defineTask } from "../../shared/tasks/task-type.js";
import { BACKEND_KINDS, createBackend } from "../support/backends.js";
import { runToEnd } from "../support/harness.js";
import { PATIENT } from "../support/progress.js";

/** A task node that reports the dependency outputs it was given. */
const echoDeps = defineTask({
  type: "echo-deps",
  params: z.object({}).strict(),
  run: ({ deps }) => deps,
});

/**
 * A store whose eventually consistent reads answer from a replica that lags one write behind on
 * every item: the execution just created is missing, a node just completed is still RUNNING.
 */
function laggingReplica(reads: { eventual: number }) {
  const earlier = new Map<string, ExecutionRecord | NodeRecord | undefined>();
  return (store: Store): Store =>
    new Proxy(store, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (typeof value !== "function") return value;
        if (property === "getExecution")
          return async (executionId: string, consistency?: Consistency) => {
            const latest = await target.getExecution(executionId);
            if (consistency !== "eventual") return latest;
            reads.eventual++;
            const key = `e/${executionId}`;
            // First seen: the replica has nothing yet. Later: the version seen before the latest.
            const answer = earlier.has(key) ? earlier.get(key) : undefined;
            earlier.set(key, latest);
            return answer as ExecutionRecord | undefined;
          };
        if (property === "getNodes")
          return async (executionId: string, nodeIds: readonly string[], consistency?: Consistency) => {
            const latest = await target.getNodes(executionId, nodeIds);
            if (consistency !== "eventual") return latest;
            reads.eventual++;
            // Every node still as it was before its completion: RUNNING.
            return latest.map((record) => ({ ...record, status: "RUNNING", output: undefined }));
          };
        return value.bind(target);
      },
    });
}

describe.each(BACKEND_KINDS)("eventually consistent reads (%s)", PATIENT, (kind) => {
  it("a replica that missed the execution's creation and every completion changes nothing: the worker reads again strongly", async () => {
    const reads = { eventual: 0 };
    const backend = await createBackend(kind, { tasks: [echoDeps], wrapStore: laggingReplica(reads) });
    try {
      const { engine, store, consumer } = backend;
      await engine.registerWorkflow({
        name: "lagging-replica",
        nodes: [
          { id: "a", type: "pass", params: { value: "from a" } },
          { id: "b", type: "pass", params: { value: "from b" } },
          // A join (task node, several parents, `all`) and a direct child of one parent.
          { id: "both", type: "echo-deps", params: {}, dependsOn: ["a", "b"] },
          { id: "after", type: "echo-deps", params: {}, dependsOn: ["both"] },
        ],
      });
      const { executionId } = await engine.createExecution({ workflow: "lagging-replica" });
      expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED");

      const nodes = new Map((await store.listNodes(executionId)).map((n) => [n.nodeId, n]));
      expect(nodes.get("both")?.output).toEqual({ json: '{"a":"from a","b":"from b"}' });
      expect(nodes.get("after")?.output).toEqual({ json: '{"both":{"a":"from a","b":"from b"}}' });
      for (const id of ["a", "b", "both", "after"]) expect(nodes.get(id)?.attempt).toBe(1);
      // The worker did read eventually (an execution read for each of the 4 tasks, a dependency
      // read for `both` and for `after`), so every answer above went through a replica that was
      // wrong and was read again.
      expect(reads.eventual).toBeGreaterThanOrEqual(6);
    } finally {
      await backend.cleanup();
    }
  });
});
