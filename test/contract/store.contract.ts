/**
 * The Store contract: the semantics documented in shared/ports.ts and shared/domain/records.ts,
 * checked the same way against every adapter (store.test.ts runs it on each).
 */
import { createHash, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WorkflowDefinition } from "../../shared/domain/definition.js";
import type { Payload } from "../../shared/domain/payload.js";
import type { ReadyTask } from "../../shared/domain/placement.js";
import type {
  DeadLetterRecord,
  ExecutionRecord,
  ExecutionStatus,
  HistoryEvent,
  NodeRecord,
  WorkflowVersionRecord,
} from "../../shared/domain/records.js";
import type { ExecutionQuery, KeyedRequest, Store } from "../../shared/ports.js";

/** A value as the engine hands it to the store: exact JSON text. */
const pl = (value: unknown): Payload => ({ json: JSON.stringify(value) });
const blobRef = (n: number): Payload => ({
  blob: { key: `ex/e/${"0".repeat(63)}${n}.json`, sha256: `${"0".repeat(63)}${n}`, bytes: 10_000 + n },
});

/** What a keyed request asked (its input's digest is a stand-in: the store only keeps it). */
const keyed = (input: string, start: boolean): KeyedRequest => ({
  inputSha256: createHash("sha256").update(input).digest("hex"),
  start,
});

export type StoreFactory = () => Promise<{
  store: Store;
  cleanup?: () => Promise<void>;
  /** The shard a store keeps an offer in (keys.ts offerShard); none: one list per pool. */
  offerShard?: (task: ReadyTask) => number;
}>;

const uid = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

function definition(name: string, nodeCount = 2): WorkflowDefinition {
  return {
    name,
    nodes: Array.from({ length: nodeCount }, (_, i) => ({
      id: `n${i}`,
      type: "echo",
      params: { value: i },
      ...(i > 0 ? { dependsOn: [`n${i - 1}`] } : {}),
    })),
  };
}

function versionRecord(name: string, version: number, hash: string): WorkflowVersionRecord {
  return {
    name,
    version,
    definitionHash: hash,
    definition: definition(name, version + 1),
    createdAt: 1_700_000_000_000,
  };
}

function execution(overrides: Partial<ExecutionRecord> = {}): ExecutionRecord {
  return {
    executionId: randomUUID(),
    workflow: "wf",
    version: 1,
    status: "PENDING",
    input: pl({ hello: "world", list: [1, 2, 3] }),
    createdAt: 1_700_000_000_000,
    sinksDone: [],
    ...overrides,
  };
}

const event = (at: number, type: string, extra: Partial<HistoryEvent> = {}): HistoryEvent => ({
  at,
  type,
  ...extra,
});

async function collectPages(store: Store, query: Omit<ExecutionQuery, "next">): Promise<ExecutionRecord[][]> {
  const pages: ExecutionRecord[][] = [];
  let next: string | undefined;
  for (let guard = 0; guard < 100; guard++) {
    const page = await store.listExecutions({ ...query, next });
    expect(page.items.length).toBeLessThanOrEqual(query.limit);
    pages.push(page.items);
    next = page.next;
    if (next === undefined) return pages;
  }
  throw new Error("listExecutions never stopped paging");
}

const sortById = (nodes: NodeRecord[]) => [...nodes].sort((a, b) => a.nodeId.localeCompare(b.nodeId));

export function describeStoreContract(label: string, makeStore: StoreFactory): void {
  describe(`Store contract: ${label}`, () => {
    let store: Store;
    let cleanup: (() => Promise<void>) | undefined;

    beforeAll(async () => {
      ({ store, cleanup } = await makeStore());
    });
    afterAll(async () => {
      await cleanup?.();
    });

    // ── workflows ───────────────────────────────────────────────────────────────────────────────

    describe("workflow versions", () => {
      it("creates version 1 and finds it by version, as latest, and by hash", async () => {
        const name = uid("wf");
        const v1 = versionRecord(name, 1, "hash-1");
        expect(await store.putWorkflowVersion(v1)).toBe("created");
        expect(await store.getWorkflowVersion(name, 1)).toEqual(v1);
        expect(await store.getWorkflowVersion(name)).toEqual(v1);
        expect(await store.findWorkflowVersionByHash(name, "hash-1")).toBe(1);
      });

      it("answers undefined for unknown names, versions and hashes", async () => {
        const name = uid("wf");
        expect(await store.getWorkflowVersion(name)).toBeUndefined();
        expect(await store.getWorkflowVersion(name, 1)).toBeUndefined();
        expect(await store.findWorkflowVersionByHash(name, "nope")).toBeUndefined();
        await store.putWorkflowVersion(versionRecord(name, 1, "h1"));
        expect(await store.getWorkflowVersion(name, 2)).toBeUndefined();
        expect(await store.findWorkflowVersionByHash(name, "nope")).toBeUndefined();
        expect(await store.findWorkflowVersionByHash(uid("other"), "h1")).toBeUndefined();
      });

      it("adds versions in sequence and refuses a repeat, a gap, or a known hash", async () => {
        const name = uid("wf");
        expect(await store.putWorkflowVersion(versionRecord(name, 1, "h1"))).toBe("created");
        expect(await store.putWorkflowVersion(versionRecord(name, 1, "h1-again"))).toBe("conflict");
        expect(await store.putWorkflowVersion(versionRecord(name, 3, "h3"))).toBe("conflict");
        expect(await store.putWorkflowVersion(versionRecord(name, 2, "h1"))).toBe("conflict");
        const v2 = versionRecord(name, 2, "h2");
        expect(await store.putWorkflowVersion(v2)).toBe("created");
        expect(await store.putWorkflowVersion(versionRecord(name, 2, "h2b"))).toBe("conflict");

        expect(await store.getWorkflowVersion(name)).toEqual(v2);
        expect((await store.getWorkflowVersion(name, 1))?.definitionHash).toBe("h1");
        expect(await store.findWorkflowVersionByHash(name, "h2")).toBe(2);
        expect(await store.findWorkflowVersionByHash(name, "h1-again")).toBeUndefined();
        expect(await store.findWorkflowVersionByHash(name, "h3")).toBeUndefined();
      });

      it("keeps names apart", async () => {
        const a = uid("wf-a");
        const b = uid("wf-b");
        expect(await store.putWorkflowVersion(versionRecord(a, 1, "same"))).toBe("created");
        expect(await store.putWorkflowVersion(versionRecord(b, 1, "same"))).toBe("created");
        expect(await store.findWorkflowVersionByHash(b, "same")).toBe(1);
      });

      it("lets exactly one of several concurrent writers of the same version win", async () => {
        const name = uid("wf");
        const results = await Promise.all(
          Array.from({ length: 8 }, (_, i) => store.putWorkflowVersion(versionRecord(name, 1, `h${i}`))),
        );
        expect(results.filter((r) => r === "created")).toHaveLength(1);
        const winner = results.indexOf("created");
        expect((await store.getWorkflowVersion(name))?.definitionHash).toBe(`h${winner}`);
      });
    });

    // ── executions ──────────────────────────────────────────────────────────────────────────────

    describe("executions", () => {
      it("creates an execution without an idempotency key and reads it back", async () => {
        const record = execution({ deadline: 1_800_000_000_000 });
        expect(await store.createExecution(record, event(1, "ExecutionCreated"))).toEqual({ created: true });
        expect(await store.getExecution(record.executionId)).toEqual(record);
        expect(await store.getExecution(randomUUID())).toBeUndefined();
      });

      it("round-trips inputs of any JSON shape, null included", async () => {
        for (const input of [
          pl(null),
          pl(0),
          { json: "-0" },
          { json: "1e400" },
          pl(""),
          pl("text"),
          pl([1, "two", null, { three: 3 }]),
          pl({ nested: { a: [], b: {} }, "": 1, __proto__x: 2 }),
          { json: '{"__proto__":{"constructor":1},"":[]}' },
          blobRef(1),
          { parts: [["a", pl(1)] as [string, Payload], ["b", blobRef(2)] as [string, Payload]] },
        ] satisfies Payload[]) {
          const record = execution({ input });
          await store.createExecution(record, event(1, "ExecutionCreated"));
          expect((await store.getExecution(record.executionId))?.input).toEqual(input);
        }
      });

      it("with a used idempotency key returns the existing execution and what its request asked, and writes nothing", async () => {
        const key = uid("idem");
        const first = execution({ idempotencyKey: key, input: pl({ n: 1 }) });
        const asked = keyed("a", false);
        expect(await store.createExecution(first, event(10, "ExecutionCreated"), asked)).toEqual({
          created: true,
        });

        const second = execution({
          idempotencyKey: key,
          input: pl({ n: 2 }),
          createdAt: first.createdAt + 5,
        });
        const result = await store.createExecution(
          second,
          event(20, "ExecutionCreated", { detail: { n: 2 } }),
          keyed("b", true),
        );
        // The store compares nothing: what the first request asked comes back for the engine to.
        expect(result).toEqual({ created: false, existing: first, keyed: asked });
        expect(await store.getExecution(second.executionId)).toBeUndefined();
        expect(await store.listHistory(second.executionId)).toEqual([]);
        expect(await store.listHistory(first.executionId)).toEqual([event(10, "ExecutionCreated")]);
      });

      it("scopes an idempotency key to its workflow: the same text under another workflow is another key", async () => {
        const key = uid("order");
        const x = execution({ workflow: uid("x"), idempotencyKey: key });
        const y = execution({ workflow: uid("y"), idempotencyKey: key });
        expect(await store.createExecution(x, event(1, "ExecutionCreated"), keyed("x", true))).toEqual({
          created: true,
        });
        expect(await store.createExecution(y, event(1, "ExecutionCreated"), keyed("y", true))).toEqual({
          created: true,
        });
        expect(await store.getExecution(x.executionId)).toEqual(x);
        expect(await store.getExecution(y.executionId)).toEqual(y);
        // Each key still returns its own workflow's execution.
        const again = await store.createExecution(
          execution({ workflow: y.workflow, idempotencyKey: key }),
          event(2, "ExecutionCreated"),
          keyed("y", true),
        );
        expect(again).toEqual({ created: false, existing: y, keyed: keyed("y", true) });
      });

      it("under concurrent creates with one idempotency key, exactly one execution is created", async () => {
        const key = uid("idem");
        const records = Array.from({ length: 10 }, () => execution({ idempotencyKey: key }));
        const results = await Promise.all(
          records.map((r, i) => store.createExecution(r, event(1, "ExecutionCreated"), keyed(`${i}`, true))),
        );
        const winners = results.flatMap((r, i) => (r.created ? [i] : []));
        expect(winners).toHaveLength(1);
        const winner = winners[0]!;
        for (const result of results) {
          if ("existing" in result) {
            expect(result.existing.executionId).toBe(records[winner]!.executionId);
            expect(result.keyed).toEqual(keyed(`${winner}`, true));
          }
        }
        const stored = await Promise.all(records.map((r) => store.getExecution(r.executionId)));
        expect(stored.filter((r) => r !== undefined)).toHaveLength(1);
      });

      it("transitions only from the given statuses and returns the current record otherwise", async () => {
        const record = execution();
        await store.createExecution(record, event(1, "ExecutionCreated"));

        const started = await store.transitionExecution(
          record.executionId,
          ["PENDING"],
          { status: "RUNNING", startedAt: 100, input: pl({ replaced: true }) },
          event(100, "ExecutionStarted"),
        );
        expect(started).toEqual({
          ok: true,
          record: { ...record, status: "RUNNING", startedAt: 100, input: pl({ replaced: true }) },
        });

        const again = await store.transitionExecution(record.executionId, ["PENDING"], { status: "RUNNING" });
        expect(again.ok).toBe(false);
        expect(!again.ok && again.current?.status).toBe("RUNNING");

        const cancel = await store.transitionExecution(record.executionId, ["PENDING", "RUNNING"], {
          cancelRequested: { reason: "user", at: 150 },
        });
        expect(cancel.ok && cancel.record.cancelRequested).toEqual({ reason: "user", at: 150 });
        expect(cancel.ok && cancel.record.status).toBe("RUNNING");

        const failed = await store.transitionExecution(record.executionId, ["RUNNING"], {
          status: "FAILED",
          error: { name: "Boom", message: "it broke", retryable: false },
          finishedAt: 200,
        });
        expect(failed.ok).toBe(true);
        const stored = await store.getExecution(record.executionId);
        expect(stored).toMatchObject({
          status: "FAILED",
          error: { name: "Boom", message: "it broke", retryable: false },
          finishedAt: 200,
          startedAt: 100,
          cancelRequested: { reason: "user", at: 150 },
          workflow: record.workflow,
          version: record.version,
        });

        const late = await store.transitionExecution(record.executionId, ["RUNNING"], {
          status: "SUCCEEDED",
        });
        expect(late).toEqual({ ok: false, current: stored });
      });

      it("refuses a transition of an unknown execution with no current record", async () => {
        expect(await store.transitionExecution(randomUUID(), ["PENDING"], { status: "RUNNING" })).toEqual({
          ok: false,
          current: undefined,
        });
      });

      it("records each sink once, only while RUNNING", async () => {
        const record = execution();
        await store.createExecution(record, event(1, "ExecutionCreated"));

        const early = await store.recordSinkDone(record.executionId, 0);
        expect(early.ok).toBe(false);
        expect(!early.ok && early.current?.sinksDone).toEqual([]);

        await store.transitionExecution(record.executionId, ["PENDING"], { status: "RUNNING", startedAt: 2 });
        const first = await store.recordSinkDone(record.executionId, 2);
        expect(first.ok && first.record.sinksDone).toEqual([2]);
        const repeat = await store.recordSinkDone(record.executionId, 2);
        expect(repeat.ok).toBe(false);
        expect(!repeat.ok && repeat.current?.sinksDone).toEqual([2]);
        const second = await store.recordSinkDone(record.executionId, 0);
        expect(second.ok && second.record.sinksDone).toEqual([0, 2]);

        await store.transitionExecution(record.executionId, ["RUNNING"], {
          status: "SUCCEEDED",
          finishedAt: 3,
        });
        const after = await store.recordSinkDone(record.executionId, 1);
        expect(after.ok).toBe(false);
        expect((await store.getExecution(record.executionId))?.sinksDone).toEqual([0, 2]);

        expect(await store.recordSinkDone(randomUUID(), 0)).toEqual({ ok: false, current: undefined });
      });

      it("records concurrent completions of distinct sinks all, and of the same sink once", async () => {
        const record = execution({ status: "RUNNING" });
        await store.createExecution(record, event(1, "ExecutionCreated"));
        const distinct = await Promise.all(
          Array.from({ length: 10 }, (_, i) => store.recordSinkDone(record.executionId, i)),
        );
        expect(distinct.every((r) => r.ok)).toBe(true);
        const same = await Promise.all(
          Array.from({ length: 10 }, () => store.recordSinkDone(record.executionId, 42)),
        );
        expect(same.filter((r) => r.ok)).toHaveLength(1);
        expect((await store.getExecution(record.executionId))?.sinksDone).toEqual([
          0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 42,
        ]);
      });
      it("removes execution fields patched with null (an input payload of null is a value)", async () => {
        const record = execution({ status: "RUNNING", startedAt: 10, sweepAt: 500 });
        await store.createExecution(record, event(1, "ExecutionCreated"));
        expect(await store.getExecution(record.executionId)).toEqual(record);

        const set = await store.transitionExecution(record.executionId, ["RUNNING"], {
          error: { name: "E", message: "m" },
          finishedAt: 20,
          cancelRequested: { reason: "user", at: 15 },
          sweepAt: 700,
        });
        expect(set).toEqual({
          ok: true,
          record: {
            ...record,
            error: { name: "E", message: "m" },
            finishedAt: 20,
            cancelRequested: { reason: "user", at: 15 },
            sweepAt: 700,
          },
        });

        const cleared = await store.transitionExecution(record.executionId, ["RUNNING"], {
          error: null,
          finishedAt: null,
          cancelRequested: null,
          sweepAt: null,
          input: pl(null),
        });
        const { sweepAt: _, ...withoutSweep } = record;
        const expected: ExecutionRecord = { ...withoutSweep, input: pl(null) };
        expect(cleared).toEqual({ ok: true, record: expected });
        const stored = await store.getExecution(record.executionId);
        expect(stored).toEqual(expected);
        for (const field of ["error", "finishedAt", "cancelRequested", "sweepAt"]) {
          expect(stored).not.toHaveProperty(field);
        }
        expect(stored).toHaveProperty("input", pl(null));

        // Removing what is not there is fine.
        const again = await store.transitionExecution(record.executionId, ["RUNNING"], { error: null });
        expect(again).toEqual({ ok: true, record: expected });
      });
    });

    // ── listing ─────────────────────────────────────────────────────────────────────────────────

    describe("listExecutions", () => {
      it("lists one workflow's executions newest first, filtered by status, in pages", async () => {
        const workflow = uid("listed");
        const statuses: ExecutionStatus[] = [
          "PENDING",
          "RUNNING",
          "SUCCEEDED",
          "RUNNING",
          "FAILED",
          "RUNNING",
          "PENDING",
        ];
        const records = statuses.map((status, i) =>
          execution({ workflow, status, createdAt: 1_700_000_000_000 + i * 1000 }),
        );
        for (const record of records)
          await store.createExecution(record, event(record.createdAt, "ExecutionCreated"));
        // Another workflow's executions never show up.
        await store.createExecution(
          execution({ workflow: uid("other"), createdAt: 1_700_000_003_500 }),
          event(1, "x"),
        );

        const newestFirst = [...records].reverse();
        const all = await store.listExecutions({ workflow, limit: 50 });
        expect(all.items).toEqual(newestFirst);
        expect(all.next).toBeUndefined();

        const pages = await collectPages(store, { workflow, limit: 3 });
        expect(pages.flat()).toEqual(newestFirst);
        expect(pages[0]).toHaveLength(3);

        const running = await collectPages(store, { workflow, status: "RUNNING", limit: 2 });
        expect(running.flat().map((r) => r.executionId)).toEqual(
          newestFirst.filter((r) => r.status === "RUNNING").map((r) => r.executionId),
        );

        expect((await store.listExecutions({ workflow, status: "CANCELLED", limit: 5 })).items).toEqual([]);
        expect((await store.listExecutions({ workflow: uid("none"), limit: 5 })).items).toEqual([]);
      });

      it("shows status changes in the listing", async () => {
        const workflow = uid("listed");
        const record = execution({ workflow });
        await store.createExecution(record, event(1, "ExecutionCreated"));
        await store.transitionExecution(record.executionId, ["PENDING"], { status: "RUNNING", startedAt: 5 });
        const page = await store.listExecutions({ workflow, status: "RUNNING", limit: 5 });
        expect(page.items).toEqual([{ ...record, status: "RUNNING", startedAt: 5 }]);
        expect((await store.listExecutions({ workflow, status: "PENDING", limit: 5 })).items).toEqual([]);
      });

      it("lists all registered workflows' executions newest first, filtered by status, in pages", async () => {
        const fresh = await makeStore();
        try {
          const s = fresh.store;
          // The listing of all executions merges every registered workflow's (the DynamoDB store
          // knows them from its workflow listing).
          for (const name of ["alpha", "beta"])
            await s.putWorkflowVersion({
              name,
              version: 1,
              definitionHash: `hash-${name}`,
              definition: { name, nodes: [{ id: "a", type: "noop" }] },
              createdAt: 1_699_000_000_000,
            });
          const records = Array.from({ length: 23 }, (_, i) =>
            execution({
              workflow: i % 3 === 0 ? "alpha" : "beta",
              status: i % 4 === 0 ? "SUCCEEDED" : "RUNNING",
              createdAt: 1_700_000_000_000 + i * 10,
            }),
          );
          await Promise.all(records.map((r) => s.createExecution(r, event(r.createdAt, "ExecutionCreated"))));
          const newestFirst = [...records].reverse();

          const pages = await collectPages(s, { limit: 5 });
          expect(pages.flat()).toEqual(newestFirst);
          expect(pages[0]).toHaveLength(5);

          const succeeded = await collectPages(s, { status: "SUCCEEDED", limit: 4 });
          expect(succeeded.flat()).toEqual(newestFirst.filter((r) => r.status === "SUCCEEDED"));

          const alphaRunning = await collectPages(s, { workflow: "alpha", status: "RUNNING", limit: 2 });
          expect(alphaRunning.flat()).toEqual(
            newestFirst.filter((r) => r.workflow === "alpha" && r.status === "RUNNING"),
          );
        } finally {
          await fresh.cleanup?.();
        }
      });
    });

    // ── nodes ───────────────────────────────────────────────────────────────────────────────────

    describe("map items", () => {
      it("keeps a map's items apart from the nodes: listed per map attempt, in the history only on request", async () => {
        const id = randomUUID();
        const write = (nodeId: string, status: "QUEUED" | "RUNNING", at: number) =>
          store.transitionNode(
            id,
            nodeId,
            { status: ["PENDING"] },
            { status, attempt: 1, queuedAt: at, composite: { kind: "workflow", executionId: `child-${at}` } },
            event(at, "NodeQueued", { nodeId, attempt: 1 }),
          );
        await write("m", "RUNNING", 1);
        await write("m[1.0]", "QUEUED", 2);
        await write("m[1.1]", "RUNNING", 3);
        await write("m[2.0]", "QUEUED", 4);
        await write("mm[1.0]", "QUEUED", 5);
        expect((await store.listNodes(id)).map((n) => n.nodeId)).toEqual(["m"]);
        const items = await store.listMapItems(id, "m", 1);
        expect(items.map((n) => n.nodeId).sort()).toEqual(["m[1.0]", "m[1.1]"]);
        expect(items.find((n) => n.nodeId === "m[1.1]")).toMatchObject({
          status: "RUNNING",
          queuedAt: 3,
          composite: { kind: "workflow", executionId: "child-3" },
        });
        const progress = await store.listMapItems(id, "m", 1, { statusOnly: true });
        expect(progress.map((n) => [n.nodeId, n.status, n.attempt]).sort()).toEqual([
          ["m[1.0]", "QUEUED", 1],
          ["m[1.1]", "RUNNING", 1],
        ]);
        expect(await store.listMapItems(id, "m", 2)).toHaveLength(1);
        expect(await store.getNodes(id, ["m[1.1]", "m"])).toHaveLength(2);
        expect((await store.listHistory(id)).map((e) => e.nodeId)).toEqual(["m"]);
        expect((await store.listHistory(id, { withItems: true })).map((e) => e.nodeId)).toEqual([
          "m",
          "m[1.0]",
          "m[1.1]",
          "m[2.0]",
          "mm[1.0]",
        ]);
        // A null composite removes it.
        const cleared = await store.transitionNode(id, "m", { status: ["RUNNING"] }, { composite: null });
        expect(cleared.ok && cleared.record.composite).toBe(undefined);
      });
    });

    describe("fan-out budget", () => {
      const child = (root: string, key: string) =>
        execution({
          rootExecutionId: root,
          idempotencyKey: key,
          parent: { executionId: root, nodeId: "n", attempt: 1 },
          depth: 1,
        });
      const budget = (limit: number) => ({ limit, now: 1_700_000_000_000 });

      it("counts a child against its root with its create, once per key, and refuses it past the limit", async () => {
        const root = randomUUID();
        const first = child(root, uid("k"));
        expect(
          await store.createExecution(first, event(1, "ExecutionStarted"), keyed("a", true), budget(2)),
        ).toEqual({
          created: true,
        });
        // A repeat of the same child (its key taken) counts nothing.
        const again = await store.createExecution(
          { ...child(root, first.idempotencyKey!) },
          event(1, "ExecutionStarted"),
          keyed("a", true),
          budget(2),
        );
        expect("existing" in again && again.existing.executionId).toBe(first.executionId);
        expect(await store.getFanOut(root)).toEqual({ descendants: 1, mapItemsInFlight: 0 });
        expect(
          (
            await store.createExecution(
              child(root, uid("k")),
              event(1, "ExecutionStarted"),
              keyed("b", true),
              budget(2),
            )
          ).created,
        ).toBe(true);
        const third = child(root, uid("k"));
        expect(
          await store.createExecution(third, event(1, "ExecutionStarted"), keyed("c", true), budget(2)),
        ).toEqual({
          created: false,
          overBudget: true,
        });
        // Refused: nothing written, not even its key.
        expect(await store.getExecution(third.executionId)).toBeUndefined();
        expect(await store.getFanOut(root)).toEqual({ descendants: 2, mapItemsInFlight: 0 });
        // A repeat of a counted child is still found when the budget is full.
        const repeat = await store.createExecution(
          child(root, first.idempotencyKey!),
          event(1, "ExecutionStarted"),
          keyed("a", true),
          budget(2),
        );
        expect("existing" in repeat && repeat.existing.executionId).toBe(first.executionId);
        expect((await store.getExecution(first.executionId))?.rootExecutionId).toBe(root);
      });

      it("counts racing creates of distinct children exactly up to the limit", async () => {
        const root = randomUUID();
        const results = await Promise.all(
          Array.from({ length: 8 }, (_, i) =>
            store.createExecution(
              child(root, uid("race")),
              event(1, "ExecutionStarted"),
              keyed(`${i}`, true),
              budget(5),
            ),
          ),
        );
        expect(results.filter((r) => r.created)).toHaveLength(5);
        expect(results.filter((r) => "overBudget" in r)).toHaveLength(3);
        expect((await store.getFanOut(root)).descendants).toBe(5);
      });

      it("reserves map items once per key within the limit, and gives each back once", async () => {
        const root = randomUUID();
        const exec = randomUUID();
        const now = 1_700_000_000_000;
        const reservation = (key: string, units: number) => ({
          rootExecutionId: root,
          executionId: exec,
          key,
          units,
        });
        expect(await store.reserveMapItems(reservation("m[1]", 3), 5, now)).toEqual({ ok: true });
        // A repeat is kept, counted once.
        expect(await store.reserveMapItems(reservation("m[1]", 3), 5, now)).toEqual({ ok: true });
        expect(await store.getFanOut(root)).toEqual({ descendants: 0, mapItemsInFlight: 3 });
        expect(await store.reserveMapItems(reservation("n[1]", 3), 5, now)).toEqual({
          ok: false,
          inFlight: 3,
        });
        expect(await store.reserveMapItems(reservation("n[1]", 2), 5, now)).toEqual({ ok: true });
        expect(
          (await store.listMapItemReservations(exec)).map((r) => [r.key, r.units, r.rootExecutionId]).sort(),
        ).toEqual([
          ["m[1]", 3, root],
          ["n[1]", 2, root],
        ]);
        expect(await store.getFanOut(root)).toEqual({ descendants: 0, mapItemsInFlight: 5 });
        expect(await store.releaseMapItems(reservation("m[1]", 3))).toBe(true);
        expect(await store.releaseMapItems(reservation("m[1]", 3))).toBe(false);
        expect(await store.releaseMapItems(reservation("zz[1]", 1))).toBe(false);
        expect(await store.getFanOut(root)).toEqual({ descendants: 0, mapItemsInFlight: 2 });
        expect((await store.listMapItemReservations(exec)).map((r) => r.key)).toEqual(["n[1]"]);
        // The markers are not nodes, nor history.
        expect(await store.listNodes(exec)).toEqual([]);
        expect(await store.listHistory(exec, { withItems: true })).toEqual([]);
        expect(await store.getFanOut(randomUUID())).toEqual({ descendants: 0, mapItemsInFlight: 0 });
      });

      it("reserves only for the map attempt holding its lease, with no cancellation requested", async () => {
        const root = randomUUID();
        const exec = randomUUID();
        const reservation = { rootExecutionId: root, executionId: exec, key: "m[1]", units: 2 };
        const fence = { nodeId: "m", leaseToken: "t1" };
        expect(await store.reserveMapItems(reservation, 5, 1, fence)).toMatchObject({
          ok: false,
          fenced: true,
        });
        await store.transitionNode(
          exec,
          "m",
          { status: ["PENDING"] },
          { status: "RUNNING", attempt: 1, lease: { token: "t1", expiresAt: 9 } },
        );
        expect(await store.reserveMapItems(reservation, 5, 1, { ...fence, leaseToken: "t0" })).toMatchObject({
          ok: false,
          fenced: true,
        });
        expect(await store.getFanOut(root)).toEqual({ descendants: 0, mapItemsInFlight: 0 });
        expect(await store.reserveMapItems(reservation, 5, 1, fence)).toEqual({ ok: true });
        await store.transitionNode(exec, "m", { status: ["RUNNING"] }, { cancelRequested: true });
        expect(await store.reserveMapItems({ ...reservation, key: "m[2]" }, 5, 1, fence)).toMatchObject({
          fenced: true,
        });
        expect(await store.getFanOut(root)).toEqual({ descendants: 0, mapItemsInFlight: 2 });
      });

      it("reserves racing map attempts exactly up to the limit", async () => {
        const root = randomUUID();
        const results = await Promise.all(
          Array.from({ length: 6 }, (_, i) =>
            store.reserveMapItems(
              { rootExecutionId: root, executionId: randomUUID(), key: `m[${i + 1}]`, units: 2 },
              7,
              1,
            ),
          ),
        );
        expect(results.filter((r) => r.ok)).toHaveLength(3);
        expect((await store.getFanOut(root)).mapItemsInFlight).toBe(6);
      });
    });

    describe("nodes", () => {
      it("has no stored record for an untouched node", async () => {
        const id = randomUUID();
        expect(await store.getNode(id, "a")).toBeUndefined();
        expect(await store.getNodes(id, ["a", "b"])).toEqual([]);
        expect(await store.listNodes(id)).toEqual([]);
      });

      it("creates a missing node when the condition allows PENDING", async () => {
        const id = randomUUID();
        const result = await store.transitionNode(
          id,
          "a",
          { status: ["PENDING"], attempt: 0 },
          { status: "QUEUED", attempt: 1, queuedAt: 10 },
          event(10, "NodeQueued", { nodeId: "a", attempt: 1 }),
        );
        const expected: NodeRecord = {
          executionId: id,
          nodeId: "a",
          status: "QUEUED",
          attempt: 1,
          okDeps: [],
          badDeps: [],
          queuedAt: 10,
        };
        expect(result).toEqual({ ok: true, record: expected });
        expect(await store.getNode(id, "a")).toEqual(expected);
        expect(await store.listNodes(id)).toEqual([expected]);
      });

      it("a queue write can record the dependencies seen completed (a fan-in decided by reading)", async () => {
        const id = randomUUID();
        const result = await store.transitionNode(
          id,
          "j",
          { status: ["PENDING"] },
          { status: "QUEUED", attempt: 1, queuedAt: 10, okDeps: [3, 1] },
        );
        expect(result.ok && result.record.okDeps).toEqual([1, 3]);
        expect((await store.getNode(id, "j"))?.okDeps).toEqual([1, 3]);
        // The same write refused once the node left PENDING: the first decision stands.
        const again = await store.transitionNode(
          id,
          "j",
          { status: ["PENDING"] },
          { status: "QUEUED", attempt: 1, queuedAt: 20, okDeps: [2] },
        );
        expect(again).toMatchObject({ ok: false, current: { okDeps: [1, 3], queuedAt: 10 } });
        // An empty list (DynamoDB has no empty sets) leaves no dependencies.
        const none = await store.transitionNode(id, "k", { status: ["PENDING"] }, { okDeps: [] });
        expect(none.ok && none.record.okDeps).toEqual([]);
      });

      it("creating a missing node keeps status PENDING and attempt 0 unless patched", async () => {
        const id = randomUUID();
        const result = await store.transitionNode(
          id,
          "a",
          { status: ["PENDING"] },
          { cancelRequested: true },
        );
        expect(result).toEqual({
          ok: true,
          record: {
            executionId: id,
            nodeId: "a",
            status: "PENDING",
            attempt: 0,
            okDeps: [],
            badDeps: [],
            cancelRequested: true,
          },
        });
      });

      it("refuses to touch a missing node unless the condition allows PENDING", async () => {
        const id = randomUUID();
        for (const condition of [
          { status: ["QUEUED", "RUNNING"] as const },
          { status: ["PENDING"] as const, attempt: 1 },
          { status: ["PENDING"] as const, leaseToken: "t" },
          { status: ["PENDING"] as const, leaseExpiredBy: Number.MAX_SAFE_INTEGER },
        ]) {
          const result = await store.transitionNode(id, "a", condition, { status: "RUNNING" });
          expect(result).toEqual({ ok: false, current: undefined });
        }
        expect(await store.getNode(id, "a")).toBeUndefined();
      });

      it("refuses a write conditioned on notCancelRequested once cancellation was requested", async () => {
        const id = randomUUID();
        await store.transitionNode(id, "a", { status: ["PENDING"] }, { status: "QUEUED", attempt: 1 });
        await store.transitionNode(
          id,
          "a",
          { status: ["QUEUED"] },
          { status: "RUNNING", lease: { token: "t1", expiresAt: 5000 } },
        );
        const fenced = { status: ["RUNNING"] as const, leaseToken: "t1", notCancelRequested: true };
        // Not requested yet (the attribute is absent): allowed.
        const renewed = await store.transitionNode(id, "a", fenced, {
          lease: { token: "t1", expiresAt: 6000 },
        });
        expect(renewed.ok).toBe(true);
        await store.transitionNode(id, "a", { status: ["RUNNING"] }, { cancelRequested: true });
        const completion = await store.transitionNode(id, "a", fenced, {
          status: "COMPLETED",
          output: pl(1),
        });
        expect(completion.ok).toBe(false);
        expect(completion.ok ? undefined : completion.current).toMatchObject({
          status: "RUNNING",
          cancelRequested: true,
        });
        // Cleared again (a redrive): allowed.
        await store.transitionNode(id, "a", { status: ["RUNNING"] }, { cancelRequested: false });
        expect((await store.transitionNode(id, "a", fenced, { status: "COMPLETED", output: pl(1) })).ok).toBe(
          true,
        );
      });

      it("refuses a wrong status, attempt or lease token and returns the current record", async () => {
        const id = randomUUID();
        await store.transitionNode(
          id,
          "a",
          { status: ["PENDING"] },
          { status: "QUEUED", attempt: 1, queuedAt: 1 },
        );
        const claim = await store.transitionNode(
          id,
          "a",
          { status: ["QUEUED"], attempt: 1 },
          { status: "RUNNING", lease: { token: "t1", expiresAt: 5000 }, startedAt: 2 },
        );
        expect(claim.ok).toBe(true);
        const running = claim.ok ? claim.record : undefined;
        expect(running).toMatchObject({
          status: "RUNNING",
          attempt: 1,
          lease: { token: "t1", expiresAt: 5000 },
        });

        const refusals = [
          { status: ["QUEUED"] as const },
          { status: ["RUNNING"] as const, attempt: 2 },
          { status: ["RUNNING"] as const, leaseToken: "t2" },
          { status: ["RUNNING"] as const, leaseToken: "t1", attempt: 0 },
          { status: [] as const },
        ];
        for (const condition of refusals) {
          const result = await store.transitionNode(id, "a", condition, {
            status: "COMPLETED",
            output: pl(1),
          });
          expect(result).toEqual({ ok: false, current: running });
        }
        expect(await store.getNode(id, "a")).toEqual(running);

        const done = await store.transitionNode(
          id,
          "a",
          { status: ["RUNNING"], leaseToken: "t1", attempt: 1 },
          { status: "COMPLETED", output: pl({ ok: true }), lease: null, finishedAt: 3 },
        );
        expect(done.ok && done.record).toEqual({
          executionId: id,
          nodeId: "a",
          status: "COMPLETED",
          attempt: 1,
          okDeps: [],
          badDeps: [],
          queuedAt: 1,
          startedAt: 2,
          finishedAt: 3,
          output: pl({ ok: true }),
        });
      });

      it("refuses a write before notBefore is due (dueBy) and accepts it from then on", async () => {
        const id = randomUUID();
        await store.transitionNode(
          id,
          "a",
          { status: ["PENDING"] },
          { status: "QUEUED", attempt: 2, notBefore: 1000 },
        );
        const early = await store.transitionNode(
          id,
          "a",
          { status: ["QUEUED"], dueBy: 999 },
          { status: "RUNNING" },
        );
        expect(early.ok).toBe(false);
        expect(!early.ok && early.current?.notBefore).toBe(1000);
        const due = await store.transitionNode(
          id,
          "a",
          { status: ["QUEUED"], dueBy: 1000 },
          { status: "RUNNING", notBefore: null },
        );
        expect(due.ok).toBe(true);
        expect(due.ok && "notBefore" in due.record).toBe(false);

        // No notBefore at all: always due; a missing node has none either.
        const other = await store.transitionNode(
          id,
          "b",
          { status: ["PENDING"], dueBy: 0 },
          { status: "QUEUED" },
        );
        expect(other.ok).toBe(true);
        const again = await store.transitionNode(
          id,
          "b",
          { status: ["QUEUED"], dueBy: 0 },
          { status: "RUNNING" },
        );
        expect(again.ok).toBe(true);
      });

      it("recovers a lease only once it expired before the given instant", async () => {
        const id = randomUUID();
        await store.transitionNode(
          id,
          "a",
          { status: ["PENDING"] },
          { status: "RUNNING", attempt: 1, lease: { token: "t1", expiresAt: 5000 } },
        );
        const live = await store.transitionNode(
          id,
          "a",
          { status: ["RUNNING"], leaseExpiredBy: 5000 },
          { status: "QUEUED", lease: null },
        );
        expect(live.ok).toBe(false);
        const expired = await store.transitionNode(
          id,
          "a",
          { status: ["RUNNING"], leaseExpiredBy: 5001, attempt: 1 },
          { status: "QUEUED", attempt: 2, lease: null, startedAt: null },
        );
        expect(expired.ok).toBe(true);
        expect(expired.ok && expired.record.lease).toBeUndefined();

        // A node holding no lease has none to recover.
        const none = await store.transitionNode(
          id,
          "a",
          { status: ["QUEUED"], leaseExpiredBy: Number.MAX_SAFE_INTEGER },
          { status: "RUNNING" },
        );
        expect(none.ok).toBe(false);
      });

      it("removes fields patched with null", async () => {
        const id = randomUUID();
        await store.transitionNode(
          id,
          "a",
          { status: ["PENDING"] },
          {
            status: "RUNNING",
            attempt: 1,
            lease: { token: "t", expiresAt: 9 },
            notBefore: 5,
            error: { name: "E", message: "m", retryable: true },
            startedAt: 7,
          },
        );
        const result = await store.transitionNode(
          id,
          "a",
          { status: ["RUNNING"] },
          { status: "QUEUED", lease: null, notBefore: null, error: null, startedAt: null },
        );
        const expected: NodeRecord = {
          executionId: id,
          nodeId: "a",
          status: "QUEUED",
          attempt: 1,
          okDeps: [],
          badDeps: [],
        };
        expect(result).toEqual({ ok: true, record: expected });
        const stored = await store.getNode(id, "a");
        expect(stored).toEqual(expected);
        for (const field of ["lease", "notBefore", "error", "startedAt"])
          expect(stored).not.toHaveProperty(field);
      });

      it("round-trips outputs of any JSON shape; null is kept, undefined leaves the output alone", async () => {
        const id = randomUUID();
        const outputs: unknown[] = [
          { a: 1, b: [true, false, null], c: { d: "e", empty: {}, list: [] } },
          [1, "two", { three: [3] }],
          { big: 1e20, huge: -1.5e100, tiny: 1.25e-10, unsafe: 2 ** 60, pi: Math.PI, negative: -0.5 },
          "text",
          0,
          false,
          null,
        ];
        for (const [i, value] of outputs.entries()) {
          const output = pl(value);
          const nodeId = `n${i}`;
          const result = await store.transitionNode(
            id,
            nodeId,
            { status: ["PENDING"] },
            { status: "COMPLETED", attempt: 1, output },
          );
          expect(result.ok && result.record.output).toEqual(output);
          const stored = await store.getNode(id, nodeId);
          expect(stored?.output).toEqual(output);
          expect(stored && "output" in stored).toBe(true);
        }
        const untouched = await store.transitionNode(
          id,
          "n0",
          { status: ["COMPLETED"] },
          { output: undefined },
        );
        expect(untouched.ok && untouched.record.output).toEqual(pl(outputs[0]));

        const none = await store.transitionNode(id, "x", { status: ["PENDING"] }, { status: "QUEUED" });
        expect(none.ok && "output" in none.record).toBe(false);
      });

      it("reads several nodes at once, leaving out missing ones", async () => {
        const id = randomUUID();
        const ids = Array.from({ length: 130 }, (_, i) => `node-${i}`);
        await Promise.all(
          ids.map((nodeId, i) =>
            i % 2 === 0
              ? store.transitionNode(id, nodeId, { status: ["PENDING"] }, { status: "QUEUED", attempt: 1 })
              : Promise.resolve(),
          ),
        );
        const stored = ids.filter((_, i) => i % 2 === 0);
        const got = await store.getNodes(id, ids);
        expect(got.map((n) => n.nodeId).sort()).toEqual([...stored].sort());
        expect(got.every((n) => n.status === "QUEUED" && n.executionId === id)).toBe(true);
        expect(sortById(await store.listNodes(id)).map((n) => n.nodeId)).toEqual([...stored].sort());
        // Nodes of other executions are not listed.
        expect(await store.listNodes(randomUUID())).toEqual([]);
      });

      it("returns a node asked for twice once", async () => {
        const id = randomUUID();
        await store.transitionNode(id, "a", { status: ["PENDING"] }, { status: "QUEUED", attempt: 1 });
        const got = await store.getNodes(id, ["a", "b", "a"]);
        expect(got.map((n) => n.nodeId)).toEqual(["a"]);
      });

      it("lets exactly one of many concurrent claims of the same attempt win", async () => {
        const id = randomUUID();
        await store.transitionNode(
          id,
          "a",
          { status: ["PENDING"] },
          { status: "QUEUED", attempt: 1, queuedAt: 1 },
        );
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            store.transitionNode(
              id,
              "a",
              { status: ["QUEUED"], attempt: 1 },
              { status: "RUNNING", lease: { token: `t${i}`, expiresAt: 10_000 + i }, startedAt: 2 },
              event(2, "NodeStarted", { nodeId: "a", attempt: 1, detail: { token: `t${i}` } }),
            ),
          ),
        );
        const winners = results.flatMap((r) => (r.ok ? [r.record] : []));
        expect(winners).toHaveLength(1);
        const stored = await store.getNode(id, "a");
        expect(stored?.lease).toEqual(winners[0]!.lease);
        for (const result of results) {
          if (!result.ok) expect(result.current?.status).toBe("RUNNING");
        }
        const history = await store.listHistory(id);
        expect(history.filter((e) => e.type === "NodeStarted")).toHaveLength(1);
      });
    });

    // ── arrivals ────────────────────────────────────────────────────────────────────────────────

    describe("recordArrival", () => {
      const arrival = (
        executionId: string,
        parentIndex: number,
        overrides: Partial<Parameters<Store["recordArrival"]>[0]> = {},
      ) => ({
        executionId,
        childId: "child",
        parentIndex,
        outcome: "ok" as const,
        now: 100,
        ...overrides,
      });
      /** A failed execution: bad arrivals are recorded only while the execution is ending. */
      const failedExecution = async () => {
        const record = execution({ status: "FAILED" });
        await store.createExecution(record, event(1, "ExecutionCreated"));
        return record.executionId;
      };

      it("records each parent once, ok and bad apart", async () => {
        const id = await failedExecution();
        const first = await store.recordArrival(arrival(id, 0));
        expect(first).toEqual({
          recorded: true,
          node: { executionId: id, nodeId: "child", status: "PENDING", attempt: 0, okDeps: [0], badDeps: [] },
        });
        const repeat = await store.recordArrival(arrival(id, 0));
        expect(repeat).toEqual({ recorded: false, node: first.node });
        const repeatAsBad = await store.recordArrival(arrival(id, 0, { outcome: "bad" }));
        expect(repeatAsBad).toEqual({ recorded: false, node: first.node });

        const bad = await store.recordArrival(arrival(id, 3, { outcome: "bad" }));
        expect(bad.recorded).toBe(true);
        expect(bad.node).toMatchObject({ status: "PENDING", attempt: 0, okDeps: [0], badDeps: [3] });
        const badRepeatAsOk = await store.recordArrival(arrival(id, 3));
        expect(badRepeatAsOk.recorded).toBe(false);

        const ok2 = await store.recordArrival(arrival(id, 2));
        expect(ok2.node).toMatchObject({ okDeps: [0, 2], badDeps: [3] });
        expect(await store.getNode(id, "child")).toEqual(ok2.node);
      });

      it("records nothing once the child left PENDING", async () => {
        const id = await failedExecution();
        await store.recordArrival(arrival(id, 0));
        const cancelled = await store.transitionNode(
          id,
          "child",
          { status: ["PENDING"] },
          {
            status: "CANCELLED",
            finishedAt: 50,
            error: { name: "Cancelled", message: "fan-in unreachable" },
          },
        );
        expect(cancelled.ok).toBe(true);
        const late = await store.recordArrival(arrival(id, 1));
        expect(late).toEqual({ recorded: false, node: cancelled.ok ? cancelled.record : undefined });
        expect((await store.getNode(id, "child"))?.okDeps).toEqual([0]);
      });

      it("records 20 concurrent arrivals of distinct parents exactly once each", async () => {
        const id = await failedExecution();
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            store.recordArrival(arrival(id, i, { outcome: i % 5 === 0 ? "bad" : "ok" })),
          ),
        );
        expect(results.every((r) => r.recorded)).toBe(true);
        const node = await store.getNode(id, "child");
        const indexes = Array.from({ length: 20 }, (_, i) => i);
        expect(node?.okDeps).toEqual(indexes.filter((i) => i % 5 !== 0));
        expect(node?.badDeps).toEqual(indexes.filter((i) => i % 5 === 0));
        expect(node?.status).toBe("PENDING");
      });

      it("forgets failed arrivals when a node write patches badDeps with null", async () => {
        const id = await failedExecution();
        await store.recordArrival(arrival(id, 0));
        await store.recordArrival(arrival(id, 1, { outcome: "bad" }));
        await store.recordArrival(arrival(id, 2, { outcome: "bad" }));
        const cleared = await store.transitionNode(id, "child", { status: ["PENDING"] }, { badDeps: null });
        const expected: NodeRecord = {
          executionId: id,
          nodeId: "child",
          status: "PENDING",
          attempt: 0,
          okDeps: [0],
          badDeps: [],
        };
        expect(cleared).toEqual({ ok: true, record: expected });
        expect(await store.getNode(id, "child")).toEqual(expected);

        // The failed parent gets another chance: its next arrival is recorded.
        const retried = await store.recordArrival(arrival(id, 1));
        expect(retried.recorded).toBe(true);
        expect(retried.node).toMatchObject({ okDeps: [0, 1], badDeps: [] });

        // On a node without failed arrivals (or no record at all) it changes nothing.
        const missing = await store.transitionNode(id, "other", { status: ["PENDING"] }, { badDeps: null });
        expect(missing.ok && missing.record).toEqual({
          executionId: id,
          nodeId: "other",
          status: "PENDING",
          attempt: 0,
          okDeps: [],
          badDeps: [],
        });
      });

      it("records parents in an arrival shard once, several in one write, apart from the child and other shards", async () => {
        const id = randomUUID();
        const shard = (parentIndexes: number[], index = 0) =>
          store.recordShardArrival({
            executionId: id,
            childId: "join",
            shard: index,
            parentIndexes,
            now: 100,
          });
        expect(await store.getArrivalShards(id, "join", [0, 1])).toEqual([]);
        expect(await shard([7])).toEqual({ recorded: [7], shard: { shard: 0, okDeps: [7] } });
        expect(await shard([9, 3, 3])).toEqual({ recorded: [3, 9], shard: { shard: 0, okDeps: [3, 7, 9] } });
        // A parent already there stays once: only the new ones are reported.
        expect(await shard([7, 11])).toEqual({ recorded: [11], shard: { shard: 0, okDeps: [3, 7, 9, 11] } });
        expect(await shard([7])).toEqual({ recorded: [], shard: { shard: 0, okDeps: [3, 7, 9, 11] } });
        expect(await shard([12], 1)).toEqual({ recorded: [12], shard: { shard: 1, okDeps: [12] } });
        expect(await store.getArrivalShards(id, "join", [1, 0, 2, 1])).toEqual([
          { shard: 0, okDeps: [3, 7, 9, 11] },
          { shard: 1, okDeps: [12] },
        ]);
        // Shards are not nodes: the child stays untouched, and listings do not show them.
        expect(await store.getNode(id, "join")).toBeUndefined();
        expect(await store.listNodes(id)).toEqual([]);
        expect(await store.listHistory(id)).toEqual([]);
        expect(await store.getArrivalShards(id, "other", [0])).toEqual([]);
      });

      it("records 40 concurrent arrivals of 20 parents in one shard, each parent reported new exactly once", async () => {
        const id = await failedExecution();
        const results = await Promise.all(
          Array.from({ length: 40 }, (_, i) =>
            store.recordShardArrival({
              executionId: id,
              childId: "join",
              shard: 0,
              parentIndexes: [i % 20],
              now: 1,
            }),
          ),
        );
        expect(results.flatMap((r) => r.recorded).sort((a, b) => a - b)).toEqual(
          Array.from({ length: 20 }, (_, i) => i),
        );
        const [stored] = await store.getArrivalShards(id, "join", [0]);
        expect(stored?.okDeps).toEqual(Array.from({ length: 20 }, (_, i) => i));
      });

      it("records 20 concurrent duplicate arrivals of one parent exactly once", async () => {
        const id = await failedExecution();
        const results = await Promise.all(
          Array.from({ length: 20 }, () => store.recordArrival(arrival(id, 7))),
        );
        expect(results.filter((r) => r.recorded)).toHaveLength(1);
        expect((await store.getNode(id, "child"))?.okDeps).toEqual([7]);
      });
    });

    // ── sweeping ────────────────────────────────────────────────────────────────────────────────

    describe("sweeping", () => {
      it("keeps a finished execution listed when its finishing write keeps a sweepAt (cleanup pending)", async () => {
        const fresh = await makeStore();
        try {
          const s = fresh.store;
          const record = execution({ status: "RUNNING", sweepAt: 100 });
          await s.createExecution(record, event(1, "ExecutionCreated"));
          await s.transitionExecution(record.executionId, ["RUNNING"], {
            status: "FAILED",
            finishedAt: 5,
            sweepAt: 200,
          });
          const due = await s.listDueExecutions(300, 10);
          expect(due.map((r) => [r.executionId, r.status, r.sweepAt])).toEqual([
            [record.executionId, "FAILED", 200],
          ]);
          // Cleanup confirmed: it leaves the index.
          await s.transitionExecution(record.executionId, ["FAILED"], { sweepAt: null });
          expect(await s.listDueExecutions(300, 10)).toEqual([]);
        } finally {
          await fresh.cleanup?.();
        }
      });

      it("lists RUNNING executions due at `now`, earliest first, at most `limit`", async () => {
        const fresh = await makeStore();
        try {
          const s = fresh.store;
          const create = async (overrides: Partial<ExecutionRecord>) => {
            const record = execution(overrides);
            await s.createExecution(record, event(1, "ExecutionCreated"));
            return record;
          };
          const a = await create({ status: "RUNNING", sweepAt: 300 });
          const b = await create({ status: "RUNNING", sweepAt: 100 });
          const c = await create({ status: "RUNNING", sweepAt: 200 });
          const later = await create({ status: "RUNNING", sweepAt: 900 });
          const pending = await create({ status: "PENDING", sweepAt: 50 });
          await create({ status: "RUNNING" });
          const finishing = await create({ status: "RUNNING", sweepAt: 150 });
          const unswept = await create({ status: "RUNNING", sweepAt: 250 });
          const ids = (records: ExecutionRecord[]) => records.map((r) => r.executionId);

          expect(await s.listDueExecutions(0, 10)).toEqual([]);
          const due = await s.listDueExecutions(500, 10);
          expect(ids(due)).toEqual(ids([b, finishing, c, unswept, a]));
          expect(due[0]).toEqual(b);
          expect(ids(await s.listDueExecutions(500, 2))).toEqual(ids([b, finishing]));
          // sweepAt equal to now is due.
          expect(ids(await s.listDueExecutions(300, 10))).toEqual(ids([b, finishing, c, unswept, a]));
          expect(ids(await s.listDueExecutions(299, 10))).toEqual(ids([b, finishing, c, unswept]));
          expect(ids(await s.listDueExecutions(Number.MAX_SAFE_INTEGER, 10))).toEqual(
            ids([b, finishing, c, unswept, a, later]),
          );

          // Finishing drops an execution; so does removing its sweepAt.
          await s.transitionExecution(finishing.executionId, ["RUNNING"], {
            status: "SUCCEEDED",
            finishedAt: 5,
          });
          await s.transitionExecution(unswept.executionId, ["RUNNING"], { sweepAt: null });
          expect(ids(await s.listDueExecutions(500, 10))).toEqual(ids([b, c, a]));

          // Starting one makes it count; moving sweepAt (by a write or a pull) reorders.
          await s.transitionExecution(pending.executionId, ["PENDING"], { status: "RUNNING", startedAt: 2 });
          await s.transitionExecution(a.executionId, ["RUNNING"], { sweepAt: 600 });
          expect(await s.pullSweepAt(later.executionId, 120)).toBe(true);
          expect(ids(await s.listDueExecutions(500, 10))).toEqual(ids([pending, b, later, c]));
          expect(ids(await s.listDueExecutions(500, 3))).toEqual(ids([pending, b, later]));
          const pulled = (await s.listDueExecutions(500, 10)).find(
            (r) => r.executionId === later.executionId,
          );
          expect(pulled?.sweepAt).toBe(120);

          // Cancelling and failing drop it as well.
          await s.transitionExecution(b.executionId, ["RUNNING"], { status: "CANCELLED", finishedAt: 6 });
          await s.transitionExecution(c.executionId, ["RUNNING"], {
            status: "FAILED",
            finishedAt: 7,
            error: { name: "E", message: "m" },
          });
          expect(ids(await s.listDueExecutions(1000, 10))).toEqual(
            ids([pending, later, { ...a, sweepAt: 600 }]),
          );
        } finally {
          await fresh.cleanup?.();
        }
      });

      it("lists due executions across many executions in order, however small the limit", async () => {
        const fresh = await makeStore();
        try {
          const s = fresh.store;
          const records = Array.from({ length: 30 }, (_, i) =>
            execution({ status: "RUNNING", sweepAt: 1000 + ((i * 7) % 30) * 10 }),
          );
          await Promise.all(records.map((r) => s.createExecution(r, event(1, "ExecutionCreated"))));
          const bySweep = [...records].sort((x, y) => x.sweepAt! - y.sweepAt!).map((r) => r.executionId);
          expect((await s.listDueExecutions(5000, 100)).map((r) => r.executionId)).toEqual(bySweep);
          for (const limit of [1, 4, 13]) {
            expect((await s.listDueExecutions(5000, limit)).map((r) => r.executionId)).toEqual(
              bySweep.slice(0, limit),
            );
          }
          // Finish the earliest ten: the next ten are the earliest now.
          await Promise.all(
            bySweep
              .slice(0, 10)
              .map((id) => s.transitionExecution(id, ["RUNNING"], { status: "SUCCEEDED", finishedAt: 9 })),
          );
          expect((await s.listDueExecutions(5000, 10)).map((r) => r.executionId)).toEqual(
            bySweep.slice(10, 20),
          );
        } finally {
          await fresh.cleanup?.();
        }
      });

      it("pulls sweepAt only earlier, and only while RUNNING", async () => {
        const running = execution({ status: "RUNNING", sweepAt: 500 });
        await store.createExecution(running, event(1, "ExecutionCreated"));
        const id = running.executionId;
        expect(await store.pullSweepAt(id, 400)).toBe(true);
        expect((await store.getExecution(id))?.sweepAt).toBe(400);
        expect(await store.pullSweepAt(id, 450)).toBe(false);
        expect(await store.pullSweepAt(id, 400)).toBe(false);
        expect((await store.getExecution(id))?.sweepAt).toBe(400);
        expect(await store.pullSweepAt(id, 100)).toBe(true);
        expect(await store.getExecution(id)).toEqual({ ...running, sweepAt: 100 });

        // No sweepAt yet: any instant is earlier.
        const unset = execution({ status: "RUNNING" });
        await store.createExecution(unset, event(1, "ExecutionCreated"));
        expect(await store.pullSweepAt(unset.executionId, 700)).toBe(true);
        expect((await store.getExecution(unset.executionId))?.sweepAt).toBe(700);

        // Not RUNNING (not started, finished, or unknown): nothing changes.
        const pending = execution();
        await store.createExecution(pending, event(1, "ExecutionCreated"));
        expect(await store.pullSweepAt(pending.executionId, 10)).toBe(false);
        expect(await store.getExecution(pending.executionId)).toEqual(pending);
        await store.transitionExecution(id, ["RUNNING"], { status: "SUCCEEDED", finishedAt: 9 });
        expect(await store.pullSweepAt(id, 1)).toBe(false);
        expect(await store.pullSweepAt(randomUUID(), 1)).toBe(false);
      });

      it("grants a named lease when free, expired or held by the same owner", async () => {
        const name = uid("lease");
        expect(await store.acquireLease(name, "a", 1000, 2000)).toBe(true);
        // Held by another owner and not expired: refused.
        expect(await store.acquireLease(name, "b", 1500, 2500)).toBe(false);
        // The same owner extends it.
        expect(await store.acquireLease(name, "a", 1500, 3000)).toBe(true);
        expect(await store.acquireLease(name, "b", 2999, 4000)).toBe(false);
        // Expired at `now` (expiresAt ≤ now): another owner takes it over.
        expect(await store.acquireLease(name, "b", 3000, 4000)).toBe(true);
        expect(await store.acquireLease(name, "a", 3500, 5000)).toBe(false);
        // Names are independent.
        expect(await store.acquireLease(uid("lease"), "a", 3500, 5000)).toBe(true);
      });

      it("grants a lease to exactly one of several concurrent owners", async () => {
        const name = uid("lease");
        const results = await Promise.all(
          Array.from({ length: 10 }, (_, i) => store.acquireLease(name, `owner-${i}`, 1000, 2000)),
        );
        expect(results.filter(Boolean)).toHaveLength(1);
        const winner = `owner-${results.indexOf(true)}`;
        expect(await store.acquireLease(name, winner, 1500, 2500)).toBe(true);
        expect(await store.acquireLease(name, "someone-else", 1500, 2500)).toBe(false);
      });
    });

    // ── dead letters ────────────────────────────────────────────────────────────────────────────

    describe("dead letters", () => {
      const letter = (id: string, overrides: Partial<DeadLetterRecord> = {}): DeadLetterRecord => ({
        id,
        executionId: randomUUID(),
        nodeId: "n1",
        attempt: 3,
        error: { name: "Boom", message: "it broke", retryable: false },
        at: 1_700_000_000_000,
        reason: "terminal",
        ...overrides,
      });

      it("records each id once, lists oldest first in pages, reads and deletes", async () => {
        const fresh = await makeStore();
        try {
          const s = fresh.store;
          const d1 = letter("0001-a");
          const d2 = letter("0002-b", { reason: "poison", receiveCount: 5, attempt: 1 });
          const d3 = letter("0003-c");
          for (const record of [d3, d1, d2]) await s.putDeadLetter(record);
          // A repeat changes nothing and does not throw.
          await s.putDeadLetter(letter("0001-a", { nodeId: "other", attempt: 9 }));
          expect(await s.getDeadLetter("0001-a")).toEqual(d1);
          expect(await s.getDeadLetter("0002-b")).toEqual(d2);
          expect(await s.getDeadLetter("nope")).toBeUndefined();

          expect(await s.listDeadLetters({ limit: 10 })).toEqual({ items: [d1, d2, d3] });
          // An exact last page has no `next`.
          expect(await s.listDeadLetters({ limit: 3 })).toEqual({ items: [d1, d2, d3] });
          const first = await s.listDeadLetters({ limit: 2 });
          expect(first).toEqual({ items: [d1, d2], next: expect.any(String) });
          expect(await s.listDeadLetters({ limit: 2, next: first.next })).toEqual({ items: [d3] });
          const firstOne = await s.listDeadLetters({ limit: 1 });
          expect(firstOne).toEqual({ items: [d1], next: expect.any(String) });
          const one = await s.listDeadLetters({ limit: 1, next: firstOne.next });
          expect(one).toEqual({ items: [d2], next: first.next });
          // A cursor this store never returned is refused, never read as a position.
          for (const next of ["0001-a", "garbage", Buffer.from('{"d":7}').toString("base64url")]) {
            await expect(s.listDeadLetters({ limit: 1, next })).rejects.toMatchObject({
              code: "InvalidCursor",
            });
          }

          expect(await s.deleteDeadLetter("0002-b")).toBe(true);
          expect(await s.deleteDeadLetter("0002-b")).toBe(false);
          expect(await s.deleteDeadLetter("never")).toBe(false);
          expect(await s.getDeadLetter("0002-b")).toBeUndefined();
          expect(await s.listDeadLetters({ limit: 10 })).toEqual({ items: [d1, d3] });

          // Deleted and recorded again: it is back.
          await s.putDeadLetter(d2);
          expect(await s.listDeadLetters({ limit: 10 })).toEqual({ items: [d1, d2, d3] });
        } finally {
          await fresh.cleanup?.();
        }
      });

      it("is empty when nothing was dead-lettered", async () => {
        const fresh = await makeStore();
        try {
          expect(await fresh.store.listDeadLetters({ limit: 5 })).toEqual({ items: [] });
        } finally {
          await fresh.cleanup?.();
        }
      });
    });

    // ── history ─────────────────────────────────────────────────────────────────────────────────

    describe("listHistory", () => {
      it("merges execution and node events in time order, keeping each event as written", async () => {
        const record = execution();
        const id = record.executionId;
        await store.createExecution(record, event(1, "ExecutionCreated"));
        await store.transitionExecution(
          id,
          ["PENDING"],
          { status: "RUNNING", startedAt: 2 },
          event(2, "ExecutionStarted"),
        );
        await store.transitionNode(
          id,
          "b",
          { status: ["PENDING"] },
          { status: "QUEUED", attempt: 1 },
          event(3, "NodeQueued", { nodeId: "b", attempt: 1 }),
        );
        await store.transitionNode(
          id,
          "a",
          { status: ["PENDING"] },
          { status: "QUEUED", attempt: 1 },
          event(4, "NodeQueued", { nodeId: "a", attempt: 1 }),
        );
        await store.transitionNode(
          id,
          "b",
          { status: ["QUEUED"] },
          { status: "RUNNING" },
          event(5, "NodeStarted", {
            nodeId: "b",
            attempt: 1,
            detail: { worker: "w1", nested: { list: [1, null] } },
          }),
        );
        // Written without an event: adds nothing.
        await store.transitionNode(id, "a", { status: ["QUEUED"] }, { status: "RUNNING" });
        await store.transitionNode(
          id,
          "c",
          { status: ["PENDING"] },
          { status: "QUEUED", attempt: 1 },
          event(6, "NodeQueued", { nodeId: "c", attempt: 1 }),
        );
        await store.transitionNode(
          id,
          "b",
          { status: ["RUNNING"] },
          { status: "COMPLETED", output: pl(1) },
          event(7, "NodeCompleted", { nodeId: "b", attempt: 1 }),
        );
        await store.recordSinkDone(id, 0);
        await store.transitionExecution(
          id,
          ["RUNNING"],
          { status: "SUCCEEDED" },
          event(8, "ExecutionSucceeded"),
        );

        expect(await store.listHistory(id)).toEqual([
          event(1, "ExecutionCreated"),
          event(2, "ExecutionStarted"),
          event(3, "NodeQueued", { nodeId: "b", attempt: 1 }),
          event(4, "NodeQueued", { nodeId: "a", attempt: 1 }),
          event(5, "NodeStarted", {
            nodeId: "b",
            attempt: 1,
            detail: { worker: "w1", nested: { list: [1, null] } },
          }),
          event(6, "NodeQueued", { nodeId: "c", attempt: 1 }),
          event(7, "NodeCompleted", { nodeId: "b", attempt: 1 }),
          event(8, "ExecutionSucceeded"),
        ]);
      });

      it("keeps the written order of one item's events at the same instant", async () => {
        const record = execution();
        const id = record.executionId;
        await store.createExecution(record, event(5, "First"));
        await store.transitionExecution(id, ["PENDING"], {}, event(5, "Second"));
        await store.transitionExecution(id, ["PENDING"], {}, event(5, "Third"));
        await store.transitionNode(id, "n", { status: ["PENDING"] }, {}, event(9, "N1", { nodeId: "n" }));
        await store.transitionNode(id, "n", { status: ["PENDING"] }, {}, event(9, "N2", { nodeId: "n" }));
        await store.transitionNode(id, "n", { status: ["PENDING"] }, {}, event(9, "N3", { nodeId: "n" }));
        expect((await store.listHistory(id)).map((e) => e.type)).toEqual([
          "First",
          "Second",
          "Third",
          "N1",
          "N2",
          "N3",
        ]);
      });

      it("orders one millisecond's events by their stamps: the end after its cause, its effects after it", async () => {
        const record = execution();
        const id = record.executionId;
        await store.createExecution(record, event(1, "ExecutionStarted"));
        await store.transitionNode(
          id,
          "z",
          { status: ["PENDING"] },
          { status: "COMPLETED" },
          event(8, "NodeCompleted", { seq: 1, nodeId: "z", attempt: 1 }),
        );
        await store.transitionExecution(
          id,
          ["PENDING"],
          { status: "SUCCEEDED" },
          event(8, "ExecutionSucceeded", { seq: 2 }),
        );
        await store.transitionNode(
          id,
          "a",
          { status: ["PENDING"] },
          { status: "CANCELLED" },
          event(8, "NodeCancelled", { seq: 3, nodeId: "a", attempt: 0 }),
        );
        // Node ids and the execution's own item ("" before any id) no longer decide.
        expect((await store.listHistory(id)).map((e) => e.type)).toEqual([
          "ExecutionStarted",
          "NodeCompleted",
          "ExecutionSucceeded",
          "NodeCancelled",
        ]);
      });

      it("orders events of one millisecond with no seq (different machines, older events): start, nodes, end", async () => {
        const record = execution();
        const id = record.executionId;
        await store.createExecution(record, event(5, "ExecutionStarted"));
        await store.transitionExecution(id, ["PENDING"], {}, event(5, "ExecutionFailed"));
        await store.transitionNode(
          id,
          "x",
          { status: ["PENDING"] },
          {},
          event(5, "NodeFailed", { nodeId: "x" }),
        );
        expect((await store.listHistory(id)).map((e) => e.type)).toEqual([
          "ExecutionStarted",
          "NodeFailed",
          "ExecutionFailed",
        ]);
      });

      it("never reorders an item's events: one stamped before an earlier write keeps its written place", async () => {
        const record = execution();
        const id = record.executionId;
        await store.createExecution(record, event(1, "ExecutionStarted"));
        await store.transitionNode(id, "n", { status: ["PENDING"] }, {}, event(9, "N1", { nodeId: "n" }));
        // Stamped at 7, before N1 was written, by a writer that stalled: still after N1.
        await store.transitionNode(id, "n", { status: ["PENDING"] }, {}, event(7, "N2", { nodeId: "n" }));
        await store.transitionNode(id, "m", { status: ["PENDING"] }, {}, event(8, "M1", { nodeId: "m" }));
        await store.transitionNode(id, "m", { status: ["PENDING"] }, {}, event(10, "M2", { nodeId: "m" }));
        expect((await store.listHistory(id)).map((e) => e.type)).toEqual([
          "ExecutionStarted",
          "M1",
          "N1",
          "N2",
          "M2",
        ]);
      });

      it("is empty for an unknown execution", async () => {
        expect(await store.listHistory(randomUUID())).toEqual([]);
      });
    });

    // ── wide executions ─────────────────────────────────────────────────────────────────────────

    describe("wide executions (nodeShards: a DynamoDB store spreads their nodes over partitions)", () => {
      /** Records of one execution with their executionId checked and left out, to compare two. */
      const apart = (id: string, records: ReadonlyArray<NodeRecord | undefined>) =>
        records.map((record) => {
          if (record === undefined) return undefined;
          const { executionId, ...rest } = record;
          expect(executionId).toBe(id);
          return rest;
        });
      const outcome = (id: string, result: { ok: boolean; record?: NodeRecord; current?: NodeRecord }) => ({
        ok: result.ok,
        record: apart(id, [result.ok ? result.record : result.current])[0],
      });

      /**
       * The same story on a RUNNING execution of `nodeShards` node shards: 40 nodes queued, half
       * claimed, a quarter completed; a map whose items of two attempts run; arrivals one by one and
       * in 20 arrival shards; a reservation fenced on the map; a failure and a cancellation fenced on
       * the execution. What every write and read answered, the execution id left out.
       */
      async function story(nodeShards: number | undefined) {
        const record = execution({
          status: "RUNNING",
          startedAt: 1,
          ...(nodeShards === undefined ? {} : { nodeShards }),
        });
        const id = record.executionId;
        await store.createExecution(record, event(1, "ExecutionStarted"));
        expect((await store.getExecution(id))?.nodeShards).toBe(nodeShards);
        const writes: unknown[] = [];
        const nodeIds = Array.from({ length: 40 }, (_, i) => `n${i}`);
        const queued = await Promise.all(
          nodeIds.map((nodeId, i) =>
            store.transitionNode(
              id,
              nodeId,
              { status: ["PENDING"] },
              { status: "QUEUED", attempt: 1, queuedAt: 10 + i },
              event(10 + i, "NodeQueued", { nodeId, attempt: 1 }),
            ),
          ),
        );
        writes.push(...queued.map((r) => outcome(id, r)));
        const claimed = await Promise.all(
          nodeIds.map((nodeId, i) =>
            i % 2 === 1
              ? undefined
              : store.transitionNode(
                  id,
                  nodeId,
                  { status: ["QUEUED"], attempt: 1 },
                  {
                    status: "RUNNING",
                    lease: { token: `t-${nodeId}`, expiresAt: 10_000 },
                    startedAt: 100 + i,
                  },
                  event(100 + i, "NodeStarted", { nodeId, attempt: 1 }),
                ),
          ),
        );
        writes.push(...claimed.map((r) => r && outcome(id, r)));
        const completed = await Promise.all(
          nodeIds.map((nodeId, i) =>
            i % 4 === 0
              ? store.transitionNode(
                  id,
                  nodeId,
                  { status: ["RUNNING"], leaseToken: `t-${nodeId}` },
                  { status: "COMPLETED", lease: null, output: pl({ i }), finishedAt: 200 + i },
                  event(200 + i, "NodeCompleted", { nodeId, attempt: 1 }),
                )
              : undefined,
          ),
        );
        writes.push(...completed.map((r) => r && outcome(id, r)));
        // Refused: the wrong status, and the wrong token; each answers the record as it is.
        writes.push(
          outcome(id, await store.transitionNode(id, "n1", { status: ["RUNNING"] }, { attempt: 2 })),
        );
        writes.push(
          outcome(id, await store.transitionNode(id, "n2", { status: ["RUNNING"], leaseToken: "t-n0" }, {})),
        );

        // A map: its node, then 50 items of attempt 1 (10 running, 5 completed), 5 of attempt 2, and another map's.
        writes.push(
          outcome(
            id,
            await store.transitionNode(
              id,
              "m",
              { status: ["PENDING"] },
              { status: "RUNNING", attempt: 1, lease: { token: "tm", expiresAt: 10_000 } },
              event(300, "NodeStarted", { nodeId: "m", attempt: 1 }),
            ),
          ),
        );
        const itemIds = [
          ...Array.from({ length: 50 }, (_, i) => `m[1.${i}]`),
          ...Array.from({ length: 5 }, (_, i) => `m[2.${i}]`),
          "mm[1.3]",
        ];
        const items = await Promise.all(
          itemIds.map((itemId, i) =>
            store.transitionNode(
              id,
              itemId,
              { status: ["PENDING"] },
              { status: i < 10 ? "RUNNING" : "QUEUED", attempt: 1, queuedAt: 400 + i },
              event(400 + i, "NodeQueued", { nodeId: itemId, attempt: 1 }),
            ),
          ),
        );
        writes.push(...items.map((r) => outcome(id, r)));
        const done = await Promise.all(
          itemIds
            .slice(0, 5)
            .map((itemId, i) =>
              store.transitionNode(
                id,
                itemId,
                { status: ["RUNNING"], attempt: 1 },
                { status: "COMPLETED", output: pl(`item ${i}`), finishedAt: 500 + i },
                event(500 + i, "NodeCompleted", { nodeId: itemId, attempt: 1 }),
              ),
            ),
        );
        writes.push(...done.map((r) => outcome(id, r)));
        const reservation = { rootExecutionId: id, executionId: id, key: "m[1]", units: 5 };
        writes.push(await store.reserveMapItems(reservation, 100, 1, { nodeId: "m", leaseToken: "tm" }));
        writes.push(
          await store.reserveMapItems({ ...reservation, key: "m[2]" }, 100, 1, {
            nodeId: "m",
            leaseToken: "t0",
          }),
        );

        // Arrivals: into `join` one parent at a time, and into `wide` in 20 shards.
        const arrivals = await Promise.all(
          [0, 1, 2, 3, 3, 4, 5, 6, 7, 8, 9].map((parentIndex) =>
            store.recordArrival({ executionId: id, childId: "join", parentIndex, outcome: "ok", now: 600 }),
          ),
        );
        writes.push(arrivals.filter((a) => a.recorded).length);
        const shards = await Promise.all(
          Array.from({ length: 20 }, (_, shard) =>
            store.recordShardArrival({
              executionId: id,
              childId: "wide",
              shard,
              parentIndexes: [shard, shard + 20],
              now: 600,
            }),
          ),
        );
        writes.push(shards);
        writes.push(
          await store.recordShardArrival({
            executionId: id,
            childId: "wide",
            shard: 7,
            parentIndexes: [7, 99],
            now: 601,
          }),
        );

        // A failure marks the execution; a cancellation is fenced on its ending.
        writes.push(
          outcome(
            id,
            await store.failNode(
              id,
              "n39",
              { status: ["QUEUED"] },
              { status: "FAILED", error: { name: "E", message: "no" }, finishedAt: 700 },
              event(700, "NodeFailed", { nodeId: "n39", attempt: 1 }),
            ),
          ),
        );
        writes.push(
          outcome(
            id,
            await store.transitionNode(
              id,
              "n37",
              { status: ["QUEUED"], executionEnding: true },
              { status: "CANCELLED", finishedAt: 701 },
              event(701, "NodeCancelled", { nodeId: "n37", attempt: 1 }),
            ),
          ),
        );
        const { executionId, nodeShards: shardsRead, ...executionRead } = (await store.getExecution(id))!;
        expect([executionId, shardsRead]).toEqual([id, nodeShards]);

        return {
          writes,
          execution: executionRead,
          nodes: apart(id, await store.listNodes(id)),
          items: apart(id, await store.listMapItems(id, "m", 1)),
          progress: apart(id, await store.listMapItems(id, "m", 1, { statusOnly: true })),
          items2: apart(id, await store.listMapItems(id, "m", 2)),
          other: apart(id, await store.listMapItems(id, "mm", 1)),
          node: apart(id, [await store.getNode(id, "n4"), await store.getNode(id, "m[1.3]")]),
          missing: await store.getNode(id, "n99"),
          some: apart(id, await store.getNodes(id, ["m[1.7]", "n5", "absent", "n5", "m", "join", "m[2.4]"])),
          arrivalShards: await store.getArrivalShards(id, "wide", [19, 0, 5, 5, 33, 7]),
          reservations: (await store.listMapItemReservations(id)).map((r) => [r.key, r.units]),
          history: await store.listHistory(id),
          historyWithItems: await store.listHistory(id, { withItems: true }),
        };
      }

      it("answers every read and write of a wide execution (16 node shards) as of a small one", async () => {
        const small = await story(undefined);
        const wide = await story(16);
        expect(wide).toEqual(small);

        // And what they answer is what the story wrote.
        const ids = (records: ReadonlyArray<{ nodeId: string } | undefined>) => records.map((r) => r?.nodeId);
        expect(ids(small.nodes).sort()).toEqual(
          ["join", "m", ...Array.from({ length: 40 }, (_, i) => `n${i}`)].sort(),
        );
        expect(small.nodes.find((n) => n?.nodeId === "n8")).toMatchObject({
          status: "COMPLETED",
          output: pl({ i: 8 }),
          finishedAt: 208,
        });
        expect(small.nodes.find((n) => n?.nodeId === "join")?.okDeps).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        expect(ids(small.items).sort()).toEqual(Array.from({ length: 50 }, (_, i) => `m[1.${i}]`).sort());
        expect(small.progress.filter((n) => n?.status === "COMPLETED")).toHaveLength(5);
        expect(small.progress.filter((n) => n?.status === "RUNNING")).toHaveLength(5);
        expect(ids(small.items2).sort()).toEqual(["m[2.0]", "m[2.1]", "m[2.2]", "m[2.3]", "m[2.4]"]);
        expect(ids(small.other)).toEqual(["mm[1.3]"]);
        expect(ids(small.node)).toEqual(["n4", "m[1.3]"]);
        expect(small.missing).toBeUndefined();
        expect(ids(small.some)).toEqual(["m[1.7]", "n5", "m", "join", "m[2.4]"]);
        expect(small.arrivalShards).toEqual([
          { shard: 0, okDeps: [0, 20] },
          { shard: 5, okDeps: [5, 25] },
          { shard: 7, okDeps: [7, 27, 99] },
          { shard: 19, okDeps: [19, 39] },
        ]);
        expect(small.reservations).toEqual([["m[1]", 5]]);
        expect(small.execution).toMatchObject({ status: "RUNNING", failedNode: "n39" });
        expect(small.history).toHaveLength(1 + 40 + 20 + 10 + 1 + 2);
        expect(small.historyWithItems).toHaveLength(small.history.length + 56 + 5);
        expect(small.history.map((e) => e.at)).toEqual(small.history.map((e) => e.at).sort((a, b) => a - b));
      });
    });
  });
}
