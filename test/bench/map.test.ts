/**
 * The map workload, per item, beside Step Functions' Distributed Map. Counts only, on the memory
 * backend (never timings), with bounds from the map's design (domain/map.ts, engine/map.ts): each
 * item claimed and completed (two writes) and sent once (its message batched with the invocation's
 * others), each lane's end one shard write, the list kept in chunks of 1,000 (one payload each).
 * The bench row itself runs 10,000 items; 2,500 here keep three chunks, one of them in S3.
 */
import { describe, expect, it } from "vitest";
import { runBench } from "../../bench/main.js";
import {
  mapComparison,
  stepFunctionsExpressPerMillionItems,
  stepFunctionsStandardPerMillionItems,
} from "../../bench/map.js";
import { renderMarkdown, toRow } from "../../bench/report.js";
import { runWorkload } from "../../bench/run.js";
import { MAP_CONCURRENCY, mapOf } from "../../bench/workloads.js";
import { MAP_LIMITS } from "../../shared/domain/map.js";
import { PAYLOAD_LIMITS } from "../../shared/domain/payload.js";

const ITEMS = 2500;
/** The map's own writes beside its items': the execution's creation and end, the map's claim, waiting and completion, its sink. */
const FIXED_WRITES = 10;
/**
 * The write units of the map's fan-out budget (shared/domain/fan-out.ts): its reservation and its
 * release (transactions of two writes, 4 units each), and its execution's end leaving the sweeper's
 * index once they are given back (1).
 */
const FAN_OUT_WRITE_UNITS = 9;

describe("bench: a map's cost per item", () => {
  it("runs every item once and counts per item within the design's bounds", async () => {
    const workload = mapOf(ITEMS);
    const row = toRow(await runWorkload(workload, { backend: "memory", concurrency: 8, batchSize: 10 }));
    const lanes = MAP_CONCURRENCY;
    expect(row.failedExecutions).toBe(0);
    // The map and its items, each completed once.
    expect(row.totalNodes).toBe(ITEMS + 1);
    expect(row.completedNodes).toBe(ITEMS + 1);

    const ops = row.calls.ops;
    const updates = ops["DynamoDB.UpdateItem"]?.calls ?? 0;
    // Each item's claim and completion, and one shard write per lane as it ends: nothing per item beyond.
    expect(updates).toBeGreaterThanOrEqual(2 * ITEMS + lanes);
    expect(updates).toBeLessThanOrEqual(2 * ITEMS + lanes + FIXED_WRITES);
    // One message per item, the map's own and its last lane's call to assemble it.
    const messages = ops["SQS.SendMessageBatch"]?.items ?? 0;
    expect(messages).toBe(ITEMS + 2);
    const sendCalls = ops["SQS.SendMessageBatch"]?.calls ?? 0;
    expect(sendCalls).toBeGreaterThanOrEqual(Math.ceil(messages / 10));
    expect(sendCalls).toBeLessThanOrEqual(messages);
    expect(ops["SQS.ReceiveMessage"]?.items).toBe(messages);
    expect(ops["SQS.DeleteMessageBatch"]?.items).toBe(messages);
    // The list in chunks of 1,000: each over the inline threshold is one PUT, and so is the output.
    const list = Array.from({ length: ITEMS }, (_, i) => i);
    const chunks = Array.from({ length: Math.ceil(ITEMS / MAP_LIMITS.chunkSize) }, (_, c) =>
      list.slice(c * MAP_LIMITS.chunkSize, (c + 1) * MAP_LIMITS.chunkSize),
    );
    expect(chunks).toHaveLength(3);
    const offloaded = (value: unknown) =>
      Buffer.byteLength(JSON.stringify(value)) > PAYLOAD_LIMITS.inlineBytes;
    expect(row.calls.s3.putRequests).toBe(chunks.filter(offloaded).length + (offloaded(list) ? 1 : 0));
    expect(row.calls.s3.putRequests).toBe(2);

    const comparison = mapComparison([row], [{ workload: "map", items: ITEMS, lanes }]);
    const [point] = comparison?.points ?? [];
    expect(point).toMatchObject({
      workload: "map",
      items: ITEMS,
      lanes,
      countedOn: "memory",
      timedOn: "memory",
    });
    const m = point!;
    // Per item: the totals over the items (the map's own node included).
    const totalUnits = row.calls.ddb.writeUnits + row.calls.ddb.indexWriteUnits;
    expect(m.writeUnits).toBeCloseTo(totalUnits / ITEMS);
    expect(m.writeUnits).toBeGreaterThanOrEqual(2 + lanes / ITEMS);
    expect(m.writeUnits).toBeLessThanOrEqual(2 + (lanes + FIXED_WRITES + 5 + FAN_OUT_WRITE_UNITS) / ITEMS);
    expect(m.readUnits).toBeCloseTo(row.calls.ddb.readUnits / ITEMS);
    // A backend that ran fewer items than the workload names (moto: bench/main.ts) is divided by the
    // items it ran: a 1,000-item moto run divided by 10,000 showed a tenth of the cost per item.
    const fewer = mapComparison(
      [{ ...row, backend: "moto" }],
      [{ workload: "map", items: ITEMS * 10, lanes, itemsOn: { moto: ITEMS } }],
    );
    expect(fewer?.points[0]).toMatchObject({ items: ITEMS, countedOn: "moto" });
    expect(fewer?.points[0]?.writeUnits).toBeCloseTo(totalUnits / ITEMS);
    expect(fewer?.points[0]?.lambdaGbSeconds).toBeCloseTo(m.lambdaGbSeconds);
    // Reads: the execution (eventually consistent, ½), the map's record for the item's element (1),
    // the item's record again after its end (1), and its share of the map's check (½): 3 at most.
    expect(m.readUnits).toBeGreaterThanOrEqual(0.5);
    expect(m.readUnits).toBeLessThanOrEqual(3 + FIXED_WRITES / ITEMS);
    expect(m.sqsRequests).toBeCloseTo(row.calls.sqs.billedRequests / ITEMS);
    expect(m.sqsRequests).toBeCloseTo(m.sqsSendCalls + m.sqsReceives + m.sqsDeleteCalls);
    expect(m.sqsMessages).toBeCloseTo(messages / ITEMS);
    // At most one send call per item, and a receive and a delete per batch of up to ten.
    expect(m.sqsSendCalls).toBeLessThanOrEqual(messages / ITEMS);
    expect(m.sqsReceives).toBeGreaterThanOrEqual(messages / ITEMS / 10);
    expect(m.sqsRequests).toBeLessThanOrEqual((3 * messages) / ITEMS);
    expect(m.workerInvocations).toBeCloseTo(row.calls.worker.invocations / ITEMS);
    expect(m.lambdaGbSeconds).toBeGreaterThan(0);
    // No memory-6ms run: no modeled $, the summed model only, per item.
    expect(m.modeled).toBeUndefined();
    expect(m.summed).toBeCloseTo((row.cost.totalAtAwsLatency * (ITEMS + 1)) / ITEMS);
    expect(m.summed).toBeGreaterThan(0);
    expect(m.summed).toBeLessThan(m.stepFunctionsStandard);
    // Step Functions per million items: Standard children, 1 transition each (2 billed with the
    // child's start); Express children $1 + 100 ms × 64 MB + the parent's transition per child.
    expect(m.stepFunctionsStandard).toBe(25);
    expect(stepFunctionsStandardPerMillionItems).toBe(25);
    expect(m.stepFunctionsStandardBilled).toBe(50);
    expect(m.stepFunctionsExpress).toBeCloseTo(1 + 0.1 * (64 / 1024) * 0.00001667 * 1e6 + 25);
    expect(stepFunctionsExpressPerMillionItems).toBeCloseTo(26.104, 3);
  }, 120_000);

  it("reports the map per item in the bench's report and markdown", async () => {
    const report = await runBench({ quick: true, workloads: ["map"], backends: ["memory"] });
    const [row] = report.results;
    expect(row?.workload).toBe("map");
    expect(row?.completedNodes).toBe(201);
    // Not in the targets: its items would outweigh every other workload.
    expect(row?.notInTargets).toBeDefined();
    expect(report.targets.find((t) => t.name.startsWith("DynamoDB"))?.worst).toBe(0);
    const point = report.map?.points[0];
    expect(point).toMatchObject({ workload: "map", items: 200, lanes: 40, countedOn: "memory" });
    const markdown = renderMarkdown(report);
    expect(markdown).toContain("## Map: per item, beside Step Functions' Distributed Map");
    expect(markdown).toContain("| map | 200 (40) | memory; Lambda on memory |");
    expect(markdown).toContain("Standard child workflows");
  }, 60_000);
});
