/**
 * `weft cost WORKFLOW` (the real binary) against a local runtime: the modeled cost of a run before it
 * happens, per node and in total, beside Step Functions; the same counts the API then gives the run
 * it estimated; a map's items; and bad flags as usage errors.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CostReport } from "../../cli/cost.js";
import type { LocalRuntime } from "../../local/runtime.js";
import { type ApiClient, apiClient, startRuntime } from "../support/runtime.js";
import { weft } from "./support.js";

const CHAIN = {
  name: "cost-chain",
  nodes: [
    { id: "a", type: "pass", params: { value: "a" } },
    { id: "b", type: "pass", params: { value: "b" }, dependsOn: ["a"] },
    { id: "c", type: "pass", params: { value: "c" }, dependsOn: ["b"] },
  ],
};

const MAPPED = {
  name: "cost-map",
  nodes: [
    {
      id: "each",
      type: "map",
      params: { items: "{% [1..input.count] %}", task: { type: "pass" }, maxConcurrency: 10 },
    },
    { id: "after", type: "pass", dependsOn: ["each"] },
  ],
};

let runtime: LocalRuntime;
let api: ApiClient;

beforeAll(async () => {
  runtime = await startRuntime("memory");
  api = apiClient(runtime.url);
  for (const definition of [CHAIN, MAPPED])
    expect((await api.call("POST", "/workflows", definition)).status).toBe(201);
});
afterAll(() => runtime?.stop());

describe("weft cost", () => {
  it("estimates a run (--json) as the API then counts the run itself", async () => {
    const result = await weft(["cost", "cost-chain", "--api", runtime.url, "--json"]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as CostReport;
    expect(report).toMatchObject({ workflow: "cost-chain", version: 1, executions: 1 });
    expect(report.model).toMatch(/us-east-1/);
    expect(report.nodes.map((n) => n.nodeId)).toEqual(["a", "b", "c"]);
    // The chain's first node has the message; its children run by continuation.
    expect(report.nodes.map((n) => n.continued)).toEqual([false, true, true]);
    expect(report.totalUsd).toBeCloseTo(report.perRun.totalUsd, 15);
    expect(report.stepFunctions.transitionsPerRun).toBe(3);
    expect(report.stepFunctions.standardUsd).toBeCloseTo((3 * 25) / 1e6, 15);
    expect(report.stepFunctions.expressUsd).toBeGreaterThan(1 / 1e6);

    // The run it estimated, once it happened: the same writes, messages, events and PUTs.
    const started = await api.call("POST", "/executions", { workflow: "cost-chain", input: {} });
    const done = await api.waitForEnd(started.body.executionId);
    expect(done.status).toBe("SUCCEEDED");
    const actual = (await api.call("GET", `/executions/${started.body.executionId}`)).body.cost.requests;
    const estimated = report.perRun.requests;
    expect(estimated.dynamodb.writeUnits).toBe(actual.dynamodb.writeUnits);
    expect(estimated.dynamodb.indexWriteUnits).toBe(actual.dynamodb.indexWriteUnits);
    expect(estimated.sqs.messages).toBe(actual.sqs.messages);
    expect(estimated.eventbridge.events).toBe(actual.eventbridge.events);
    expect(estimated.s3.puts).toBe(actual.s3.puts);
  });

  it("prices N executions with large outputs, and prints a table beside Step Functions", async () => {
    const args = [
      "cost",
      "cost-chain",
      "--api",
      runtime.url,
      "--executions",
      "1000",
      "--output-bytes",
      "8192",
    ];
    const json = JSON.parse((await weft([...args, "--json"])).stdout) as CostReport;
    // Every output over the inline threshold: an S3 PUT each.
    expect(json.perRun.requests.s3.puts).toBe(3);
    expect(json.nodes.every((n) => n.s3Puts === 1)).toBe(true);
    expect(json.totalUsd).toBeCloseTo(json.perRun.totalUsd * 1000, 12);
    expect(json.stepFunctions.standardUsd).toBeCloseTo(0.075, 12);

    const human = await weft(args);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^cost-chain v1: modeled cost/);
    expect(human.stdout).toMatch(/^NODE +TYPE +DISPATCH/m);
    expect(human.stdout).toMatch(/^b +pass +direct \(continued\)/m);
    expect(human.stdout).toContain("1000 runs: weft $");
    expect(human.stdout).toContain("Step Functions Standard $0.0750");
    expect(human.stdout).toContain("Step Functions Express");
  });

  it("counts a map's items from --items when its list is an expression, and asks for it otherwise", async () => {
    const missing = await weft(["cost", "cost-map", "--api", runtime.url]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('map node "each"');
    expect(missing.stderr).toContain("--items");

    const result = await weft(["cost", "cost-map", "--api", runtime.url, "--items", "50", "--json"]);
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as CostReport;
    expect(report.nodes.find((n) => n.nodeId === "each")?.items).toBe(50);
    // The map, its 50 items and the node after it.
    expect(report.stepFunctions.transitionsPerRun).toBe(52);
    // A message per item, the map's own and its check's, and the node after it.
    expect(report.perRun.requests.sqs.messages).toBeGreaterThanOrEqual(52);
  });

  it("refuses bad flags (exit 2) and an unknown workflow (exit 1), naming what is wrong", async () => {
    const bad = await weft(["cost", "cost-chain", "--api", runtime.url, "--output-bytes", "lots"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--output-bytes");
    const zero = await weft(["cost", "cost-chain", "--api", runtime.url, "--executions", "0"]);
    expect(zero.code).toBe(2);
    expect(zero.stderr).toContain("--executions");
    const unknown = await weft(["cost", "no-such-workflow", "--api", runtime.url]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("no-such-workflow");
  });
});
