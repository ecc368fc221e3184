/**
 * The Store contract of `listWorkflows` (shared/ports.ts): every registered workflow by name, its
 * latest version, its first version's creation time and the latest version's description, in
 * pages. Run on every adapter by store.test.ts, on a store of its own (the listing sees everything).
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasCode } from "../../shared/domain/errors.js";
import type { WorkflowVersionRecord } from "../../shared/domain/records.js";
import type { Store, WorkflowSummary } from "../../shared/ports.js";
import type { StoreFactory } from "./store.contract.js";

function version(
  name: string,
  v: number,
  options: { hash?: string; createdAt?: number; description?: string } = {},
): WorkflowVersionRecord {
  return {
    name,
    version: v,
    definitionHash: options.hash ?? `hash-${v}`,
    definition: {
      name,
      ...(options.description === undefined ? {} : { description: options.description }),
      nodes: [{ id: "a", type: "noop", params: { v } }],
    },
    createdAt: options.createdAt ?? 1_700_000_000_000 + v,
  };
}

/** Every page of the listing, `limit` at a time, checking that `next` comes only when more follow. */
async function listAll(store: Store, limit: number): Promise<WorkflowSummary[][]> {
  const pages: WorkflowSummary[][] = [];
  let next: string | undefined;
  for (let guard = 0; guard < 1000; guard++) {
    const page = await store.listWorkflows({ limit, ...(next === undefined ? {} : { next }) });
    expect(page.items.length).toBeLessThanOrEqual(limit);
    pages.push(page.items);
    if (page.next === undefined) return pages;
    expect(page.items).toHaveLength(limit);
    next = page.next;
  }
  throw new Error("listWorkflows never stopped paging");
}

export function describeWorkflowListingContract(label: string, makeStore: StoreFactory): void {
  describe(`Store contract, listWorkflows: ${label}`, () => {
    let store: Store;
    let cleanup: (() => Promise<void>) | undefined;
    // Names of this run sort together, apart from anything else on the store.
    const prefix = `l${randomUUID().slice(0, 8)}`;
    const mine = (items: WorkflowSummary[]) => items.filter((item) => item.name.startsWith(prefix));

    beforeAll(async () => {
      ({ store, cleanup } = await makeStore());
    });
    afterAll(async () => {
      await cleanup?.();
    });

    it("lists nothing before a workflow is registered", async () => {
      expect(await store.listWorkflows({ limit: 10 })).toEqual({ items: [] });
    });

    it("names a workflow's latest version from its head (none before it is registered)", async () => {
      const name = `head-${prefix}`;
      expect(await store.getLatestWorkflowVersion(name)).toBeUndefined();
      await store.putWorkflowVersion(version(name, 1));
      await store.putWorkflowVersion(version(name, 2));
      // Eventually consistent on DynamoDB: the emulators answer the latest write.
      expect(await store.getLatestWorkflowVersion(name)).toBe(2);
      expect((await store.getWorkflowVersion(name, 2))?.version).toBe(2);
    });

    it("lists workflows by name with their latest version, first creation time and latest description", async () => {
      const [a, b, c] = [`${prefix}-a`, `${prefix}-B`, `${prefix}-c.x_1`];
      expect(await store.putWorkflowVersion(version(c, 1, { createdAt: 30 }))).toBe("created");
      expect(await store.putWorkflowVersion(version(a, 1, { createdAt: 10, description: "first" }))).toBe(
        "created",
      );
      expect(await store.putWorkflowVersion(version(b, 1, { createdAt: 20 }))).toBe("created");
      expect(await store.putWorkflowVersion(version(a, 2, { createdAt: 40 }))).toBe("created");
      expect(await store.putWorkflowVersion(version(b, 2, { createdAt: 50, description: "two" }))).toBe(
        "created",
      );

      const listed = mine((await store.listWorkflows({ limit: 100 })).items);
      // Code-unit (byte) order: upper case before lower case.
      expect(listed).toEqual([
        { name: b, latestVersion: 2, createdAt: 20, description: "two" },
        // The latest version has no description: none listed (the first one's is not kept).
        { name: a, latestVersion: 2, createdAt: 10 },
        { name: c, latestVersion: 1, createdAt: 30 },
      ]);
    });

    it("is unchanged by a refused version: a repeat, a gap or a known hash", async () => {
      const name = `${prefix}-refused`;
      await store.putWorkflowVersion(version(name, 1, { description: "kept" }));
      expect(await store.putWorkflowVersion(version(name, 1, { hash: "other" }))).toBe("conflict");
      expect(await store.putWorkflowVersion(version(name, 3, { hash: "gap", description: "no" }))).toBe(
        "conflict",
      );
      expect(await store.putWorkflowVersion(version(name, 2, { hash: "hash-1", description: "no" }))).toBe(
        "conflict",
      );
      const listed = mine((await store.listWorkflows({ limit: 100 })).items).find((w) => w.name === name);
      expect(listed).toEqual({ name, latestVersion: 1, createdAt: 1_700_000_000_001, description: "kept" });
    });

    it("lists a workflow once when concurrent writers raced for its first version", async () => {
      const name = `${prefix}-race`;
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          store.putWorkflowVersion(version(name, 1, { hash: `h${i}`, createdAt: 100 + i })),
        ),
      );
      const winner = results.indexOf("created");
      expect(results.filter((r) => r === "created")).toHaveLength(1);
      const listed = mine((await store.listWorkflows({ limit: 100 })).items).filter((w) => w.name === name);
      expect(listed).toEqual([{ name, latestVersion: 1, createdAt: 100 + winner }]);
    });

    it("pages through every workflow in order, whatever the page size", async () => {
      for (let i = 0; i < 7; i++) await store.putWorkflowVersion(version(`${prefix}-page-${i}`, 1));
      const everything = (await listAll(store, 1000)).flat();
      const names = everything.map((w) => w.name);
      expect(names).toEqual([...names].sort());
      expect(new Set(names).size).toBe(names.length);
      for (const limit of [1, 2, 3, 7]) {
        const pages = await listAll(store, limit);
        expect(pages.flat()).toEqual(everything);
      }
      // A last page that is exactly full: no `next` after it.
      const exact = await store.listWorkflows({ limit: everything.length });
      expect(exact.items).toHaveLength(everything.length);
      expect(exact.next).toBeUndefined();
    });

    it("refuses a cursor it never returned as InvalidCursor", async () => {
      const error = await store.listWorkflows({ limit: 5, next: "not-a-cursor" }).catch((e: unknown) => e);
      expect(hasCode(error, "InvalidCursor")).toBe(true);
    });
  });
}
