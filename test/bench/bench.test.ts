/**
 * The benchmark's quick path on the memory backend: the report's structure and counts, never its
 * timings (machines are shared and noisy).
 */
import { describe, expect, it } from "vitest";
import { cost, PRICES } from "../../bench/cost.js";
import { runBench } from "../../bench/main.js";
import { renderMarkdown } from "../../bench/report.js";
import { randomDag, WORKLOAD_NAMES, workloads } from "../../bench/workloads.js";

describe("bench --quick on the memory backend", () => {
  it("runs every workload through the handlers and reports sane counts and costs", async () => {
    const report = await runBench({ quick: true, backends: ["memory"] });
    const expected = workloads(true);
    expect(report.results.map((r) => r.workload)).toEqual([...WORKLOAD_NAMES]);
    expect(report.engineCpu.map((e) => e.workload)).toEqual([...WORKLOAD_NAMES]);
    expect(report.node).toBe(process.version);
    expect(report.cores).toBeGreaterThan(0);
    expect(report.cpu.length).toBeGreaterThan(0);
    expect(report.prices).toEqual(PRICES);

    for (const [i, row] of report.results.entries()) {
      const workload = expected[i]!;
      const nodes = workload.executions * workload.definition.nodes.length;
      expect(row.backend).toBe("memory");
      expect(row.failedExecutions).toBe(0);
      // Every node ran once and was counted once.
      expect(row.totalNodes).toBe(nodes);
      expect(row.completedNodes).toBe(nodes);
      expect(row.cancelledNodes).toBe(0);
      expect(row.nodeLatencyMs.count).toBe(nodes);
      const queued = workload.definition.nodes.filter((n) => n.type !== "merge").length * workload.executions;
      expect(row.queueToStartMs.count).toBe(queued);
      expect(row.e2eMs).toBeGreaterThanOrEqual(0);

      const ops = row.calls.ops;
      // Every node through the queue is claimed and completed: at least two writes each.
      expect(ops["DynamoDB.UpdateItem"]?.calls ?? 0).toBeGreaterThanOrEqual(2 * queued);
      expect(ops["DynamoDB.GetItem"]?.calls ?? 0).toBeGreaterThan(0);
      // At most one message per queued node (continuation runs some children without one), at
      // least one per execution; every message sent is received and deleted once.
      const sent = ops["SQS.SendMessageBatch"]?.items ?? 0;
      expect(sent).toBeGreaterThanOrEqual(workload.executions);
      expect(sent).toBeLessThanOrEqual(queued);
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
      expect(c.total).toBeCloseTo(
        c.dynamoWrite + c.dynamoRead + c.sqs + c.lambdaRequests + c.lambdaDuration + c.eventBridge,
      );
      expect(c.total).toBeGreaterThan(0);
      expect(c.stepFunctionsStandard).toBe(25);
      expect(cost(p, row.calls.worker.durationsMs)).toEqual(c);
    }

    for (const e of report.engineCpu) expect(e.cpuMsPerNode).toBeGreaterThan(0);
    // Without memory-6ms there is no Lambda-time model: the other five targets.
    expect(report.targets.map((t) => t.name)).toHaveLength(5);
    // "All nodes" is the node-weighted mean of the workloads: between the best and the worst.
    const wcu = report.targets[0]!;
    const perWorkload = report.results.map((r) => r.perNode.ddbWriteUnits);
    expect(wcu.worst).toBeCloseTo(Math.max(...perWorkload));
    expect(wcu.overall).toBeLessThanOrEqual(wcu.worst + 1e-9);
    expect(wcu.overall).toBeGreaterThanOrEqual(Math.min(...perWorkload) - 1e-9);
    const nodes = report.results.reduce((sum, r) => sum + r.totalNodes, 0);
    expect(wcu.overall).toBeCloseTo(
      report.results.reduce((sum, r) => sum + r.perNode.ddbWriteUnits * r.totalNodes, 0) / nodes,
    );
    const markdown = renderMarkdown(report);
    expect(markdown).toContain("| chain | memory |");
    expect(markdown).toContain("Step Functions Standard");
  }, 60_000);

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
    expect(modeled?.services).toBeCloseTo(c.dynamoWrite + c.dynamoRead + c.sqs + c.eventBridge);
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

  it("generates the same random DAG on every run, with every fan-in kind", () => {
    const a = randomDag(300);
    expect(randomDag(300)).toEqual(a);
    const fanIns = new Set(a.definition.nodes.map((n) => (n.fanIn ?? "all").replace(/:\d+$/, "")));
    expect([...fanIns].sort()).toEqual(["all", "any", "count"]);
    expect(a.definition.nodes).toHaveLength(300);
  });
});
