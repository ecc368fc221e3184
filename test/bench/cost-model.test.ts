/**
 * Keeps the execution cost model (shared/domain/cost-model.ts PROTOCOL, shared/engine/cost-model.ts)
 * honest: the bench's workloads, small, run on the memory backend with bench/calls.ts counting the
 * calls the engine makes, and the model applied to each execution's records must give the same
 * DynamoDB write units, SQS messages, EventBridge events and S3 PUTs. When the protocol changes,
 * this fails until PROTOCOL is updated.
 *
 * Tolerance, for write units and messages only: racing deciders of a node with several parents
 * (each parent finishing may try to decide it: a refused conditional write, or a duplicate message
 * its claim refuses) and arrivals that share a write when parents finish in one invocation are
 * timing, not protocol — the more so since a short first attempt writes once (its claim rides its
 * completion), so parents finish closer together. So the count may differ from the model by at most
 * one per parent beyond the first of each node with several; with none, it is exact.
 */
import { describe, expect, it } from "vitest";
import { runWorkload } from "../../bench/run.js";
import {
  BENCH_TASKS,
  chain,
  fanout,
  flowControl,
  manySmall,
  mapOf,
  payloads,
  randomDag,
  sizedChain,
  type Workload,
} from "../../bench/workloads.js";
import { addRequests, noRequests } from "../../shared/domain/cost-model.js";
import { compileGraph } from "../../shared/domain/graph.js";
import { modelExecutionCost } from "../../shared/engine/cost-model.js";
import { DEFAULT_FAN_IN } from "../../shared/engine/dispatch-mode.js";
import { createTaskRegistry } from "../../shared/tasks/builtins.js";

const settings = {
  tasks: createTaskRegistry(BENCH_TASKS),
  fanIn: DEFAULT_FAN_IN,
  workerMemoryGb: 1,
  maxContinuations: 16,
  claimAfterMs: 5000,
};

/** Per node with several parents, one per parent beyond the first (see the header). */
const slack = (workload: Workload) =>
  workload.definition.nodes.reduce((sum, n) => sum + Math.max(0, (n.dependsOn?.length ?? 0) - 1), 0);

/**
 * Beside the bench's workloads: a retry (its message, its write), a skip, a durable wait (queued by
 * a write) and node events — the transitions the bench's happy paths never make.
 */
const retried: Workload = {
  name: "retried",
  description: "a retried node, a skipped one, a wait, node events",
  definition: {
    name: "cost-retried",
    description: "cost model: retries, skips, waits, node events",
    events: { nodes: true },
    nodes: [
      { id: "a", type: "pass" },
      {
        id: "flaky",
        type: "fail",
        dependsOn: ["a"],
        params: { times: 1, message: "the first try fails" },
        retry: { maxAttempts: 3, backoff: { initialSeconds: 1, jitter: "none" } },
      },
      { id: "skipped", type: "pass", dependsOn: ["a"], when: "{% false %}" },
      { id: "nap", type: "wait", dependsOn: ["a"], params: { seconds: 2 } },
      { id: "end", type: "pass", dependsOn: ["flaky", "nap"] },
    ],
    // NodeSpec names only the bench's own node types; the runtime takes any registered definition.
  } as unknown as Workload["definition"],
  executions: 1,
};

/** Variables: an `assign` on a worker's node and on an inline one, a `vars` node, and a reader. */
const variables: Workload = {
  name: "variables",
  description: "assign, a vars node, an expression reading vars",
  definition: {
    name: "cost-variables",
    description: "cost model: variables written and read",
    nodes: [
      { id: "a", type: "pass", assign: { first: "{% $output %}" } },
      { id: "count", type: "vars", dependsOn: ["a"], params: { op: "incr", path: "seen" } },
      { id: "joined", type: "merge", dependsOn: ["a"], assign: { merged: true } },
      { id: "end", type: "pass", dependsOn: ["count", "joined"], when: "{% vars.seen = 1 %}" },
    ],
  } as unknown as Workload["definition"],
  executions: 2,
};

const WORKLOADS: Workload[] = [
  retried,
  variables,
  chain(10),
  manySmall(3),
  sizedChain(8 * 1024, 3),
  payloads(100 * 1024, 2, 3),
  fanout(3),
  fanout(8),
  randomDag(20),
  mapOf(12, 4),
  // Under its limits with room to spare: no node waits, so the model's count is exact.
  flowControl(3),
];

describe("the execution cost model against the engine's counted calls (memory backend)", () => {
  it.each(WORKLOADS.map((w) => [w.definition.name, w] as const))("%s", async (_name, workload) => {
    const model = noRequests();
    let modeled = 0;
    const run = await runWorkload(workload, {
      backend: "memory",
      concurrency: 4,
      batchSize: 10,
      afterRun: async (ports, ids) => {
        for (const id of ids) {
          const execution = await ports.store.getExecution(id);
          if (!execution) throw new Error(`execution ${id} not found`);
          const version = await ports.store.getWorkflowVersion(execution.workflow, execution.version);
          if (!version) throw new Error(`workflow ${execution.workflow} not found`);
          const nodes = await ports.store.listNodes(id);
          const variables = await ports.store.getVariables(id);
          const variablesBytes = variables
            ? Buffer.byteLength(variables.document) + Buffer.byteLength(variables.applied)
            : 0;
          const cost = modelExecutionCost(compileGraph(version.definition), execution, nodes, {
            ...settings,
            variablesBytes,
          });
          addRequests(model, cost.cost.requests);
          modeled += 1;
        }
      },
    });
    expect(run.failedExecutions).toBe(0);
    expect(modeled).toBe(workload.executions);
    const counted = run.calls;
    const tolerance = slack(workload);
    const writeUnits = counted.ddb.writeUnits + counted.ddb.indexWriteUnits;
    const messages = counted.ops["SQS.SendMessageBatch"]?.items ?? 0;
    const modeledWrites = model.dynamodb.writeUnits + model.dynamodb.indexWriteUnits;
    expect(
      Math.abs(modeledWrites - writeUnits),
      `write units: modeled ${modeledWrites}, counted ${writeUnits}`,
    ).toBeLessThanOrEqual(tolerance);
    expect(
      Math.abs(model.sqs.messages - messages),
      `messages: modeled ${model.sqs.messages}, counted ${messages}`,
    ).toBeLessThanOrEqual(tolerance);
    expect(model.eventbridge.events).toBe(counted.events.billedEvents);
    expect(model.s3.puts).toBe(counted.s3.putRequests);
    // Every workload does some of each: the comparison is not vacuous.
    expect(writeUnits).toBeGreaterThan(0);
    expect(messages).toBeGreaterThan(0);
  });
});
