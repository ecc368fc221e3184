/**
 * Random valid DAGs, generated with fast-check from a seed: chains, wide fan-outs into one fan-in,
 * layered graphs and free-form mixes, with fan-ins of every kind (all, any, count:N) and node types
 * from the built-ins whose outputs are deterministic (pass, merge, noop, flaky fail, sleep, wait,
 * and rarely a fail that never passes).
 */
import fc from "fast-check";
import type { NodeDefinition, WorkflowDefinition } from "../shared/domain/definition.js";

type Kind =
  | { type: "pass"; value?: unknown; withValue: boolean }
  | { type: "noop" }
  | { type: "merge" }
  | { type: "fail"; times: number; extra: number; initialSeconds: number; jitter: "full" | "none" }
  | { type: "failHard" }
  | { type: "sleep"; ms: number }
  | { type: "wait"; seconds: number };

const MAX_NODES = 14;

const small = fc.oneof(
  fc.integer({ min: -1000, max: 1000 }),
  fc.string({ maxLength: 6 }),
  fc.boolean(),
  fc.constant(null),
);
const value = fc.oneof(
  { weight: 3, arbitrary: small },
  { weight: 1, arbitrary: fc.array(small, { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.dictionary(fc.constantFrom("a", "b", "c"), small, { maxKeys: 2 }) },
);

const kind: fc.Arbitrary<Kind> = fc.oneof(
  {
    weight: 25,
    // a pass without a value returns the execution input
    arbitrary: fc.record({ type: fc.constant("pass" as const), value, withValue: fc.boolean() }),
  },
  { weight: 10, arbitrary: fc.constant({ type: "noop" as const }) },
  { weight: 15, arbitrary: fc.constant({ type: "merge" as const }) },
  {
    weight: 15,
    arbitrary: fc.record({
      type: fc.constant("fail" as const),
      times: fc.integer({ min: 0, max: 2 }),
      extra: fc.integer({ min: 0, max: 2 }),
      initialSeconds: fc.constantFrom(0, 0.1, 0.5, 1),
      jitter: fc.constantFrom("full" as const, "none" as const),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ type: "failHard" as const }) },
  {
    weight: 10,
    arbitrary: fc.record({ type: fc.constant("sleep" as const), ms: fc.integer({ min: 0, max: 8000 }) }),
  },
  {
    weight: 10,
    arbitrary: fc.record({ type: fc.constant("wait" as const), seconds: fc.integer({ min: 0, max: 8 }) }),
  },
);

const shapeArb = fc.record({
  shape: fc.constantFrom("chain", "fanout", "layers", "random", "single"),
  size: fc.integer({ min: 2, max: MAX_NODES }),
  picks: fc.array(fc.array(fc.nat(999), { minLength: 1, maxLength: 3 }), {
    minLength: MAX_NODES,
    maxLength: MAX_NODES,
  }),
  widths: fc.array(fc.integer({ min: 1, max: 4 }), { minLength: MAX_NODES, maxLength: MAX_NODES }),
  fans: fc.array(fc.nat(999), { minLength: MAX_NODES, maxLength: MAX_NODES }),
  kinds: fc.array(kind, { minLength: MAX_NODES, maxLength: MAX_NODES }),
  defaultAttempts: fc.integer({ min: 2, max: 5 }),
  input: value,
});

type ShapeDraw = typeof shapeArb extends fc.Arbitrary<infer T> ? T : never;

/** Parents (indexes of earlier nodes) of each node, by shape. */
function parentsOf(draw: ShapeDraw): number[][] {
  const n = draw.shape === "single" ? 1 : draw.size;
  const picks = (i: number) => draw.picks[i] ?? [0];
  switch (draw.shape) {
    case "single":
      return [[]];
    case "chain":
      return Array.from({ length: n }, (_, i) => (i === 0 ? [] : [i - 1]));
    case "fanout": {
      // one root, n-2 parallel middles, one fan-in sink
      if (n < 3) return Array.from({ length: n }, (_, i) => (i === 0 ? [] : [i - 1]));
      return Array.from({ length: n }, (_, i) =>
        i === 0 ? [] : i < n - 1 ? [0] : Array.from({ length: n - 2 }, (_, j) => j + 1),
      );
    }
    case "layers": {
      const layers: number[][] = [];
      let next = 0;
      for (let l = 0; next < n; l++) {
        const width = Math.min(draw.widths[l] ?? 1, n - next);
        layers.push(Array.from({ length: width }, (_, j) => next + j));
        next += width;
      }
      const parents: number[][] = [];
      layers.forEach((layer, l) => {
        for (const i of layer) {
          const previous = layers[l - 1];
          if (!previous) parents.push([]);
          else parents.push(unique(picks(i).map((p) => previous[p % previous.length]!)));
        }
      });
      return parents;
    }
    default:
      // free form: each node picks up to three earlier nodes; a pick of 0 mod 5 makes an extra entry
      return Array.from({ length: n }, (_, i) => {
        if (i === 0) return [];
        const chosen = picks(i);
        if (chosen[0]! % 5 === 0 && i > 1) return [];
        return unique(chosen.map((p) => p % i));
      });
  }
}

function unique(items: number[]): number[] {
  return [...new Set(items)].sort((a, b) => a - b);
}

function fanInOf(parentCount: number, draw: number): string | undefined {
  if (parentCount < 2) return draw % 7 === 0 ? "all" : undefined;
  const which = draw % 4;
  if (which === 0 || which === 1) return which === 0 ? undefined : "all";
  if (which === 2) return "any";
  return `count:${1 + (Math.floor(draw / 4) % parentCount)}`;
}

function nodeOf(id: string, k: Kind): NodeDefinition {
  switch (k.type) {
    case "pass":
      return { id, type: "pass", ...(k.withValue ? { params: { value: k.value ?? null } } : {}) };
    case "noop":
      return { id, type: "noop" };
    case "merge":
      return { id, type: "merge" };
    case "fail":
      return {
        id,
        type: "fail",
        params: { times: k.times },
        retry: {
          maxAttempts: k.times + 1 + k.extra,
          backoff: { initialSeconds: k.initialSeconds, maxSeconds: 2, multiplier: 2, jitter: k.jitter },
        },
      };
    case "failHard":
      return { id, type: "fail", params: { retryable: false, message: "hard failure" } };
    case "sleep":
      return { id, type: "sleep", params: { ms: k.ms } };
    case "wait":
      return { id, type: "wait", params: { seconds: k.seconds } };
  }
}

export interface GeneratedWorkflow {
  definition: WorkflowDefinition;
  input: unknown;
}

/** One random valid workflow, the same for the same seed. */
export function generateWorkflow(seed: number, name: string): GeneratedWorkflow {
  const [draw] = fc.sample(shapeArb, { seed, numRuns: 1 });
  if (!draw) throw new Error("fast-check produced no sample");
  const parents = parentsOf(draw);
  const ids = parents.map((_, i) => `n${i}-${kindName(draw.kinds[i]!)}`);
  const nodes = parents.map((ps, i) => {
    const node = nodeOf(ids[i]!, draw.kinds[i]!);
    if (ps.length > 0) node.dependsOn = ps.map((p) => ids[p]!);
    const fanIn = fanInOf(ps.length, draw.fans[i]!);
    if (fanIn !== undefined) node.fanIn = fanIn;
    return node;
  });
  // plain JSON (fast-check may build objects with a null prototype)
  return JSON.parse(
    JSON.stringify({
      definition: {
        name,
        defaults: {
          retry: { maxAttempts: draw.defaultAttempts, backoff: { initialSeconds: 0.5, maxSeconds: 4 } },
        },
        nodes,
      },
      input: draw.input ?? null,
    }),
  ) as GeneratedWorkflow;
}

function kindName(k: Kind): string {
  return k.type === "failHard" ? "hard" : k.type;
}
