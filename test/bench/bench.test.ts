/**
 * The benchmark's quick path on the memory backend: the report's structure and counts, never its
 * timings (machines are shared and noisy).
 */
import { describe, expect, it } from "vitest";
import { itemSize, toAv, writeUnits } from "../../bench/capacity.js";
import { cost, PRICES } from "../../bench/cost.js";
import { runBench } from "../../bench/main.js";
import { renderMarkdown } from "../../bench/report.js";
import {
  LARGE_OUTPUT_BYTES,
  largePayloads,
  randomDag,
  sizedOutput,
  WORKLOAD_NAMES,
  workloads,
} from "../../bench/workloads.js";
import { encodeStoredPayload } from "../../shared/domain/payload.js";

describe("bench --quick on the memory backend", () => {
  it("runs every workload through the handlers and reports sane counts and costs", async () => {
    const report = await runBench({ quick: true, backends: ["memory"], cliStartup: true });
    const expected = workloads(true);
    expect(report.results.map((r) => r.workload)).toEqual([...WORKLOAD_NAMES]);
    expect(report.engineCpu.map((e) => e.workload)).toEqual([...WORKLOAD_NAMES]);
    expect(report.node).toBe(process.version);
    expect(report.cores).toBeGreaterThan(0);
    expect(report.cpu.length).toBeGreaterThan(0);
    expect(report.prices).toEqual(PRICES);

    for (const [i, row] of report.results.entries()) {
      const workload = expected[i]!;
      // A map's items are nodes too, with no events in the history (map.test.ts has their counts).
      const items = (workload.mapItems ?? 0) * workload.executions;
      const withEvents = workload.executions * workload.definition.nodes.length;
      const nodes = withEvents + items;
      expect(row.backend).toBe("memory");
      expect(row.failedExecutions).toBe(0);
      // Every node ran once and was counted once.
      expect(row.totalNodes).toBe(nodes);
      expect(row.completedNodes).toBe(nodes);
      expect(row.cancelledNodes).toBe(0);
      expect(row.nodeLatencyMs.count).toBe(withEvents);
      const queuedWithEvents =
        workload.definition.nodes.filter((n) => n.type !== "merge").length * workload.executions;
      expect(row.queueToStartMs.count).toBe(queuedWithEvents);
      const queued = queuedWithEvents + items;
      // A map is sent twice: to start it, and by its last lane to assemble it.
      const mapChecks = workload.mapItems === undefined ? 0 : workload.executions;
      expect(row.e2eMs).toBeGreaterThanOrEqual(0);

      const ops = row.calls.ops;
      // Every node through the queue is written at least once: its completion, which carries its
      // claim when its first attempt was short (a lazy claim, shared/engine/attempt-fence.ts).
      expect(ops["DynamoDB.UpdateItem"]?.calls ?? 0).toBeGreaterThanOrEqual(queued);
      expect(ops["DynamoDB.GetItem"]?.calls ?? 0).toBeGreaterThan(0);
      // At most one message per queued node (continuation runs some children without one), at
      // least one per execution; every message sent is received and deleted once.
      const sent = ops["SQS.SendMessageBatch"]?.items ?? 0;
      expect(sent).toBeGreaterThanOrEqual(workload.executions);
      expect(sent).toBeLessThanOrEqual(queued + mapChecks);
      expect(ops["SQS.ReceiveMessage"]?.items).toBe(sent);
      expect(ops["SQS.DeleteMessageBatch"]?.items).toBe(sent);
      expect(row.calls.worker.invocations).toBe(ops["SQS.ReceiveMessage"]?.calls);
      expect(row.calls.worker.records).toBe(sent);
      // One "Execution Succeeded" event per execution, at least.
      expect(ops["EventBridge.PutEvents"]?.items ?? 0).toBeGreaterThanOrEqual(workload.executions);

      // Per-node figures come from the counts, and the cost from them by the stated formula.
      const p = row.perNode;
      expect(p.ddbWriteCalls).toBeCloseTo(
        (["PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"] as const).reduce(
          (s, op) => s + (ops[`DynamoDB.${op}`]?.calls ?? 0),
          0,
        ) / nodes,
      );
      expect(p.ddbWriteUnits).toBeCloseTo((row.calls.ddb.writeUnits + row.calls.ddb.indexWriteUnits) / nodes);
      expect(p.ddbWriteUnits).toBeGreaterThanOrEqual(p.ddbWriteCalls);
      expect(p.sqsBilledRequests).toBeCloseTo(row.calls.sqs.billedRequests / nodes);
      expect(p.workerInvocations).toBeCloseTo(row.calls.worker.invocations / nodes);
      const c = row.cost;
      expect(c.dynamoWrite).toBeCloseTo(p.ddbWriteUnits * 0.625);
      expect(c.dynamoRead).toBeCloseTo(p.ddbReadUnits * 0.125);
      expect(c.sqs).toBeCloseTo(p.sqsBilledRequests * 0.4);
      expect(c.lambdaRequests).toBeCloseTo(p.workerInvocations * 0.2);
      expect(c.eventBridge).toBeCloseTo(p.eventBridgeEvents * 1.0);
      expect(p.s3PutRequests).toBeCloseTo(row.calls.s3.putRequests / nodes);
      expect(p.s3GetRequests).toBeCloseTo(row.calls.s3.getRequests / nodes);
      expect(c.s3Put).toBeCloseTo(p.s3PutRequests * 5);
      expect(c.s3Get).toBeCloseTo(p.s3GetRequests * 0.4);
      expect(c.total).toBeCloseTo(
        c.dynamoWrite + c.dynamoRead + c.sqs + c.lambdaRequests + c.lambdaDuration + c.eventBridge + c.s3,
      );
      // Values of small-payload workloads stay on their items: no S3 request at all.
      if (workload.notInTargets === undefined)
        expect(row.calls.s3.putRequests + row.calls.s3.getRequests).toBe(0);
      expect(c.total).toBeGreaterThan(0);
      expect(c.stepFunctionsStandard).toBe(25);
      expect(cost(p, row.calls.worker.durationsMs)).toEqual(c);
    }

    for (const e of report.engineCpu) expect(e.cpuMsPerNode).toBeGreaterThan(0);
    // Without memory-6ms there is no Lambda-time model: the other five targets.
    expect(report.targets.map((t) => t.name)).toHaveLength(5);
    // "All nodes" is the node-weighted mean of the workloads in the targets: between the best and the worst.
    const inTargets = report.results.filter((r) => r.notInTargets === undefined);
    expect(inTargets.map((r) => r.workload)).toEqual(["chain", "fanout", "random-dag", "many-small"]);
    expect(report.map?.points.map((p) => [p.workload, p.items, p.lanes])).toEqual([["map", 200, 40]]);
    const wcu = report.targets[0]!;
    const perWorkload = inTargets.map((r) => r.perNode.ddbWriteUnits);
    expect(wcu.worst).toBeCloseTo(Math.max(...perWorkload));
    expect(wcu.overall).toBeLessThanOrEqual(wcu.worst + 1e-9);
    expect(wcu.overall).toBeGreaterThanOrEqual(Math.min(...perWorkload) - 1e-9);
    const nodes = inTargets.reduce((sum, r) => sum + r.totalNodes, 0);
    expect(wcu.overall).toBeCloseTo(
      inTargets.reduce((sum, r) => sum + r.perNode.ddbWriteUnits * r.totalNodes, 0) / nodes,
    );
    const markdown = renderMarkdown(report);
    expect(markdown).toContain("| chain | memory |");
    expect(markdown).toContain("Step Functions Standard");
    // The CLI's startup: whole processes of the built CLI, beside Node's own start (figures unchecked).
    expect(report.cliStartup?.map((c) => c.command)).toEqual(["node -e 0", "weft --help", "weft status ID"]);
    for (const c of report.cliStartup ?? []) {
      expect(c.runs).toBe(5);
      expect(c.minMs).toBeGreaterThan(0);
      expect(c.medianMs).toBeGreaterThanOrEqual(c.minMs);
    }
    expect(markdown).toContain("## CLI startup");
  }, 120_000);

  it("models Lambda time at 6 ms per AWS call with the handler's own concurrency (memory-6ms)", async () => {
    const report = await runBench({ quick: true, workloads: ["fanout"], backends: ["memory", "memory-6ms"] });
    const [counted, timed] = report.results;
    expect(counted?.backend).toBe("memory");
    expect(timed?.backend).toBe("memory-6ms");
    expect(timed?.completedNodes).toBe(counted?.completedNodes);
    // The model: the services as counted on the measured backend, Lambda as timed on memory-6ms.
    const [modeled] = report.modeled;
    const c = counted!.cost;
    expect(modeled?.workload).toBe("fanout");
    expect(modeled?.services).toBeCloseTo(c.dynamoWrite + c.dynamoRead + c.sqs + c.eventBridge + c.s3);
    expect(modeled?.lambdaDuration).toBeCloseTo(timed!.cost.lambdaDuration);
    expect(modeled?.lambdaRequests).toBeCloseTo(timed!.cost.lambdaRequests);
    expect(modeled?.total).toBeCloseTo(modeled!.services + modeled!.lambdaRequests + modeled!.lambdaDuration);
    expect(modeled?.totalSequential).toBeCloseTo(c.totalAtAwsLatency);
    // A handler that made AWS calls was billed for their latency.
    expect(timed!.cost.meanWorkerDurationMs).toBeGreaterThanOrEqual(6);
    const target = report.targets.find((t) => t.name.includes("as measured at 6 ms"));
    expect(target?.worst).toBeCloseTo(modeled!.total);
    expect(renderMarkdown(report)).toContain("| fanout | memory-6ms |");
  }, 60_000);

  it("writes 100 KB outputs once each to the blob store, and the merge none (counts only)", async () => {
    const report = await runBench({ quick: true, workloads: ["large-payloads"], backends: ["memory"] });
    const [row] = report.results;
    const workload = largePayloads(true);
    const specs = workload.definition.nodes;
    const producers = specs.filter((n) => n.type !== "merge");
    const chain = specs.filter((n) => n.id.startsWith("c")).length;
    const width = specs.filter((n) => n.id.startsWith("w")).length;
    expect(row?.completedNodes).toBe(specs.length);
    expect(row?.failedExecutions).toBe(0);
    // One PUT per node producing a large output, each of exactly its size: the merge composed its
    // value from references (a blob of it would hold all ten values) and wrote nothing.
    const s3 = row!.calls.s3;
    expect(s3.putRequests).toBe(producers.length);
    expect(row!.calls.ops["S3.PutObject"]?.calls).toBe(producers.length);
    expect(s3.objects).toBe(producers.length);
    expect(s3.storedBytes).toBe(producers.length * LARGE_OUTPUT_BYTES);
    expect(Buffer.byteLength(JSON.stringify(sizedOutput("w0", LARGE_OUTPUT_BYTES)))).toBe(LARGE_OUTPUT_BYTES);
    // One engine caches what it wrote: no GET. With no cache, every load is one: each chain node and
    // worker loads its parent's value, the last node the merge's parts.
    expect(s3.getRequests).toBe(0);
    expect(row!.storage.coldBlobGets).toBe(chain - 1 + width + width);
    expect(row!.perNode.s3PutRequests).toBeCloseTo(producers.length / specs.length);
    expect(row!.cost.s3Put).toBeCloseTo((producers.length / specs.length) * 5);
    // Not in the targets, which measure the engine's own cost with small values.
    expect(row!.notInTargets).toBeDefined();
    expect(report.targets.find((t) => t.name.startsWith("DynamoDB"))?.worst).toBe(0);

    // Above the values' size they stay on their items; only the merged value (ten of them) is larger.
    const inline = await runBench({
      quick: true,
      workloads: ["large-payloads"],
      backends: ["memory"],
      inlineBytes: 2 * LARGE_OUTPUT_BYTES,
    });
    expect(inline.settings.inlineBytes).toBe(2 * LARGE_OUTPUT_BYTES);
    expect(inline.results[0]?.calls.s3.putRequests).toBe(1);
    expect(inline.results[0]?.calls.s3.storedBytes).toBeGreaterThan(width * LARGE_OUTPUT_BYTES);
    expect(inline.results[0]?.storage.coldBlobGets).toBe(1);
  }, 60_000);

  it("sweeps the inline threshold: each size inline and offloaded (counts only)", async () => {
    const report = await runBench({ quick: true, sweepOnly: true, backends: ["memory"], sweepSizesKib: [8] });
    expect(report.results).toEqual([]);
    const points = report.sweep?.points ?? [];
    expect(points.map((p) => `${p.shape} ${p.mode} ${p.inlineBytes}`)).toEqual([
      "chain inline 8192",
      "chain offloaded 8191",
      "diamonds inline 8192",
      "diamonds offloaded 8191",
      "fan-out inline 8192",
      "fan-out offloaded 8191",
    ]);
    const at = (shape: string, mode: string) => points.find((p) => p.shape === shape && p.mode === mode)!;
    // A chain: every node's output in S3 when offloaded, none when inline.
    expect(at("chain", "offloaded").s3Puts).toBe(1);
    expect(at("chain", "inline").s3Puts).toBe(0);
    // The fan-out: inline, only the merged value (5 × 8 KiB) goes to S3; offloaded, every node but the merge.
    const fanOut = at("fan-out", "offloaded");
    expect(fanOut.s3Puts * fanOut.nodes).toBe(fanOut.nodes - 1);
    expect(at("fan-out", "inline").s3Puts * fanOut.nodes).toBe(1);
    expect(report.sweep?.crossovers).toHaveLength(3 * 4);
    expect(renderMarkdown(report)).toContain("## The inline threshold");
  }, 60_000);

  it("sizes a payload's stored form as the string attribute it is (UTF-8 bytes of name and value)", () => {
    const json = JSON.stringify({ city: "Zürich", data: "x".repeat(4000) });
    const stored = encodeStoredPayload({ json });
    expect(stored).toBe(`=${json}`);
    const bytes = Buffer.byteLength(json, "utf8");
    expect(bytes).toBe(json.length + 1); // "ü" is two bytes
    const item = toAv({ pk: "EX#e", sk: "N#n", output: stored });
    expect(item.output).toEqual({ S: stored });
    expect(itemSize(item)).toBe("pkEX#e".length + "skN#n".length + "output".length + 1 + bytes);
    expect(writeUnits(itemSize(item))).toBe(Math.ceil(itemSize(item) / 1024));
    // A reference instead: a few hundred bytes whatever the value's size.
    const ref = encodeStoredPayload({
      blob: { key: `ex/e/${"a".repeat(64)}.json`, sha256: "a".repeat(64), bytes: 102400 },
    });
    expect(writeUnits(itemSize(toAv({ pk: "EX#e", sk: "N#n", output: ref })))).toBe(1);
  });

  it("generates the same random DAG on every run, with every fan-in kind", () => {
    const a = randomDag(300);
    expect(randomDag(300)).toEqual(a);
    const fanIns = new Set(a.definition.nodes.map((n) => (n.fanIn ?? "all").replace(/:\d+$/, "")));
    expect([...fanIns].sort()).toEqual(["all", "any", "count"]);
    expect(a.definition.nodes).toHaveLength(300);
  });
});
