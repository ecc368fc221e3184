/**
 * `npm run bench -- --capacity` (bench/capacity-*.ts): the four load runs at tiny sizes on the
 * emulator yield a table of the right shape — every DynamoDB request attributed to a partition of a
 * known key shape, a ceiling for each shared shape — and the arithmetic shows a sharded key by
 * itself. The figures are the bench's to report (bench/results/capacity-latest.md), not asserted.
 */

import { describe, expect, inject, it } from "vitest";
import { capacityMarkdown, measureCapacity, parseCapacitySizes } from "../../bench/capacity-main.js";
import type { PartitionUse } from "../../bench/capacity-partitions.js";
import { FULL_SIZES, type LoadRun } from "../../bench/capacity-run.js";
import { CAPACITY_EXPLANATION, capacityOf, PARTITION_LIMITS } from "../../bench/capacity-table.js";
import { LISTING_SHARDS } from "../../shared/adapters/dynamo/keys.js";
import { EMULATOR } from "../support/backends.js";
import { PATIENT } from "../support/progress.js";

const TINY = { starts: 10, width: 10, items: 10, externalExecutions: 1, perPool: 5 };

const KNOWN_SHAPES =
  /^(EX#<id>|WF#<name>|WORKERS|WORKERS#<shard>|WORKFLOWS|POOL#<pool>|OFFER#<id>|OFFERED#<id>|IDEM#<workflow>#<key>|gsi1 XW#<workflow>|gsi2 SW#<n>|gsi3 XA#<n>|TM#<shard>#<day>|TIMERS|LEASE#<name>|DLQ)$/;

describe("bench: capacity", PATIENT, () => {
  it("runs the four loads at tiny sizes and derives a ceiling for every shared key shape", async () => {
    const endpoints = inject("awsEndpoints");
    const report = await measureCapacity({
      quick: true,
      sizes: TINY,
      // The run's moto when that is the emulator (one endpoint for every service), else its own.
      ...(EMULATOR === "moto" ? { endpoint: endpoints.dynamodb } : {}),
    });

    expect(report.loads.map((l) => [l.name, l.unit, l.units])).toEqual([
      ["starts", "start", 10],
      ["fan-out", "node", 13],
      ["map", "map item", 10],
      ["external", "external task", 10],
    ]);
    for (const load of report.loads) {
      expect(load.failedExecutions, load.name).toBe(0);
      expect(load.rows.length, load.name).toBeGreaterThan(0);
      for (const row of load.rows) {
        expect(row.shape, load.name).toMatch(KNOWN_SHAPES);
        expect(row.keys).toBeGreaterThan(0);
        if (row.ceiling === undefined) {
          expect(row.note).toBeDefined();
          continue;
        }
        expect(row.ceiling).toBeGreaterThan(0);
        // The ceiling is the lower of the two limits over the busiest key's units per unit of work.
        const byWrites = PARTITION_LIMITS.writeUnits / row.writeUnitsPerUnit;
        const byReads = PARTITION_LIMITS.readUnits / row.readUnitsPerUnit;
        expect(row.ceiling).toBeCloseTo(Math.min(byWrites, byReads));
        if (row.note === undefined) expect(row.goalMet).toBe(row.ceiling >= load.goal);
        else expect(row.goalMet).toBeUndefined();
      }
      const shares = load.busiest.reduce((sum, p) => sum + p.requestShare, 0);
      expect(shares).toBeGreaterThan(0);
      expect(shares).toBeLessThanOrEqual(1 + 1e-9);
      const counted = load.rows.flatMap((r) => (r.goalMet === undefined ? [] : [r.ceiling!]));
      expect(load.ceiling).toBe(counted.length === 0 ? undefined : Math.min(...counted));
    }
    const [starts, fanOut, map, external] = report.loads;
    const shape = (load: typeof starts, name: string) => load?.rows.find((r) => r.shape === name);
    // Every start writes the workflow's listing index entry, spread over its shards (keys.ts
    // LISTING_SHARDS); each start has its own execution.
    const listing = shape(starts, "gsi1 XW#<workflow>")?.keys ?? 0;
    expect(listing).toBeGreaterThan(1);
    expect(listing).toBeLessThanOrEqual(LISTING_SHARDS);
    expect(shape(starts, "EX#<id>")?.keys).toBe(10);
    expect(shape(starts, "EX#<id>")?.ceiling).toBeUndefined();
    // One small execution's nodes all land on its partition; a map's execution spreads its nodes
    // and items over its node shards (keys.ts), `EX#<id>` and `EX#<id>#<n>` of one shape.
    expect(shape(fanOut, "EX#<id>")?.keys).toBe(1);
    expect(shape(map, "EX#<id>")?.keys).toBeGreaterThan(1);
    expect(shape(map, "EX#<id>")?.keys).toBeLessThanOrEqual(16);
    // External tasks: the fleet's registry and each pool's offers over their shards.
    expect(shape(external, "WORKERS#<shard>")?.keys).toBeGreaterThanOrEqual(1);
    expect(shape(external, "POOL#<pool>")?.keys).toBeGreaterThanOrEqual(2);

    const markdown = capacityMarkdown(report);
    expect(markdown).toContain(CAPACITY_EXPLANATION[0]);
    expect(markdown.indexOf(CAPACITY_EXPLANATION[0]!)).toBeLessThan(markdown.indexOf("## Summary"));
    for (const load of report.loads) expect(markdown).toContain(`## ${load.name}: `);
  });

  it("a key sharded over more partitions raises its shape's ceiling by itself", () => {
    const use = (pk: string, writeUnits: number, index?: string): PartitionUse => ({
      ...(index === undefined ? {} : { index }),
      pk,
      requests: writeUnits,
      writeUnits,
      readUnits: 0,
      strongReadUnits: 0,
    });
    const run = (partitions: PartitionUse[]): LoadRun => ({
      load: {
        name: "starts",
        description: "1,000 starts",
        unit: "start",
        units: 1000,
        goal: 10_000,
        goalScope: "starts/s per workflow",
        goalPer: "workflow",
      },
      executions: 1000,
      failedExecutions: 0,
      seconds: 10,
      partitions,
    });
    // One write unit per start on one index key: 1,000 starts/s.
    const one = capacityOf(run([use("XW#w", 1000, "gsi1")]));
    expect(one.rows[0]).toMatchObject({
      shape: "gsi1 XW#<workflow>",
      keys: 1,
      ceiling: 1000,
      goalMet: false,
    });
    // The same writes over 16 keys of the shape: the busiest takes a sixteenth.
    const sharded = capacityOf(
      run(Array.from({ length: 16 }, (_, i) => use(`XW#w#${i}`, 1000 / 16, "gsi1"))),
    );
    expect(sharded.rows[0]).toMatchObject({
      shape: "gsi1 XW#<workflow>",
      keys: 16,
      ceiling: 16_000,
      goalMet: true,
    });
    // Reads: eventually consistent units are already half; 3,000 per partition.
    const reads = capacityOf(
      run([{ pk: "WF#w", requests: 1000, writeUnits: 0, readUnits: 500, strongReadUnits: 0 }]),
    );
    expect(reads.rows[0]).toMatchObject({ shape: "WF#<name>", ceiling: 6000, limitedBy: "read" });
  });

  it("a worker's registry shard is judged spread over its shards, as by a large fleet; an execution's offer markers per execution", () => {
    const use = (pk: string, writeUnits: number): PartitionUse => ({
      pk,
      requests: writeUnits,
      writeUnits,
      readUnits: 0,
      strongReadUnits: 0,
    });
    // 4 workers on 4 of 64 shards (a listing reads all 64), 200 tasks over 10 executions.
    const workers = Array.from({ length: 64 }, (_, i) =>
      use(`WORKERS#${String(i).padStart(2, "0")}`, i < 4 ? 640 : 0),
    );
    const result = capacityOf({
      load: {
        name: "external",
        description: "200 external tasks",
        unit: "external task",
        units: 200,
        goal: 5000,
        goalScope: "external tasks/s fleet-wide",
        goalPer: "fleet",
      },
      executions: 10,
      failedExecutions: 0,
      seconds: 100,
      partitions: [...workers, use("OFFERED#e1", 40)],
    });
    const registry = result.rows.find((row) => row.shape === "WORKERS#<shard>");
    // 2,560 WU over 64 shards for 200 tasks: 0.2 WU a task on each, 5,000 tasks/s.
    expect(registry?.writeUnitsPerUnit).toBeCloseTo(0.2);
    expect(registry?.ceiling).toBeCloseTo(5000);
    expect(registry?.spread).toContain("3.20 WU a task on its busiest");
    // The offer markers of one execution: divided by its 20 tasks, and not a fleet ceiling.
    const markers = result.rows.find((row) => row.shape === "OFFERED#<id>");
    expect(markers?.per).toBe(20);
    expect(markers?.goalMet).toBeUndefined();
  });

  it("--capacity-sizes sets some sizes over the issue's and refuses anything else", () => {
    expect(parseCapacitySizes("width=500,items=400")).toEqual({ ...FULL_SIZES, width: 500, items: 400 });
    for (const bad of ["width", "width=0", "width=1.5", "depth=3"])
      expect(() => parseCapacitySizes(bad), bad).toThrow(/--capacity-sizes/);
  });
});
