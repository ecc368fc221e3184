/**
 * The Store's fences on an execution's life (a redrive revives a FAILED execution and clears its
 * `failedNode` mark): cancellations, bad arrivals and the failure-finishing write are accepted only
 * while the execution is ending, so those decided before a redrive by a stalled process are refused.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ExecutionRecord, ExecutionStatus } from "../../shared/domain/records.js";
import type { Store } from "../../shared/ports.js";
import type { StoreFactory } from "./store.contract.js";

const cancelled = { status: "CANCELLED", finishedAt: 9, error: { name: "Cancelled", message: "x" } } as const;

export function describeStoreFenceContract(label: string, makeStore: StoreFactory): void {
  describe(`Store fences on an execution's life: ${label}`, () => {
    let store: Store;
    let cleanup: (() => Promise<void>) | undefined;
    beforeAll(async () => {
      ({ store, cleanup } = await makeStore());
    });
    afterAll(async () => {
      await cleanup?.();
    });

    const create = async (status: ExecutionStatus, overrides: Partial<ExecutionRecord> = {}) => {
      const record: ExecutionRecord = {
        executionId: randomUUID(),
        workflow: "wf",
        version: 1,
        status,
        input: { json: "null" },
        createdAt: 1,
        sinksDone: [],
        ...overrides,
      };
      await store.createExecution(record, { at: 1, type: "ExecutionCreated" });
      return record.executionId;
    };
    /** A RUNNING execution whose node `bad` failed for good: its mark set by failNode. */
    const failing = async () => {
      const id = await create("RUNNING");
      const failed = await store.failNode(
        id,
        "bad",
        { status: ["PENDING"] },
        { status: "FAILED", finishedAt: 5 },
      );
      expect(failed.ok).toBe(true);
      expect((await store.getExecution(id))?.failedNode).toBe("bad");
      return id;
    };
    const cancel = (id: string, nodeId = "n") =>
      store.transitionNode(id, nodeId, { status: ["PENDING", "QUEUED"], executionEnding: true }, cancelled);

    it("failNode with sweepAt makes the running execution due in the same write; the first failure keeps its mark", async () => {
      const id = await create("RUNNING");
      expect((await store.listDueExecutions(10_000, 100)).map((e) => e.executionId)).not.toContain(id);
      const first = await store.failNode(
        id,
        "bad",
        { status: ["PENDING"] },
        { status: "FAILED", finishedAt: 5 },
        undefined,
        { sweepAt: 7_000 },
      );
      expect(first.ok).toBe(true);
      expect(await store.getExecution(id)).toMatchObject({ failedNode: "bad", sweepAt: 7_000 });
      expect((await store.listDueExecutions(6_999, 100)).map((e) => e.executionId)).not.toContain(id);
      expect((await store.listDueExecutions(7_000, 100)).map((e) => e.executionId)).toContain(id);
      const second = await store.failNode(
        id,
        "other",
        { status: ["PENDING"] },
        { status: "FAILED", finishedAt: 6 },
        undefined,
        { sweepAt: 8_000 },
      );
      expect(second.ok).toBe(true);
      expect(await store.getExecution(id)).toMatchObject({ failedNode: "bad", sweepAt: 8_000 });
    });

    it("refuses a fenced cancellation while the execution runs with no failure in this life, and writes nothing", async () => {
      const id = await create("RUNNING");
      await store.transitionNode(
        id,
        "n",
        { status: ["PENDING"] },
        { status: "QUEUED", attempt: 1, queuedAt: 3 },
      );
      const refused = await cancel(id);
      expect(refused.ok).toBe(false);
      expect(!refused.ok && refused.current?.status).toBe("QUEUED");
      expect((await store.getNode(id, "n"))?.status).toBe("QUEUED");
      // A node with no record yet stays without one.
      expect((await cancel(id, "never-written")).ok).toBe(false);
      expect(await store.getNode(id, "never-written")).toBeUndefined();
      // The same write, unfenced, goes through: the refusal came from the fence.
      const plain = await store.transitionNode(id, "n", { status: ["QUEUED"] }, cancelled);
      expect(plain.ok).toBe(true);
    });

    it("refuses a revival fenced on the execution's life once it failed again or ended, and writes nothing", async () => {
      const revive = (id: string) =>
        store.transitionNode(
          id,
          "n",
          { status: ["CANCELLED"], attempt: 0, executionLive: true },
          { status: "PENDING", finishedAt: null },
        );
      for (const id of [await failing(), await create("FAILED"), await create("CANCELLED")]) {
        await store.transitionNode(id, "n", { status: ["PENDING"] }, cancelled);
        const refused = await revive(id);
        expect(refused.ok).toBe(false);
        expect((await store.getNode(id, "n"))?.status).toBe("CANCELLED");
      }
      // While it lives (RUNNING, no failure in this life) the same write goes through.
      const live = await create("RUNNING");
      await store.transitionNode(live, "n", { status: ["PENDING"] }, cancelled);
      expect((await revive(live)).ok).toBe(true);
      expect((await store.getNode(live, "n"))?.status).toBe("PENDING");
    });

    it("accepts a fenced cancellation once a node failed in this life, or the execution finished", async () => {
      const ids = [
        await failing(),
        await create("FAILED"),
        await create("CANCELLED"),
        await create("SUCCEEDED"),
      ];
      for (const id of ids) {
        const done = await cancel(id);
        expect(done.ok).toBe(true);
        expect(done.ok && done.record).toMatchObject({ nodeId: "n", status: "CANCELLED", finishedAt: 9 });
        expect((await store.getNode(id, "n"))?.status).toBe("CANCELLED");
        // The node's own condition still holds it: not twice.
        expect((await cancel(id)).ok).toBe(false);
      }
    });

    it("refuses a fenced write for an execution that does not exist, or has not started", async () => {
      expect((await cancel(randomUUID())).ok).toBe(false);
      expect((await cancel(await create("PENDING"))).ok).toBe(false);
    });

    it("a redrive's revival (clearing the mark) closes the fence again", async () => {
      const id = await failing();
      await store.transitionExecution(id, ["RUNNING"], { status: "FAILED", finishedAt: 6 });
      const revived = await store.transitionExecution(id, ["FAILED"], {
        status: "RUNNING",
        failedNode: null,
        finishedAt: null,
      });
      expect(revived.ok).toBe(true);
      expect((await cancel(id)).ok).toBe(false);
      // Asking a running node to stop is a cancellation too.
      await store.transitionNode(id, "r", { status: ["PENDING"] }, { status: "RUNNING", attempt: 1 });
      const stop = await store.transitionNode(
        id,
        "r",
        { status: ["RUNNING"], executionEnding: true },
        { cancelRequested: true },
      );
      expect(stop.ok).toBe(false);
      expect((await store.getNode(id, "r"))?.cancelRequested).toBeFalsy();
    });

    it("records a bad arrival only while the execution is ending; ok arrivals always", async () => {
      const arrival = (id: string, parentIndex: number, outcome: "ok" | "bad") => ({
        executionId: id,
        childId: "child",
        parentIndex,
        outcome,
        now: 100,
      });
      const running = await create("RUNNING");
      expect((await store.recordArrival(arrival(running, 0, "bad"))).recorded).toBe(false);
      expect(await store.getNode(running, "child")).toBeUndefined();
      expect((await store.recordArrival(arrival(running, 1, "ok"))).recorded).toBe(true);
      const refused = await store.recordArrival(arrival(running, 0, "bad"));
      expect(refused).toMatchObject({ recorded: false, node: { okDeps: [1], badDeps: [] } });

      const ending = await failing();
      const recorded = await store.recordArrival(arrival(ending, 0, "bad"));
      expect(recorded).toMatchObject({ recorded: true, node: { status: "PENDING", badDeps: [0] } });
      expect((await store.getNode(ending, "child"))?.badDeps).toEqual([0]);
    });

    it("finishes an execution as failed with the `failedNode` guard only while the mark stands", async () => {
      const unmarked = await create("RUNNING");
      const refused = await store.transitionExecution(
        unmarked,
        ["RUNNING"],
        { status: "FAILED", finishedAt: 7 },
        undefined,
        { failedNode: true },
      );
      expect(refused.ok).toBe(false);
      expect((await store.getExecution(unmarked))?.status).toBe("RUNNING");
      const marked = await failing();
      const done = await store.transitionExecution(
        marked,
        ["RUNNING"],
        { status: "FAILED", finishedAt: 7 },
        undefined,
        { failedNode: true },
      );
      expect(done.ok && done.record.status).toBe("FAILED");
    });

    it("finishes an execution as succeeded with the `noFailedNode` guard only without a failure mark or a revival under way", async () => {
      const succeed = (id: string) =>
        store.transitionExecution(id, ["RUNNING"], { status: "SUCCEEDED", finishedAt: 8 }, undefined, {
          noFailedNode: true,
        });
      const marked = await failing();
      expect((await succeed(marked)).ok).toBe(false);
      expect((await store.getExecution(marked))?.status).toBe("RUNNING");

      // A redrive's revival: the mark goes, `reviving` stands until the nodes are revived.
      const reviving = await create("FAILED", { failedNode: "bad" });
      const revived = await store.transitionExecution(reviving, ["FAILED"], {
        status: "RUNNING",
        failedNode: null,
        reviving: 3,
      });
      expect(revived.ok && revived.record).toMatchObject({ status: "RUNNING", reviving: 3 });
      expect(revived.ok && revived.record.failedNode).toBeUndefined();
      expect((await succeed(reviving)).ok).toBe(false);
      expect((await store.getExecution(reviving))?.status).toBe("RUNNING");

      // Only the revival that set the mark clears it (the guard names the mark's value).
      const other = await store.transitionExecution(reviving, ["RUNNING"], { reviving: null }, undefined, {
        reviving: 2,
      });
      expect(other.ok).toBe(false);
      expect((await store.getExecution(reviving))?.reviving).toBe(3);
      const cleared = await store.transitionExecution(reviving, ["RUNNING"], { reviving: null }, undefined, {
        reviving: 3,
      });
      expect(cleared.ok && cleared.record.reviving).toBeUndefined();
      const done = await succeed(reviving);
      expect(done.ok && done.record.status).toBe("SUCCEEDED");
    });
  });
}
