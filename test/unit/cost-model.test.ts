/**
 * The cost model's pure parts: prices applied to requests, Step Functions' prices, and the estimate
 * of a run before it happens (`weft cost`): continuation, inline merges, blobs, a map's items.
 * Whether the protocol's counts match the engine's calls: test/bench/cost-model.test.ts.
 */
import { describe, expect, it } from "vitest";
import {
  noRequests,
  priceRequests,
  stepFunctionsExpressUsd,
  stepFunctionsStandardUsd,
} from "../../shared/domain/cost-model.js";
import { compileGraph } from "../../shared/domain/graph.js";
import { PRICE_MODEL } from "../../shared/domain/prices.js";
import { estimateRun } from "../../shared/engine/cost-estimate.js";
import { DEFAULT_FAN_IN } from "../../shared/engine/dispatch-mode.js";
import { createTaskRegistry } from "../../shared/tasks/builtins.js";

const settings = {
  tasks: createTaskRegistry(),
  fanIn: DEFAULT_FAN_IN,
  workerMemoryGb: 1,
  maxContinuations: 16,
  claimAfterMs: 5000,
};
const graphOf = (nodes: unknown[]) =>
  compileGraph({ name: "w", nodes } as Parameters<typeof compileGraph>[0]);

describe("prices", () => {
  it("applies the list prices to the requests, by service and in total", () => {
    const requests = noRequests();
    requests.dynamodb = { writeUnits: 6, indexWriteUnits: 2, readUnits: 4 };
    requests.sqs = { messages: 2, requests: 6 };
    requests.lambda = { invocations: 2, gbSeconds: 0.5 };
    requests.eventbridge.events = 2;
    requests.s3 = { puts: 1, gets: 3 };
    const cost = priceRequests(requests);
    expect(cost.usd.dynamodb).toBeCloseTo((8 * 0.625 + 4 * 0.125) / 1e6, 15);
    expect(cost.usd.sqs).toBeCloseTo((6 * 0.4) / 1e6, 15);
    expect(cost.usd.lambda).toBeCloseTo((2 * 0.2) / 1e6 + 0.5 * 0.0000133334, 15);
    expect(cost.usd.eventbridge).toBeCloseTo(2 / 1e6, 15);
    expect(cost.usd.s3).toBeCloseTo((5 + 3 * 0.4) / 1e6, 15);
    expect(cost.totalUsd).toBeCloseTo(
      Object.values(cost.usd).reduce((a, b) => a + b, 0),
      15,
    );
    expect(cost.model).toBe(PRICE_MODEL);
  });

  it("prices Step Functions: Standard per transition, Express per request and 100 ms of 64 MB", () => {
    expect(stepFunctionsStandardUsd(4)).toBeCloseTo(100 / 1e6, 15);
    // 250 ms is billed as 300 ms; nothing as the 100 ms minimum.
    expect(stepFunctionsExpressUsd(250)).toBeCloseTo(1e-6 + 0.3 * (64 / 1024) * 0.00001667, 15);
    expect(stepFunctionsExpressUsd(0)).toBeCloseTo(1e-6 + 0.1 * (64 / 1024) * 0.00001667, 15);
  });
});

describe("estimateRun", () => {
  const fanOut = graphOf([
    { id: "src", type: "pass" },
    { id: "w0", type: "pass", dependsOn: ["src"] },
    { id: "w1", type: "pass", dependsOn: ["src"] },
    { id: "w2", type: "pass", dependsOn: ["src"] },
    { id: "join", type: "merge", dependsOn: ["w0", "w1", "w2"] },
  ]);

  it("sends what a continuation does not run, and runs a merge inline", () => {
    const run = estimateRun(fanOut, { inputJson: "{}", outputBytes: 100, nodeMs: 100 }, settings);
    const byId = Object.fromEntries(run.nodes.map((n) => [n.nodeId, n]));
    expect(byId.w0?.continued).toBe(true);
    expect([byId.w1?.continued, byId.w2?.continued]).toEqual([false, false]);
    expect(byId.join?.mode).toBe("inline");
    expect(byId.join?.requests.sqs.messages).toBe(0);
    // src, w1 and w2 by message; w0 by continuation; the merge inline.
    expect(run.cost.requests.sqs.messages).toBe(3);
    // The completions of four tasks (each 100 ms, under claimAfterSeconds: their claims ride their
    // completions), the merge's write, the execution's create and end.
    expect(run.cost.requests.dynamodb.writeUnits).toBe(4 + 1 + 2);
    expect(run.cost.requests.s3.puts).toBe(0);
    expect(run.nodeRuns).toBe(5);
    expect(run.durationMs).toBe(200);
    expect(run.stepFunctions.standardUsd).toBeCloseTo((5 * 25) / 1e6, 15);
  });

  it("writes outputs over the inline threshold to S3 once each, a merge's references not at all", () => {
    const run = estimateRun(fanOut, { inputJson: "{}", outputBytes: 10_000, nodeMs: 100 }, settings);
    expect(run.cost.requests.s3.puts).toBe(4);
    expect(run.nodes.find((n) => n.nodeId === "join")?.requests.s3.puts).toBe(0);
    // Each worker reads src's blob; nothing is cached in the estimate.
    expect(run.cost.requests.s3.gets).toBeGreaterThanOrEqual(3);
  });

  it("counts a map's items from its literal list, or from `items` for an expression", () => {
    const literal = graphOf([
      {
        id: "each",
        type: "map",
        params: { items: [1, 2, 3, 4, 5], task: { type: "pass" }, maxConcurrency: 2 },
      },
    ]);
    const run = estimateRun(literal, { inputJson: "{}", outputBytes: 10, nodeMs: 100 }, settings);
    expect(run.nodes[0]?.items).toBe(5);
    expect(run.nodeRuns).toBe(6);
    // Three rounds of two lanes.
    expect(run.durationMs).toBe(300);
    // The map's message, one per item, and its check.
    expect(run.cost.requests.sqs.messages).toBe(1 + 5 + 1);

    const expression = graphOf([
      { id: "each", type: "map", params: { items: "{% input.list %}", task: { type: "pass" } } },
    ]);
    expect(() =>
      estimateRun(expression, { inputJson: "{}", outputBytes: 10, nodeMs: 100 }, settings),
    ).toThrow(/map node "each".*--items/);
    const counted = estimateRun(
      expression,
      { inputJson: "{}", outputBytes: 10, nodeMs: 100, items: 80 },
      settings,
    );
    expect(counted.nodes[0]?.items).toBe(80);
  });

  it("puts an input over the inline threshold in the blob store", () => {
    const inputJson = JSON.stringify({ text: "x".repeat(5000) });
    const run = estimateRun(fanOut, { inputJson, outputBytes: 10, nodeMs: 100 }, settings);
    expect(run.cost.requests.s3.puts).toBe(1);
  });
});
