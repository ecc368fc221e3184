/**
 * The benchmark's workloads. Every node is a deterministic built-in (`pass`, `noop`, or the inline
 * `merge`) or the bench's own `bench-sized` task (an output of a given size, generated), so the numbers
 * measure the engine and its AWS calls, not task handlers.
 */

import { z } from "zod";
import { seededRandom } from "../shared/adapters/seeded-random.js";
import { defineTask, type TaskType } from "../shared/tasks/task-type.js";

export interface NodeSpec {
  id: string;
  type: "pass" | "noop" | "merge" | "map" | typeof SIZED_TASK_TYPE;
  dependsOn?: string[];
  fanIn?: string;
  params?: Record<string, unknown>;
  /** A concurrency limit (docs/flow-control.md). */
  concurrency?: { key?: string; limit: number; scope?: "workflow" | "global" };
}

export interface Definition {
  name: string;
  description: string;
  nodes: NodeSpec[];
  /** A start rate limit (docs/flow-control.md). */
  rateLimit?: { key?: string; limit: number; periodSeconds: number };
}

export interface Workload {
  name: string;
  description: string;
  definition: Definition;
  /** Executions started together. */
  executions: number;
  /** Each execution's input, beside its number `i` (default `{ i }` alone). */
  input?: Record<string, unknown>;
  /**
   * Items each execution's map runs (its `map` node's list, known here to count them): node records
   * of their own, counted with the nodes. Their events are not in the history (a map's default).
   */
  mapItems?: number;
  /** The lanes its map runs them in (min(maxConcurrency, items)). */
  mapLanes?: number;
  /**
   * Why the workload is left out of the per-node targets (which measure the engine's own cost with
   * small values), when it is.
   */
  notInTargets?: string;
}

export const WORKLOAD_NAMES = [
  "chain",
  "fanout",
  "random-dag",
  "many-small",
  "large-payloads",
  "map",
  "flow-control",
] as const;
export type WorkloadName = (typeof WORKLOAD_NAMES)[number];

export function chain(length: number): Workload {
  const nodes: NodeSpec[] = Array.from({ length }, (_, i) => ({
    id: `c${i}`,
    type: "pass",
    ...(i > 0 ? { dependsOn: [`c${i - 1}`] } : {}),
  }));
  return {
    name: "chain",
    description: `a chain of ${length} pass nodes`,
    definition: { name: `bench-chain-${length}`, description: "benchmark chain", nodes },
    executions: 1,
  };
}

export function fanout(width: number): Workload {
  const workers = Array.from({ length: width }, (_, i) => `w${i}`);
  const nodes: NodeSpec[] = [
    { id: "src", type: "pass" },
    ...workers.map((id): NodeSpec => ({ id, type: "noop", dependsOn: ["src"] })),
    { id: "join", type: "merge", dependsOn: workers },
  ];
  return {
    name: "fanout",
    description: `fan-out/fan-in 1 → ${width} → 1 (noop workers, inline merge join)`,
    definition: { name: `bench-fanout-${width}`, description: "benchmark fan-out/fan-in", nodes },
    executions: 1,
  };
}

/**
 * A random DAG of `size` nodes (seeded): 5 entries; every later node has 1–6 parents among the 40
 * before it; a node with several parents takes fan-in all (50 %), any (25 %) or count:N (25 %) and is
 * a `merge` when none of its parents is one (so merge outputs do not nest). A final `end` (fan-in all)
 * depends on every sink and every node feeding an any/count child, so every node runs to completion
 * before the execution succeeds (none is cancelled as a leftover), which keeps per-node counts exact.
 */
export function randomDag(size: number, seed = 20260501): Workload {
  const random = seededRandom(seed);
  const pick = (n: number) => Math.floor(random() * n);
  const nodes: NodeSpec[] = [];
  const entries = Math.min(5, size);
  const inner = size - 1;
  for (let i = 0; i < inner; i++) {
    const id = `n${i}`;
    if (i < entries) {
      nodes.push({ id, type: random() < 0.5 ? "pass" : "noop" });
      continue;
    }
    const r = random();
    const want = r < 0.55 ? 1 : r < 0.8 ? 2 : r < 0.92 ? 3 : 4 + pick(3);
    const window = Math.min(i, 40);
    const parents = new Set<number>();
    while (parents.size < Math.min(want, window)) parents.add(i - 1 - pick(window));
    const dependsOn = [...parents].sort((a, b) => a - b).map((p) => `n${p}`);
    if (dependsOn.length === 1) {
      nodes.push({ id, type: random() < 0.5 ? "pass" : "noop", dependsOn });
      continue;
    }
    const f = random();
    const fanIn = f < 0.5 ? "all" : f < 0.75 ? "any" : `count:${1 + pick(dependsOn.length)}`;
    const parentIsMerge = dependsOn.some((p) => nodes[Number(p.slice(1))]?.type === "merge");
    const type = !parentIsMerge && random() < 0.5 ? "merge" : "noop";
    nodes.push({ id, type, dependsOn, fanIn });
  }
  const children = new Map<string, NodeSpec[]>();
  for (const node of nodes) {
    for (const p of node.dependsOn ?? []) children.set(p, [...(children.get(p) ?? []), node]);
  }
  const mustJoin = nodes
    .filter((n) => {
      const kids = children.get(n.id) ?? [];
      return kids.length === 0 || kids.some((k) => (k.fanIn ?? "all") !== "all");
    })
    .map((n) => n.id);
  nodes.push({ id: "end", type: "noop", dependsOn: mustJoin, fanIn: "all" });
  return {
    name: "random-dag",
    description: `a seeded random DAG of ${size} nodes (fan-ins all/any/count:N; "end" joins ${mustJoin.length})`,
    definition: { name: `bench-random-${size}-${seed}`, description: "benchmark random DAG", nodes },
    executions: 1,
  };
}

export function manySmall(executions: number): Workload {
  return {
    name: "many-small",
    description: `${executions} executions of a 3-node chain, started together`,
    definition: {
      name: "bench-small-3",
      description: "benchmark small workflow",
      nodes: [
        { id: "a", type: "pass" },
        { id: "b", type: "noop", dependsOn: ["a"] },
        { id: "c", type: "pass", dependsOn: ["b"] },
      ],
    },
    executions,
  };
}

export const SIZED_TASK_TYPE = "bench-sized";

/**
 * The output of a node of `bytes` bytes as JSON text: a string of the node's id and a filler,
 * deterministic, and different for every node (blob keys are content addresses: equal outputs of
 * one execution would share one blob). Its inputs are loaded by the engine and ignored.
 */
export function sizedOutput(nodeId: string, bytes: number): string {
  const head = `${nodeId}:`;
  // The JSON text is the string's characters between two quotes (no character here is escaped).
  return head + "x".repeat(Math.max(0, bytes - 2 - head.length));
}

export const sizedTask: TaskType<unknown> = defineTask({
  type: SIZED_TASK_TYPE,
  params: z
    .object({
      bytes: z
        .number()
        .int()
        .min(2)
        .max(1024 * 1024),
    })
    .strict(),
  run: ({ params, context }) => sizedOutput(context.nodeId, params.bytes),
}) as TaskType<unknown>;

/** The task types the bench's workloads use beyond the built-ins. */
export const BENCH_TASKS: readonly TaskType<unknown>[] = [sizedTask];

/**
 * Nodes whose outputs are `bytes` long: a chain of `chainLength` nodes, whose last fans out to
 * `width` nodes joined by a `merge` (composed from its dependencies' payloads, large ones by
 * reference), and a last node reading the merged value. Every node but the merge outputs `bytes`.
 */
export function payloads(
  bytes: number,
  chainLength: number,
  width: number,
  name = "large-payloads",
): Workload {
  const params = { bytes };
  const chainIds = Array.from({ length: chainLength }, (_, i) => `c${i}`);
  const last = chainIds.at(-1);
  const workers = Array.from({ length: width }, (_, i) => `w${i}`);
  const nodes: NodeSpec[] = [
    ...chainIds.map(
      (id, i): NodeSpec => ({
        id,
        type: SIZED_TASK_TYPE,
        params,
        ...(i > 0 ? { dependsOn: [chainIds[i - 1]!] } : {}),
      }),
    ),
    ...workers.map(
      (id): NodeSpec => ({
        id,
        type: SIZED_TASK_TYPE,
        params,
        ...(last === undefined ? {} : { dependsOn: [last] }),
      }),
    ),
    { id: "join", type: "merge", dependsOn: workers },
    { id: "tail", type: SIZED_TASK_TYPE, params, dependsOn: ["join"] },
  ];
  const kib = bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} B`;
  return {
    name,
    description: `${kib} outputs: a chain of ${chainLength}, fan-out to ${width}, merge join, one node reading the merge`,
    definition: {
      name: `bench-payloads-${bytes}-${chainLength}-${width}`,
      description: "benchmark payloads",
      nodes,
    },
    executions: 1,
  };
}

/** A chain of `length` nodes whose outputs are `bytes` long (each loads its parent's). */
export function sizedChain(bytes: number, length: number, name = "sized-chain"): Workload {
  const params = { bytes };
  const nodes: NodeSpec[] = Array.from({ length }, (_, i) => ({
    id: `c${i}`,
    type: SIZED_TASK_TYPE,
    params,
    ...(i > 0 ? { dependsOn: [`c${i - 1}`] } : {}),
  }));
  return {
    name,
    description: `a chain of ${length} nodes with ${bytes}-byte outputs`,
    definition: { name: `bench-sized-chain-${bytes}-${length}`, description: "benchmark sized chain", nodes },
    executions: 1,
  };
}

/**
 * Diamonds of nodes whose outputs are `bytes` long: a source, then `count` times `width` nodes joined
 * by one node (fan-in all). With `width` ≤ 4 each join is decided by reading its parents, so a
 * parent's output is read by every sibling that completes after it, not only by its child.
 */
export function sizedDiamonds(bytes: number, count: number, width = 4, name = "sized-diamonds"): Workload {
  const params = { bytes };
  const nodes: NodeSpec[] = [{ id: "s", type: SIZED_TASK_TYPE, params }];
  let previous = "s";
  for (let d = 0; d < count; d++) {
    const workers = Array.from({ length: width }, (_, i) => `d${d}w${i}`);
    for (const id of workers) nodes.push({ id, type: SIZED_TASK_TYPE, params, dependsOn: [previous] });
    previous = `d${d}j`;
    nodes.push({ id: previous, type: SIZED_TASK_TYPE, params, dependsOn: workers, fanIn: "all" });
  }
  return {
    name,
    description: `${count} diamonds 1 → ${width} → 1 with ${bytes}-byte outputs`,
    definition: {
      name: `bench-sized-diamonds-${bytes}-${count}-${width}`,
      description: "benchmark sized diamonds",
      nodes,
    },
    executions: 1,
  };
}

/** The large-payload workload: ~100 KB outputs (100 KiB of JSON text each). */
export const LARGE_OUTPUT_BYTES = 100 * 1024;

export function largePayloads(quick: boolean): Workload {
  return {
    ...(quick ? payloads(LARGE_OUTPUT_BYTES, 5, 10) : payloads(LARGE_OUTPUT_BYTES, 50, 100)),
    notInTargets:
      "its cost is that of its 100 KB values (an S3 PUT alone is $5 per million), not the engine's per-node overhead",
  };
}

/** The map workload's lanes: the map's default `maxConcurrency` (MAP_LIMITS.defaultMaxConcurrency). */
export const MAP_CONCURRENCY = 40;

/**
 * One `map` node over `items` items: its list an expression over the execution's input (`[0..count
 * - 1]`), each item a `pass` of its element (`{% $item %}`), `maxConcurrency` lanes. The map's own
 * node and its items are the workload's nodes; the row's per-item figures are in map.ts.
 */
export function mapOf(items: number, maxConcurrency = MAP_CONCURRENCY): Workload {
  return {
    name: "map",
    description: `a map of ${items} pass items (maxConcurrency ${maxConcurrency}), its list an expression over the input`,
    definition: {
      name: `bench-map-${items}-${maxConcurrency}`,
      description: "benchmark map",
      nodes: [
        {
          id: "items",
          type: "map",
          params: {
            items: "{% [0..input.count - 1] %}",
            task: { type: "pass", params: { value: "{% $item %}" } },
            maxConcurrency,
          },
        },
      ],
    },
    executions: 1,
    input: { count: items },
    mapItems: items,
    mapLanes: Math.min(maxConcurrency, items),
    notInTargets:
      "its nodes are one map's items, reported per item beside Step Functions' Distributed Map (## Map); in the targets its 10,000 items would outweigh every other workload",
  };
}

/**
 * `many-small` with flow control: each 3-node chain's middle node under a concurrency key (4
 * tenants, 5 at once each) and the workflow under a start rate limit too wide to refuse any: what
 * taking and giving back slots, queueing and a start's token cost beside the same chain without.
 */
export function flowControl(executions: number): Workload {
  return {
    name: "flow-control",
    description: `${executions} executions of a 3-node chain, its middle node under a concurrency key (4 tenants, limit 5), started together under a start rate limit`,
    definition: {
      name: "bench-flow-control",
      description: "benchmark flow control",
      rateLimit: { limit: 100_000, periodSeconds: 1 },
      nodes: [
        { id: "a", type: "pass" },
        {
          id: "b",
          type: "pass",
          dependsOn: ["a"],
          concurrency: { key: "{% 'tenant-' & $string(input.i % 4) %}", limit: 5 },
        },
        { id: "c", type: "pass", dependsOn: ["b"] },
      ],
    },
    executions,
    notInTargets:
      "flow control adds its own writes: compared with many-small, not held to the per-node targets",
  };
}

export function workloads(quick: boolean): Workload[] {
  return quick
    ? [chain(10), fanout(20), randomDag(60), manySmall(10), largePayloads(true), mapOf(200), flowControl(10)]
    : [
        chain(100),
        fanout(500),
        randomDag(1000),
        manySmall(200),
        largePayloads(false),
        mapOf(10_000),
        flowControl(200),
      ];
}
