/**
 * The Store contract for external workers (shared/ports.ts, domain/placement.ts): the registry, the
 * pools' offers and taking a task in one atomic write, checked the same way against every adapter
 * (store.test.ts runs it on each).
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  deadBefore,
  type Hold,
  holdKey,
  PLACEMENT_LIMITS,
  type ReadyTask,
  type WorkerRecord,
} from "../../shared/domain/placement.js";
import type { HistoryEvent, NodeRecord } from "../../shared/domain/records.js";
import type { Store, TakeTask } from "../../shared/ports.js";
import type { StoreFactory } from "./store.contract.js";

const uid = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

/** putWorker's record, for a registration the placement rule lets through (none is refused here). */
async function registered(store: Store, worker: Parameters<Store["putWorker"]>[0]): Promise<WorkerRecord> {
  const outcome = await store.putWorker(worker, 0);
  if (!outcome.ok) throw new Error(`worker ${worker.workerId}: the registration was refused`);
  return outcome.record;
}

type Registration = Omit<WorkerRecord, "holds" | "version">;

function registration(workerId: string, overrides: Partial<Registration> = {}): Registration {
  return {
    workerId,
    pool: "gpu",
    executors: ["ffmpeg", "python"],
    capabilities: { arch: "arm64", "cuda.version": "12" },
    labels: ["eu-west-1"],
    maxParallel: 4,
    registeredAt: 1_000,
    heartbeatAt: 1_000,
    heartbeatSeconds: 30,
    ...overrides,
  };
}

function readyTask(pool: string, overrides: Partial<ReadyTask> = {}): ReadyTask {
  return {
    pool,
    executionId: randomUUID(),
    nodeId: "render",
    attempt: 1,
    workflow: "wf",
    version: 3,
    runsOn: { pool, executors: ["ffmpeg"], capabilities: { arch: "arm64" }, maxParallelPerWorker: 2 },
    offeredAt: 5_000,
    ...overrides,
  };
}

/** What the engine would write to take `task` for `worker` (at `version`) with lease `token`. */
function taking(task: ReadyTask, workerId: string, workerVersion: number, token = uid("lease")): TakeTask {
  const hold: Hold = {
    executionId: task.executionId,
    nodeId: task.nodeId,
    attempt: task.attempt,
    leaseToken: token,
    slot: `${task.workflow}/${task.nodeId}`,
    claimedAt: 6_000,
  };
  const event: HistoryEvent = {
    at: 6_000,
    type: "NodeStarted",
    nodeId: task.nodeId,
    attempt: task.attempt,
    detail: { workerId },
  };
  return {
    task,
    workerId,
    workerVersion,
    hold,
    claim: {
      condition: { status: ["QUEUED"], attempt: task.attempt },
      patch: { status: "RUNNING", lease: { token, expiresAt: 66_000 }, startedAt: 6_000 },
      event,
    },
  };
}

export function describeWorkerContract(label: string, makeStore: StoreFactory): void {
  describe(`Store contract, external workers: ${label}`, () => {
    let store: Store;
    let cleanup: (() => Promise<void>) | undefined;
    let shardOf: (task: ReadyTask) => number = () => 0;

    beforeAll(async () => {
      const made = await makeStore();
      ({ store, cleanup } = made);
      if (made.offerShard) shardOf = made.offerShard;
    });
    afterAll(async () => {
      await cleanup?.();
    });

    /** The task's node QUEUED at its attempt, written as the engine would (transitionNode). */
    const queue = async (task: ReadyTask): Promise<NodeRecord> => {
      const queued = await store.transitionNode(
        task.executionId,
        task.nodeId,
        { status: ["PENDING"] },
        { status: "QUEUED", attempt: task.attempt, queuedAt: 4_000 },
        { at: 4_000, type: "NodeQueued", nodeId: task.nodeId, attempt: task.attempt },
      );
      if (!queued.ok) throw new Error("could not queue the node");
      return queued.record;
    };

    /** A registered worker, a QUEUED node and its offer in a pool of their own. */
    const offered = async () => {
      const pool = uid("pool");
      const worker = await registered(store, registration(uid("w"), { pool }));
      const task = readyTask(pool);
      const node = await queue(task);
      await store.offerTask(task);
      return { pool, worker, task, node };
    };

    /** Everything a take may change, to tell that a refused one changed nothing. */
    const snapshot = async (pool: string, task: ReadyTask, workerId: string) => ({
      offers: await store.listReadyTasks(pool, 10),
      node: await store.getNode(task.executionId, task.nodeId),
      history: await store.listHistory(task.executionId),
      worker: await store.getWorker(workerId),
    });

    describe("the registry's bounds", () => {
      const NOW = Date.UTC(2026, 10, 28, 12, 0, 0);
      const DEAD_BEFORE = deadBefore(NOW, 30);

      it("pages the registry by id: every worker once, in byte order, no page over its limit", async () => {
        const prefix = uid("page");
        // Mixed case and digits: byte order, not a locale's, on every store.
        const ids = Array.from(
          { length: 230 },
          (_, i) => `${prefix}-${i % 2 === 0 ? "A" : "a"}${String(i).padStart(3, "0")}`,
        );
        for (const id of ids) await registered(store, registration(id, { heartbeatAt: NOW }));
        const seen: string[] = [];
        let next: string | undefined;
        let pages = 0;
        do {
          const page = await store.pageWorkers({ limit: 40, ...(next === undefined ? {} : { next }) }, NOW);
          expect(page.items.length).toBeLessThanOrEqual(40);
          seen.push(...page.items.map((w) => w.workerId));
          next = page.next;
          pages++;
        } while (next !== undefined);
        const mine = seen.filter((id) => id.startsWith(prefix));
        expect(new Set(seen).size).toBe(seen.length);
        expect(mine).toEqual([...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
        expect(pages).toBeGreaterThanOrEqual(Math.ceil(ids.length / 40));
      });

      it("refuses a cursor it never returned", async () => {
        await expect(store.pageWorkers({ limit: 10, next: "not-a-cursor" }, NOW)).rejects.toMatchObject({
          code: "InvalidCursor",
        });
        await expect(
          store.pageWorkers({ limit: 10, next: Buffer.from('{"w":"x"}').toString("base64url") }, NOW),
        ).rejects.toMatchObject({ code: "InvalidCursor" });
      });

      it("never lists a registration past its retention", async () => {
        const old = uid("expired");
        const kept = uid("kept");
        const retentionMs = PLACEMENT_LIMITS.workerRetentionSeconds * 1000;
        await registered(store, registration(old, { heartbeatAt: NOW - retentionMs - 1000 }));
        await registered(store, registration(kept, { heartbeatAt: NOW - retentionMs + 1000 }));
        const listed: string[] = [];
        let next: string | undefined;
        do {
          const page = await store.pageWorkers({ limit: 100, ...(next === undefined ? {} : { next }) }, NOW);
          listed.push(...page.items.map((w) => w.workerId));
          next = page.next;
        } while (next !== undefined);
        expect(listed).toContain(kept);
        expect(listed).not.toContain(old);
      });

      it("does not let another placement take over a live id; the same one, or a dead id, it does", async () => {
        const id = uid("taken");
        const gpu = { ...registration(id, { pool: "gpu", heartbeatAt: NOW }), placement: "gpu-placement" };
        const cpu = { ...registration(id, { pool: "cpu", heartbeatAt: NOW }), placement: "cpu-placement" };
        const first = await store.putWorker(gpu, DEAD_BEFORE);
        expect(first.ok).toBe(true);
        // Another placement while it lives: refused, the registration as found answers, nothing changed.
        const refused = await store.putWorker(cpu, DEAD_BEFORE);
        expect(refused).toMatchObject({ ok: false, current: { workerId: id, pool: "gpu", version: 1 } });
        expect(await store.getWorker(id)).toMatchObject({
          pool: "gpu",
          version: 1,
          placement: "gpu-placement",
        });
        // The same placement again: registered again (its version moves on).
        const again = await store.putWorker({ ...gpu, maxParallel: 8 }, DEAD_BEFORE);
        expect(again).toMatchObject({ ok: true, record: { pool: "gpu", maxParallel: 8, version: 2 } });
        // Once it is dead (silent since before deadBefore), another placement may have the id.
        await store.putWorker({ ...gpu, heartbeatAt: DEAD_BEFORE - 1 }, DEAD_BEFORE);
        const takeover = await store.putWorker(cpu, DEAD_BEFORE);
        expect(takeover).toMatchObject({ ok: true, record: { pool: "cpu", placement: "cpu-placement" } });
      });
    });

    describe("the worker registry", () => {
      it("registers a worker at version 1 with no holds, and reads it back", async () => {
        const id = uid("w");
        const record = await registered(store, registration(id));
        expect(record).toEqual({ ...registration(id), holds: {}, version: 1 });
        expect(await store.getWorker(id)).toEqual(record);
        expect(await store.getWorker(uid("unknown"))).toBeUndefined();
      });

      it("registers again under the same id: the registration replaced, its holds kept, the version bumped", async () => {
        const { pool, worker, task } = await offered();
        const taken = await store.takeTask(taking(task, worker.workerId, worker.version));
        expect(taken.ok).toBe(true);
        const again = registration(worker.workerId, {
          pool,
          executors: ["python"],
          capabilities: {},
          labels: [],
          maxParallel: 2,
          registeredAt: 9_000,
          heartbeatAt: 9_000,
          heartbeatSeconds: 10,
        });
        const stored = await registered(store, again);
        expect(stored).toEqual({
          ...again,
          holds: taken.ok ? taken.worker.holds : {},
          version: worker.version + 2,
        });
        expect(Object.keys(stored.holds)).toEqual([holdKey(task.executionId, task.nodeId)]);
        expect(await store.getWorker(worker.workerId)).toEqual(stored);
      });

      it("lists every registered worker by id", async () => {
        const prefix = uid("list");
        const ids = [`${prefix}-c`, `${prefix}-a`, `${prefix}-b`];
        for (const id of ids) await registered(store, registration(id, { pool: prefix }));
        const listed = (await store.listWorkers()).filter((w) => w.workerId.startsWith(prefix));
        expect(listed.map((w) => w.workerId)).toEqual([...ids].sort());
        expect(listed[0]).toEqual({
          ...registration(`${prefix}-a`, { pool: prefix }),
          holds: {},
          version: 1,
        });
      });

      it("records heartbeats, never moving heartbeatAt back; undefined for an unknown worker", async () => {
        const id = uid("w");
        await registered(store, registration(id, { heartbeatAt: 1_000 }));
        expect(await store.touchWorker(id, 2_000)).toEqual({
          ...registration(id, { heartbeatAt: 2_000 }),
          holds: {},
          version: 1,
        });
        // An earlier (late-delivered) or equal heartbeat: no change, the record as it is.
        expect((await store.touchWorker(id, 1_500))?.heartbeatAt).toBe(2_000);
        expect((await store.touchWorker(id, 2_000))?.heartbeatAt).toBe(2_000);
        expect((await store.getWorker(id))?.heartbeatAt).toBe(2_000);
        // A heartbeat is no change of holds: the version stays.
        expect((await store.getWorker(id))?.version).toBe(1);

        const unknown = uid("unknown");
        expect(await store.touchWorker(unknown, 3_000)).toBeUndefined();
        expect(await store.getWorker(unknown)).toBeUndefined();
      });

      it("deletes a worker only at the version it was read at; deleting again changes nothing", async () => {
        const id = uid("w");
        const stored = await registered(store, registration(id));
        // Changed since (a take, a release, a registration again): not deleted.
        const again = await registered(store, registration(id));
        expect(await store.deleteWorker(id, stored.version)).toBe(false);
        expect(await store.getWorker(id)).toBeDefined();
        expect(await store.deleteWorker(id, again.version)).toBe(true);
        expect(await store.getWorker(id)).toBeUndefined();
        expect((await store.listWorkers()).some((w) => w.workerId === id)).toBe(false);
        expect(await store.deleteWorker(id, again.version)).toBe(false);
        expect(await store.deleteWorker(uid("never"), 1)).toBe(false);
        expect(await store.touchWorker(id, 5_000)).toBeUndefined();
      });
    });

    describe("offers", () => {
      it("offers a node attempt once: a second offer, even later, adds nothing", async () => {
        const pool = uid("pool");
        const task = readyTask(pool);
        await store.offerTask(task);
        await store.offerTask(task);
        await store.offerTask({ ...task, offeredAt: task.offeredAt + 1_000 });
        expect(await store.listReadyTasks(pool, 10)).toEqual([task]);
        // Another attempt of the node is another offer.
        const next = { ...task, attempt: 2, offeredAt: 7_000 };
        await store.offerTask(next);
        expect(await store.listReadyTasks(pool, 10)).toEqual([task, next]);
      });

      it("lists a pool's offers oldest first, at most `limit`, and no other pool's", async () => {
        const pool = uid("pool");
        const times = [30_000, 10_000, 1_700_000_000_000, 20_000, 10_001];
        const tasks = times.map((offeredAt, i) => readyTask(pool, { offeredAt, nodeId: `n${i}` }));
        for (const task of tasks) await store.offerTask(task);
        await store.offerTask(readyTask(uid("other"), { offeredAt: 1 }));
        const oldestFirst = [...tasks].sort((a, b) => a.offeredAt - b.offeredAt);
        expect(await store.listReadyTasks(pool, 10)).toEqual(oldestFirst);
        expect(await store.listReadyTasks(pool, 2)).toEqual(oldestFirst.slice(0, 2));
        expect(await store.listReadyTasks(pool, 5)).toEqual(oldestFirst);
        expect(await store.listReadyTasks(uid("empty"), 10)).toEqual([]);
      });

      it("keeps a task's placement as offered", async () => {
        const pool = uid("pool");
        const task = readyTask(pool, {
          runsOn: {
            pool,
            executors: ["a", "b"],
            capabilities: {},
            labels: ["x"],
            allowedWorkers: ["w1"],
            forbiddenWorkers: ["w2"],
            maxParallelPerWorker: 1,
          },
        });
        await store.offerTask(task);
        expect(await store.listReadyTasks(pool, 1)).toEqual([task]);
      });

      it("withdraws an offer (whatever offer time the task names), and withdrawing again changes nothing", async () => {
        const pool = uid("pool");
        const kept = readyTask(pool, { offeredAt: 1_000 });
        const task = readyTask(pool, { offeredAt: 2_000 });
        await store.offerTask(kept);
        await store.offerTask(task);
        await store.withdrawTask({ ...task, offeredAt: 3_000 });
        expect(await store.listReadyTasks(pool, 10)).toEqual([kept]);
        await store.withdrawTask(task);
        await store.withdrawTask(readyTask(pool));
        expect(await store.listReadyTasks(pool, 10)).toEqual([kept]);
        // Withdrawn, the attempt may be offered again.
        await store.offerTask({ ...task, offeredAt: 4_000 });
        expect(await store.listReadyTasks(pool, 10)).toEqual([kept, { ...task, offeredAt: 4_000 }]);
      });
    });

    describe("a poll's read of a sharded pool (a `from` of its own)", () => {
      /** `count` offers of a new pool at scattered times, each of a node of its own. */
      const pool = async (count: number) => {
        const name = uid("pool");
        const tasks = Array.from({ length: count }, (_, i) =>
          readyTask(name, { nodeId: `n${i}`, offeredAt: 10_000 + ((i * 7_919) % 1_000) * 10 }),
        );
        for (const task of tasks) await store.offerTask(task);
        await store.offerTask(readyTask(uid("other"), { offeredAt: 1 }));
        return { name, tasks };
      };
      // A few starts (on DynamoDB a read of a sparse pool is up to 32 Queries; keys.ts shards tests try 64).
      const starts = Array.from({ length: 8 }, (_, i) => `poll-${i}`);
      const keyOf = (task: ReadyTask) => `${task.executionId}/${task.nodeId}#${task.attempt}`;

      /** Each shard's offers in what was read come oldest first, and none passes an older one of its shard. */
      const expectShardsOldestFirst = (read: ReadyTask[], all: ReadyTask[]) => {
        const readKeys = new Set(read.map(keyOf));
        for (const shard of new Set(read.map(shardOf))) {
          const mine = read.filter((task) => shardOf(task) === shard);
          expect(mine).toEqual([...mine].sort((a, b) => a.offeredAt - b.offeredAt));
          const newest = mine.at(-1)!.offeredAt;
          const older = all.filter((task) => shardOf(task) === shard && task.offeredAt < newest);
          for (const task of older) expect(readKeys.has(keyOf(task))).toBe(true);
        }
      };

      it("finds every offer of a pool holding fewer than `limit`, whatever shard it is in and wherever it starts", async () => {
        const { name, tasks } = await pool(24);
        for (const from of starts) {
          const read = await store.listReadyTasks(name, 100, from);
          expect(read.map(keyOf).sort()).toEqual(tasks.map(keyOf).sort());
          expectShardsOldestFirst(read, tasks);
        }
        // One offer alone is found from every start.
        const alone = uid("pool");
        const task = readyTask(alone);
        await store.offerTask(task);
        for (const from of starts.slice(0, 4))
          expect(await store.listReadyTasks(alone, 100, from)).toEqual([task]);
        expect(await store.listReadyTasks(uid("empty"), 100, "poll")).toEqual([]);
      });

      it("gives at most `limit`, each once, and never passes an offer over for a newer one of its shard", async () => {
        const { name, tasks } = await pool(24);
        for (const from of starts) {
          const read = await store.listReadyTasks(name, 5, from);
          expect(read).toHaveLength(5);
          expect(new Set(read.map(keyOf)).size).toBe(5);
          for (const task of read) expect(task.pool).toBe(name);
          expectShardsOldestFirst(read, tasks);
        }
      });

      it("finds an offer taken or withdrawn nowhere any more", async () => {
        const { name, tasks } = await pool(6);
        const [gone, ...left] = tasks;
        await store.withdrawTask(gone!);
        for (const from of starts.slice(0, 4)) {
          const read = await store.listReadyTasks(name, 100, from);
          expect(read.map(keyOf).sort()).toEqual(left.map(keyOf).sort());
        }
      });
    });

    describe("takeTask", () => {
      it("withdraws the offer, claims the node with its event and adds the hold, in one write", async () => {
        const { pool, worker, task, node } = await offered();
        const take = taking(task, worker.workerId, worker.version);
        const result = await store.takeTask(take);

        const running: NodeRecord = {
          ...node,
          status: "RUNNING",
          lease: { token: take.hold.leaseToken, expiresAt: 66_000 },
          startedAt: 6_000,
        };
        const holding: WorkerRecord = {
          ...worker,
          holds: { [holdKey(task.executionId, task.nodeId)]: take.hold },
          version: worker.version + 1,
        };
        expect(result).toEqual({ ok: true, node: running, worker: holding });
        expect(await store.listReadyTasks(pool, 10)).toEqual([]);
        expect(await store.getNode(task.executionId, task.nodeId)).toEqual(running);
        expect(await store.getWorker(worker.workerId)).toEqual(holding);
        expect(await store.listHistory(task.executionId)).toEqual([
          { at: 4_000, type: "NodeQueued", nodeId: task.nodeId, attempt: 1 },
          take.claim.event,
        ]);
        // Taken, the offer is gone: taking it again is refused for it.
        const again = await store.takeTask(taking(task, worker.workerId, worker.version + 1));
        expect(again).toEqual({ ok: false, refused: "offer" });
      });

      it("claims a node of a wide execution (16 node shards) where the store keeps it", async () => {
        const pool = uid("pool");
        const worker = await registered(store, registration(uid("w"), { pool }));
        const executionId = randomUUID();
        await store.createExecution(
          {
            executionId,
            workflow: "wf",
            version: 3,
            status: "RUNNING",
            input: { json: "null" },
            createdAt: 1_000,
            sinksDone: [],
            nodeShards: 16,
          },
          { at: 1_000, type: "ExecutionStarted" },
        );
        const tasks = ["render", "m[1.5]"].map((nodeId) => readyTask(pool, { executionId, nodeId }));
        for (const task of tasks) {
          await queue(task);
          await store.offerTask(task);
        }
        const [plain, item] = tasks as [ReadyTask, ReadyTask];
        // Refused for its node (another attempt is asked), it answers the node as it is.
        const refused = await store.takeTask({
          ...taking(item, worker.workerId, worker.version),
          claim: {
            ...taking(item, worker.workerId, worker.version).claim,
            condition: { status: ["QUEUED"], attempt: 2 },
          },
        });
        expect(refused).toMatchObject({
          ok: false,
          refused: "node",
          node: { nodeId: item.nodeId, status: "QUEUED" },
        });
        let version = worker.version;
        for (const task of [plain, item]) {
          const take = taking(task, worker.workerId, version);
          const result = await store.takeTask(take);
          expect(result).toMatchObject({
            ok: true,
            node: {
              executionId,
              nodeId: task.nodeId,
              status: "RUNNING",
              lease: { token: take.hold.leaseToken },
            },
          });
          expect(result.ok && (await store.getNode(executionId, task.nodeId))).toEqual(
            result.ok && result.node,
          );
          version += 1;
        }
        expect((await store.listNodes(executionId)).map((n) => [n.nodeId, n.status])).toEqual([
          ["render", "RUNNING"],
        ]);
        expect((await store.listMapItems(executionId, "m", 1)).map((n) => [n.nodeId, n.status])).toEqual([
          ["m[1.5]", "RUNNING"],
        ]);
        expect(await store.listReadyTasks(pool, 10)).toEqual([]);
      });

      it("keeps the worker named in the node's lease (an external claim)", async () => {
        const { worker, task } = await offered();
        const take = taking(task, worker.workerId, worker.version);
        const lease = { token: take.hold.leaseToken, expiresAt: 66_000, workerId: worker.workerId };
        const result = await store.takeTask({
          ...take,
          claim: { ...take.claim, patch: { ...take.claim.patch, lease } },
        });
        expect(result.ok && result.node.lease).toEqual(lease);
        expect((await store.getNode(task.executionId, task.nodeId))?.lease).toEqual(lease);
      });

      it("adds holds beside the ones a worker has, each take at the version it counted", async () => {
        const pool = uid("pool");
        const worker = await registered(store, registration(uid("w"), { pool }));
        const first = readyTask(pool, { nodeId: "a" });
        const second = readyTask(pool, { nodeId: "b", executionId: first.executionId, offeredAt: 5_001 });
        for (const task of [first, second]) {
          await queue(task);
          await store.offerTask(task);
        }
        const one = await store.takeTask(taking(first, worker.workerId, worker.version));
        expect(one.ok).toBe(true);
        const two = await store.takeTask(taking(second, worker.workerId, worker.version + 1));
        expect(two.ok).toBe(true);
        expect(Object.keys((await store.getWorker(worker.workerId))?.holds ?? {}).sort()).toEqual([
          holdKey(first.executionId, "a"),
          holdKey(first.executionId, "b"),
        ]);
        expect((await store.getWorker(worker.workerId))?.version).toBe(worker.version + 2);
      });

      it("is refused for an offer that is gone, and changes nothing", async () => {
        const { pool, worker, task } = await offered();
        await store.withdrawTask(task);
        const before = await snapshot(pool, task, worker.workerId);
        expect(await store.takeTask(taking(task, worker.workerId, worker.version))).toEqual({
          ok: false,
          refused: "offer",
        });
        expect(await snapshot(pool, task, worker.workerId)).toEqual(before);
        expect(before.offers).toEqual([]);
        expect(before.node?.status).toBe("QUEUED");
      });

      it("is refused for a node not QUEUED at that attempt, with the node as it is, and changes nothing", async () => {
        const { pool, worker, task, node } = await offered();
        // The node moved on (cancelled) while its offer was still listed.
        const cancelled = await store.transitionNode(
          task.executionId,
          task.nodeId,
          { status: ["QUEUED"] },
          { status: "CANCELLED", finishedAt: 4_500 },
        );
        expect(cancelled.ok).toBe(true);
        const before = await snapshot(pool, task, worker.workerId);
        const refused = await store.takeTask(taking(task, worker.workerId, worker.version));
        expect(refused).toEqual({ ok: false, refused: "node", node: before.node });
        expect(await snapshot(pool, task, worker.workerId)).toEqual(before);
        expect(before.offers).toEqual([task]);

        // QUEUED, but at a later attempt than the offer's.
        const other = await offered();
        await store.transitionNode(
          other.task.executionId,
          other.task.nodeId,
          { status: ["QUEUED"] },
          { attempt: 2 },
        );
        const otherBefore = await snapshot(other.pool, other.task, other.worker.workerId);
        expect(await store.takeTask(taking(other.task, other.worker.workerId, other.worker.version))).toEqual(
          {
            ok: false,
            refused: "node",
            node: { ...other.node, attempt: 2 },
          },
        );
        expect(await snapshot(other.pool, other.task, other.worker.workerId)).toEqual(otherBefore);
        expect(node.status).toBe("QUEUED");
      });

      it("is refused for a stale worker version or an unknown worker, and changes nothing", async () => {
        const { pool, worker, task } = await offered();
        // Registered again since its limits were counted: version 2.
        await registered(store, registration(worker.workerId, { pool }));
        const before = await snapshot(pool, task, worker.workerId);
        expect(await store.takeTask(taking(task, worker.workerId, worker.version))).toEqual({
          ok: false,
          refused: "worker",
        });
        expect(await snapshot(pool, task, worker.workerId)).toEqual(before);
        expect(before.offers).toEqual([task]);
        expect(before.worker?.version).toBe(worker.version + 1);

        const unknown = uid("unknown");
        expect(await store.takeTask(taking(task, unknown, 1))).toEqual({ ok: false, refused: "worker" });
        expect(await snapshot(pool, task, worker.workerId)).toEqual(before);
        expect(await store.getWorker(unknown)).toBeUndefined();

        // At the version it has now, it takes the task.
        expect((await store.takeTask(taking(task, worker.workerId, worker.version + 1))).ok).toBe(true);
      });

      it("lets exactly one of two racing takes of one offer through", async () => {
        const { pool, worker, task } = await offered();
        const rival = await registered(store, registration(uid("w"), { pool }));
        const results = await Promise.all([
          store.takeTask(taking(task, worker.workerId, worker.version, "token-a")),
          store.takeTask(taking(task, rival.workerId, rival.version, "token-b")),
        ]);
        const winners = results.filter((r) => r.ok);
        expect(winners).toHaveLength(1);
        const loser = results.find((r) => !r.ok);
        expect(loser?.ok === false && ["offer", "node"].includes(loser.refused)).toBe(true);

        const winner = winners[0]!;
        const winnerId = winner.ok ? winner.worker.workerId : "";
        const loserId = winnerId === worker.workerId ? rival.workerId : worker.workerId;
        const token = winnerId === worker.workerId ? "token-a" : "token-b";
        expect((await store.getNode(task.executionId, task.nodeId))?.lease?.token).toBe(token);
        expect(Object.keys((await store.getWorker(winnerId))?.holds ?? {})).toHaveLength(1);
        expect(await store.getWorker(loserId)).toMatchObject({ holds: {}, version: 1 });
        expect(await store.listReadyTasks(pool, 10)).toEqual([]);
        expect((await store.listHistory(task.executionId)).map((e) => e.type)).toEqual([
          "NodeQueued",
          "NodeStarted",
        ]);
      });
    });

    describe("releaseHold", () => {
      it("removes a hold and bumps the version once; again, or for an unknown worker, changes nothing", async () => {
        const { worker, task } = await offered();
        const taken = await store.takeTask(taking(task, worker.workerId, worker.version, "token-1"));
        expect(taken.ok).toBe(true);
        const key = holdKey(task.executionId, task.nodeId);
        // Another attempt's token (an older one of the same node): that hold is not its to release.
        await store.releaseHold(worker.workerId, key, "token-0");
        expect(Object.keys((await store.getWorker(worker.workerId))?.holds ?? {})).toEqual([key]);
        await store.releaseHold(worker.workerId, key, "token-1");
        const released = await store.getWorker(worker.workerId);
        expect(released).toEqual({ ...worker, holds: {}, version: worker.version + 2 });
        await store.releaseHold(worker.workerId, key, "token-1");
        await store.releaseHold(worker.workerId, holdKey(randomUUID(), "other"), "token-1");
        expect(await store.getWorker(worker.workerId)).toEqual(released);

        const unknown = uid("unknown");
        await store.releaseHold(unknown, key, "token-1");
        expect(await store.getWorker(unknown)).toBeUndefined();
      });
    });
  });
}
