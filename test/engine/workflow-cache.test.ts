/**
 * Workflow versions are kept in the process (engine/workflow-cache.ts): a start of a version this
 * process has seen reads no definition item, a registration in the process is used by its next
 * start at once, and a name's latest version seen a moment ago (WEFT_WORKFLOW_HEAD_CACHE_MS) is
 * always one that exists. Counted through a wrapper of the store, on each backend.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { systemClock } from "../../shared/adapters/system.js";
import { Engine } from "../../shared/engine/engine.js";
import { DEFAULT_WORKFLOW_HEAD_TTL_MS } from "../../shared/engine/workflow-cache.js";
import type { Clock, Store } from "../../shared/ports.js";
import { createTaskRegistry } from "../../shared/tasks/builtins.js";
import { BACKEND_KINDS, type Backend, createBackend } from "../support/backends.js";
import { runToEnd } from "../support/harness.js";
import { PATIENT } from "../support/progress.js";

/** Every getWorkflowVersion call: the version asked, or "head" for none. */
function countingReads(reads: Array<number | "head">) {
  return (store: Store): Store =>
    new Proxy(store, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (typeof value !== "function") return value;
        if (property === "getWorkflowVersion")
          return (name: string, version?: number) => {
            reads.push(version ?? "head");
            return target.getWorkflowVersion(name, version);
          };
        return value.bind(target);
      },
    });
}

/** The system's time, moved forward by hand. */
function steppedClock(): Clock & { advance(ms: number): void } {
  let offset = 0;
  return {
    now: () => systemClock.now() + offset,
    sleep: (ms, signal) => systemClock.sleep(ms, signal),
    advance: (ms) => {
      offset += ms;
    },
  };
}

const definition = (name: string, value: string) => ({
  name,
  nodes: [
    { id: "a", type: "pass", params: { value } },
    { id: "b", type: "pass", params: { value }, dependsOn: ["a"] },
    { id: "c", type: "pass", params: { value }, dependsOn: ["b"] },
  ],
});

/** Another process on the same table: its own engine, and so its own cache. */
function otherProcess(backend: Backend, clock: Clock): Engine {
  const { store, blobs, queue } = backend;
  const ids = { executionId: randomUUID, token: randomUUID, random: Math.random };
  return new Engine(
    { store, blobs, queue, events: { publish: async () => {} }, clock, ids },
    createTaskRegistry([]),
  );
}

describe.each(BACKEND_KINDS)("workflow versions kept in the process (%s)", PATIENT, (kind) => {
  it("a second start of a version reads no definition item, with or without `version`", async () => {
    const reads: Array<number | "head"> = [];
    const backend = await createBackend(kind, { wrapStore: countingReads(reads) });
    try {
      const { engine, store, consumer } = backend;
      const name = `cached-${randomUUID()}`;
      const { version } = await engine.registerWorkflow(definition(name, "v1"));

      const first = await engine.createExecution({ workflow: name, version });
      expect(await runToEnd(engine, consumer, store, first.executionId)).toBe("SUCCEEDED");
      reads.length = 0;
      const again = await engine.createExecution({ workflow: name, version });
      const latest = await engine.createExecution({ workflow: name });
      expect(reads).toEqual([]);
      // Running them (dispatch, three nodes each) reads no definition either: the compiled graph is kept.
      for (const { executionId } of [again, latest])
        expect(await runToEnd(engine, consumer, store, executionId)).toBe("SUCCEEDED");
      expect(reads).toEqual([]);
      expect((await store.getExecution(latest.executionId))?.version).toBe(version);
    } finally {
      await backend.cleanup();
    }
  });

  it("registering v2 makes the next start in the same process use v2, at once", async () => {
    const reads: Array<number | "head"> = [];
    const backend = await createBackend(kind, { wrapStore: countingReads(reads) });
    try {
      const { engine, store } = backend;
      const name = `next-${randomUUID()}`;
      await engine.registerWorkflow(definition(name, "v1"));
      const v1 = await engine.createExecution({ workflow: name, start: false });
      const registered = await engine.registerWorkflow(definition(name, "v2"));
      expect(registered).toMatchObject({ version: 2, created: true });
      const v2 = await engine.createExecution({ workflow: name, start: false });
      expect((await store.getExecution(v1.executionId))?.version).toBe(1);
      expect((await store.getExecution(v2.executionId))?.version).toBe(2);
      // Registering the same content again changes nothing; the latest stays v2.
      expect(await engine.registerWorkflow(definition(name, "v1"))).toMatchObject({
        version: 1,
        created: false,
      });
      const still = await engine.createExecution({ workflow: name, start: false });
      expect((await store.getExecution(still.executionId))?.version).toBe(2);
    } finally {
      await backend.cleanup();
    }
  });

  it("a HEAD seen a moment ago names a version that exists; an explicit version never reads HEAD", async () => {
    const reads: Array<number | "head"> = [];
    const clock = steppedClock();
    const backend = await createBackend(kind, { wrapStore: countingReads(reads), clock });
    try {
      const { engine, store, consumer } = backend;
      const elsewhere = otherProcess(backend, clock);
      const name = `stale-${randomUUID()}`;
      await engine.registerWorkflow(definition(name, "v1"));
      const first = await engine.createExecution({ workflow: name, start: false });
      expect((await store.getExecution(first.executionId))?.version).toBe(1);

      // Another process registers v2 and v3: within the HEAD's time this one still starts v1,
      // which exists and runs to its end.
      await elsewhere.registerWorkflow(definition(name, "v2"));
      await elsewhere.registerWorkflow(definition(name, "v3"));
      reads.length = 0;
      const stale = await engine.createExecution({ workflow: name });
      expect((await store.getExecution(stale.executionId))?.version).toBe(1);
      expect(await runToEnd(engine, consumer, store, stale.executionId)).toBe("SUCCEEDED");
      expect(reads).toEqual([]);

      // An explicit version is read as itself, never through HEAD; one not registered is a 404,
      // and is not remembered as missing.
      const explicit = await engine.createExecution({ workflow: name, version: 3, start: false });
      expect((await store.getExecution(explicit.executionId))?.version).toBe(3);
      await expect(engine.createExecution({ workflow: name, version: 4 })).rejects.toMatchObject({
        code: "NotFound",
      });
      expect(reads).toEqual([3, 4]);
      await elsewhere.registerWorkflow(definition(name, "v4"));
      const fourth = await engine.createExecution({ workflow: name, version: 4, start: false });
      expect((await store.getExecution(fourth.executionId))?.version).toBe(4);

      // Past the HEAD's time the latest is read again.
      clock.advance(DEFAULT_WORKFLOW_HEAD_TTL_MS + 1);
      const fresh = await engine.createExecution({ workflow: name, start: false });
      expect((await store.getExecution(fresh.executionId))?.version).toBe(4);
      // GET /workflows/{name} shows the latest as stored, whatever the starts' HEAD.
      await elsewhere.registerWorkflow(definition(name, "v5"));
      expect((await engine.getWorkflow(name)).version).toBe(5);
    } finally {
      await backend.cleanup();
    }
  });
});
