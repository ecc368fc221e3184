/**
 * Random valid DAGs, generated with fast-check from a seed: chains, wide fan-outs into one fan-in,
 * layered graphs and free-form mixes, with fan-ins of every kind (all, any, count:N) and node types
 * from the built-ins whose outputs are deterministic (pass, merge, noop, flaky fail, sleep, wait,
 * and rarely a fail that never passes).
 *
 * Values are mostly tiny; some inputs and `pass` values are large or odd (a second draw from the
 * seed, so the graphs are those the seed gave before): strings of a few hundred bytes to a few KB
 * with multi-byte and escaped characters, deep and long arrays, and — in inputs only — -0, ±1e400
 * (±Infinity), the extreme doubles and keys such as "" and "__proto__", which exact JSON keeps.
 *
 * Flow control (a third draw, so the graphs and values are those the seed gave before): in about
 * a third of the workflows, some nodes get a `when` ({% %} expressions over the input, the deps
 * the node saw or constants; now and then one that gives a non-boolean, an ExpressionError),
 * some `fail` nodes fail for good (times ≥ attempts), most of those and of the hard failures with
 * `onError: "continue"`, and some `pass` (and `sleep`) params carry {% %} expressions, so skips,
 * continued failures and params mapping are exercised. Three workflows in ten (a fourth draw) have
 * an `onFailure` handler (noop, pass — a constant, or {% error.name %} —, a failing one, a sleep).
 * `generateWorkflow(seed, name, { flowControl: false })` gives the workflows as they were before.
 *
 * Maps (a fifth draw, so the graphs, values and flow control are those the seed gave before): in
 * about three workflows in ten, some nodes (one at least) are `map` nodes instead: over a literal
 * array (empty, one element, up to 30 small or large values) or an expression over the input or
 * the deps (`{% [1..N] %}`, the sorted dep ids, a dep's array, now and then one that gives no
 * array: InvalidMapItems), with 1–5 lanes (or the default, one per item), each item a `pass` of
 * `$item`/`$index`/deps, a flaky `fail`, a `fail` that fails for good on some indexes or on all,
 * an item whose params expression fails, or a `sleep` of `$index` × ms; tolerated failures (a
 * count, a percentage, both) in about half of them, an item retry policy of its own in some, and
 * `onError: "continue"` in some. `generateWorkflow(seed, name, { maps: false })` leaves them out.
 *
 * Child workflows (drawn with `mix` from the seed, so the rest is what the seed gave before): given
 * workflows to call (`children`, from `childLibrary`: two small ones, one calling the other, and
 * now and then `deep`, which calls itself until its input reaches a bound or the depth limit
 * refuses it), four workflows in ten have some nodes made `workflow` nodes (the child's input a
 * literal, the input, the deps, or none; their own retries in some) and some of their maps run a
 * child per item (at most five items).
 */
import fc from "fast-check";
import type { NodeDefinition, OnFailureDefinition, WorkflowDefinition } from "../shared/domain/definition.js";
import { encodeJson } from "../shared/domain/json.js";

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

// ── large and odd values ────────────────────────────────────────────────────────────────────────

/** Pieces of text whose UTF-8 and JSON forms differ from their length: bytes ≠ characters. */
const piece = fc.constantFrom(
  "a",
  "weft ",
  "é",
  "€",
  "😀",
  '"',
  "\\",
  "\n",
  "\u0000",
  "\u2028",
  "\ud800",
  "/",
);
/** A string of tens to a few thousand bytes: a piece pattern repeated. */
const longString = fc
  .tuple(fc.array(piece, { minLength: 1, maxLength: 12 }), fc.integer({ min: 4, max: 120 }))
  .map(([pieces, times]) => pieces.join("").repeat(times));
/** Now and then more than 4 KB (the default inline limit): the blob path at the real threshold too. */
const hugeString = fc.tuple(longString, fc.integer({ min: 4200, max: 6000 })).map(([text, bytes]) => {
  let out = text.length > 0 ? text : "x";
  while (Buffer.byteLength(out, "utf8") < bytes) out += out;
  return out;
});
/** Deep: [[[…v…]]]. */
const deepArray = fc.tuple(fc.integer({ min: 2, max: 60 }), small).map(([depth, inner]) => {
  let value: unknown = inner;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
});
/** Long and nested: arrays of arrays of small values. */
const wideArray = fc.array(fc.array(small, { maxLength: 20 }), { minLength: 5, maxLength: 40 });
/** Values JSON.stringify cannot keep, and exact JSON (shared/domain/json.ts) must. */
const oddNumber = fc.constantFrom(
  -0,
  Number.POSITIVE_INFINITY, // 1e400
  Number.NEGATIVE_INFINITY, // -1e400
  5e-324,
  1.7976931348623157e308,
  2 ** 53 + 2,
  0.1,
  1e21,
  -1e-7,
);
const oddKey = fc.constantFrom("", "__proto__", "constructor", 'a"b', "😀", "a", "b");

/**
 * Values a definition may carry. No odd numbers: the DynamoDB adapter keeps a definition as
 * JSON.stringify writes it (-0 → 0, ±Infinity → null) and its content hash does the same, so only
 * the in-memory store would keep them.
 */
const largeValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: longString },
  { weight: 1, arbitrary: hugeString },
  { weight: 2, arbitrary: deepArray },
  { weight: 2, arbitrary: wideArray },
);
const oddValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    { weight: 3, arbitrary: oddNumber },
    { weight: 2, arbitrary: largeValue },
    { weight: 1, arbitrary: small },
    { weight: 2, arbitrary: fc.array(tie("value"), { maxLength: 4 }) },
    {
      weight: 2,
      // Object.fromEntries defines own properties: a "__proto__" key is a member, not the prototype.
      arbitrary: fc
        .array(fc.tuple(oddKey, tie("value")), { maxLength: 4 })
        .map((entries) => Object.fromEntries(entries)),
    },
  ),
})).value;

const valuesArb = fc.record({
  /** The execution input, replaced by an odd one in half the workflows. */
  input: fc.option(oddValue, { freq: 2 }),
  /** Each `pass` value, replaced by a large one half the time. */
  values: fc.array(fc.option(largeValue, { freq: 2 }), { minLength: MAX_NODES, maxLength: MAX_NODES }),
});

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

export interface GenerateOptions {
  /** Draw `when`, `onError` and params expressions (default true); off: the workflows as before. */
  flowControl?: boolean;
  /** Make some nodes `map` nodes in a share of the workflows (default true); off: no maps. */
  maps?: boolean;
  /**
   * Workflows the generated one may run as children (default none): in a share of the workflows
   * (`childShare` percent, default 40), some nodes become `workflow` nodes calling one of them, and
   * some maps run one per item.
   */
  children?: readonly string[];
  childShare?: number;
  /** Keep only the first nodes (a child workflow is kept small). */
  maxNodes?: number;
  /** Turn some edges into catch edges in a share of the workflows (default true, with flowControl). */
  catchEdges?: boolean;
}

/** One random valid workflow, the same for the same seed. */
export function generateWorkflow(
  seed: number,
  name: string,
  options: GenerateOptions = {},
): GeneratedWorkflow {
  const [draw] = fc.sample(shapeArb, { seed, numRuns: 1 });
  // From a stream of its own, so that the shapes (and tiny values) of every seed stay as they were.
  const [values] = fc.sample(valuesArb, { seed: (seed ^ 0x0dd5eed) | 0, numRuns: 1 });
  // Flow control from a third stream, for the same reason; an onFailure handler from a fourth.
  const [flow] = fc.sample(flowArb, { seed: (seed ^ 0x5ce1a11) | 0, numRuns: 1 });
  // Maps from a fifth stream, for the same reason.
  const [maps] = fc.sample(mapsArb, { seed: (seed ^ 0x3a9c0de) | 0, numRuns: 1 });
  if (!draw || !values || !flow || !maps) throw new Error("fast-check produced no sample");
  // Each node's parents come before it, so the first nodes are a workflow of their own.
  const parents = parentsOf(draw).slice(0, options.maxNodes);
  const isMap = mapsOf(parents.length, options.maps !== false ? maps : undefined, seed);
  const calls = childCallsOf(parents.length, isMap, options.children ?? [], options.childShare, seed);
  const ids = parents.map(
    (_, i) => `n${i}-${isMap[i] ? "map" : calls[i] ? "child" : kindName(draw.kinds[i]!)}`,
  );
  const nodes = parents.map((ps, i) => {
    const k = draw.kinds[i]!;
    const large = values.values[i];
    const call = calls[i];
    const node: NodeDefinition = isMap[i]
      ? { id: ids[i]!, type: "map" }
      : call
        ? childNodeOf(ids[i]!, (ps ?? []).length > 0, call)
        : nodeOf(ids[i]!, k.type === "pass" && large !== null ? { ...k, value: large } : k);
    if (ps.length > 0) node.dependsOn = ps.map((p) => ids[p]!);
    const fanIn = fanInOf(ps.length, draw.fans[i]!);
    if (fanIn !== undefined) node.fanIn = fanIn;
    return node;
  });
  if (options.flowControl !== false && flow.enabled < FLOW_PERCENT)
    addFlowControl(nodes, parents, flow, draw.defaultAttempts);
  // After flow control, which leaves a map's params alone (a map is no `pass`, `fail` or `sleep`).
  nodes.forEach((node, i) => {
    if (isMap[i])
      mapNodeOf(
        node,
        (parents[i] ?? []).map((p) => ids[p]!),
        maps.nodes[i]!,
        calls[i],
      );
  });
  // Catch edges from a hash of their own, after everything else, so every other draw stays as it was.
  if (options.flowControl !== false && options.catchEdges !== false)
    addCatchEdges(nodes, mix(seed ^ 0xca7c4ed));
  // Plain JSON (fast-check may build objects with a null prototype); the input as exact JSON, so
  // -0 and ±Infinity stay what they are.
  const onFailure = options.flowControl !== false ? onFailureOf(mix(seed ^ 0x0f4115)) : undefined;
  const definition = JSON.parse(
    JSON.stringify({
      name,
      defaults: {
        retry: { maxAttempts: draw.defaultAttempts, backoff: { initialSeconds: 0.5, maxSeconds: 4 } },
      },
      ...(onFailure ? { onFailure } : {}),
      nodes,
    }),
  ) as WorkflowDefinition;
  const input: unknown = JSON.parse(
    encodeJson(values.input ?? draw.input ?? null, {
      maxBytes: Number.POSITIVE_INFINITY,
      maxDepth: Number.POSITIVE_INFINITY,
      what: "a generated input",
    }),
  );
  return { definition, input };
}

// ── catch edges ────────────────────────────────────────────────────────────────────────────────

/** The share of workflows (in percent) with catch edges. */
const CATCH_PERCENT = 25;

/**
 * The names a catch edge's `errors` may list: those the simulation's failures carry (a `fail`
 * node's RetryableError or TerminalError, the engine's LeaseExpired, DeadLettered, ExpressionError)
 * and one nothing raises.
 */
const CATCH_NAMES = [
  "RetryableError",
  "TerminalError",
  "LeaseExpired",
  "DeadLettered",
  "ExpressionError",
  "*",
  "NoSuchError",
];

/**
 * Turns some `dependsOn` entries into catch edges (`on: "failure"` or `"always"`, with or without
 * `errors`), never from a node under `onError: "continue"` (refused at registration).
 */
function addCatchEdges(nodes: NodeDefinition[], draw: number): void {
  if (draw % 100 >= CATCH_PERCENT) return;
  const byId = new Map(nodes.map((node) => [node.id, node]));
  nodes.forEach((node, i) => {
    if (!node.dependsOn) return;
    node.dependsOn = node.dependsOn.map((entry, position) => {
      const parent = typeof entry === "string" ? entry : entry.node;
      if (byId.get(parent)?.onError === "continue") return entry;
      const h = mix(draw ^ (i * 1031 + position * 17 + 1));
      const pick = h % 100;
      if (pick < 55) return entry;
      const on = pick < 85 ? ("failure" as const) : ("always" as const);
      if ((h >>> 8) % 3 !== 0) return { node: parent, on };
      const first = CATCH_NAMES[(h >>> 12) % CATCH_NAMES.length]!;
      const second = CATCH_NAMES[(h >>> 16) % CATCH_NAMES.length]!;
      return { node: parent, on, errors: first === second ? [first] : [first, second] };
    });
  });
}

// ── flow control: when, onError, params expressions ───────────────────────────────────────────

/** The share of workflows (in percent) that use flow control. */
const FLOW_PERCENT = 35;

const perNode = fc.record({
  /** < 30: the node gets a `when`. */
  when: fc.nat(99),
  /** Which `when` (or params expression), and which parent it names. */
  which: fc.nat(9999),
  parent: fc.nat(99),
  /** < 50 for a flaky `fail`: it fails for good (times ≥ its attempts). */
  forGood: fc.nat(99),
  /** < 80 for a node that fails for good: `onError: "continue"` (< 8 for any other node). */
  onError: fc.nat(99),
  /** < 40 for a `pass` (< 25 for a `sleep`): params carry {% %} expressions. */
  params: fc.nat(99),
});
const flowArb = fc.record({
  enabled: fc.nat(99),
  nodes: fc.array(perNode, { minLength: MAX_NODES, maxLength: MAX_NODES }),
});
type FlowDraw = typeof flowArb extends fc.Arbitrary<infer T> ? T : never;

/** `when` expressions: [weight, text] by the node's parent ids (P: one of them). */
function whenOf(parentIds: readonly string[], which: number, pick: number): string {
  // Ids hold "-": JSONata names them in backquotes.
  const p = parentIds.length > 0 ? parentIds[pick % parentIds.length]! : undefined;
  const choices: Array<[number, string]> = [
    [3, "{% true %}"],
    [3, "{% false %}"],
    [5, "{% $count($keys(deps)) > 0 %}"],
    [3, "{% input = null %}"],
    [2, "{% $count($keys(deps)) >= 2 %}"],
    // a non-boolean: the node fails with ExpressionError
    [1, which % 2 === 0 ? "{% 1 %}" : '{% "yes" %}'],
    // undefined (a path into nothing; names under deps must be dependencies): skipped
    [1, p === undefined ? "{% input.nowhere.at.all %}" : `{% deps.\`${p}\`.nowhere %}`],
  ];
  if (p !== undefined)
    choices.push(
      [5, `{% $exists(deps.\`${p}\`) %}`],
      [4, `{% deps.\`${p}\` != null %}`],
      [3, `{% $exists(deps.\`${p}\`.error) %}`],
      [3, `{% $not($exists(deps.\`${p}\`.error)) %}`],
    );
  return weighted(choices, which);
}

/** A `pass` node's params with {% %} expressions: at the top or nested in an object. */
function passParamsOf(parentIds: readonly string[], which: number, pick: number): Record<string, unknown> {
  // Ids hold "-": JSONata names them in backquotes.
  const p = parentIds.length > 0 ? parentIds[pick % parentIds.length]! : undefined;
  const choices: Array<[number, unknown]> = [
    [3, "{% $count($keys(deps)) %}"],
    [3, "{% [$sort($keys(deps))] %}"],
    [2, '{% input = null ? "none" : "some" %}'],
    [2, "{% execution.workflow %}"],
    [2, '{% {"n": $count($keys(deps)), "wf": execution.workflow} %}'],
    [
      2,
      {
        deps: "{% [$sort($keys(deps))] %}",
        literal: [1, "two", null],
        nested: { n: "{% $count($keys(deps)) %}" },
      },
    ],
  ];
  if (p !== undefined)
    choices.push(
      [3, `{% $exists(deps.\`${p}\`.error) ? "error" : "ok" %}`],
      [2, `{% $exists(deps.\`${p}\`) ? deps.\`${p}\` : "absent" %}`],
      [2, { seen: `{% $exists(deps.\`${p}\`) %}`, failed: `{% $exists(deps.\`${p}\`.error) %}` }],
    );
  return { value: weighted(choices, which) };
}

function weighted<T>(choices: ReadonlyArray<[number, T]>, draw: number): T {
  const total = choices.reduce((sum, [w]) => sum + w, 0);
  let at = draw % total;
  for (const [w, choice] of choices) {
    if (at < w) return choice;
    at -= w;
  }
  return choices[0]![1];
}

/** Adds `when`, `onError` and params expressions to some of the nodes, as `flow` draws. */
function addFlowControl(
  nodes: NodeDefinition[],
  parents: readonly number[][],
  flow: FlowDraw,
  defaultAttempts: number,
): void {
  nodes.forEach((node, i) => {
    const f = flow.nodes[i]!;
    const parentIds = (parents[i] ?? []).map((p) => nodes[p]!.id);
    let failsForGood = false;
    if (node.type === "fail") {
      const params = (node.params ?? {}) as { times?: number; retryable?: boolean };
      if (params.retryable === false) failsForGood = true;
      else if (f.forGood < 50) {
        // every attempt fails: times ≥ maxAttempts
        const attempts = (Array.isArray(node.retry) ? undefined : node.retry?.maxAttempts) ?? defaultAttempts;
        node.params = { times: attempts + (f.which % 2), message: `${node.id} fails for good` };
        failsForGood = true;
      }
    }
    if (f.onError < (failsForGood ? 80 : 8)) node.onError = "continue";
    if (f.when < 30) node.when = whenOf(parentIds, f.which, f.parent);
    if (node.type === "pass" && f.params < 40) node.params = passParamsOf(parentIds, f.which >> 4, f.parent);
    if (node.type === "sleep" && f.params < 25)
      node.params = { ms: `{% $count($keys(deps)) * ${1 + (f.which % 500)} %}` };
  });
}

/** A 32-bit integer hash (uniform, unlike fast-check's small-biased single samples). */
function mix(x: number): number {
  let h = Math.imul(x ^ (x >>> 16), 0x45d9f3b);
  h = Math.imul(h ^ (h >>> 16), 0x45d9f3b);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * A workflow's onFailure handler, in three workflows in ten: its outcome (even a failure) never
 * changes the execution's status.
 */
function onFailureOf(draw: number): OnFailureDefinition | undefined {
  if (draw % 100 >= 30) return undefined;
  switch (Math.floor(draw / 100) % 5) {
    case 0:
      return { type: "noop" };
    case 1:
      return { type: "pass", params: { value: "compensated" } };
    case 2:
      return {
        type: "pass",
        params: { value: { failed: "{% error.name %}", workflow: "{% execution.workflow %}" } },
      };
    case 3:
      return { type: "fail", params: { retryable: false, message: "the compensation failed too" } };
    default:
      return { type: "sleep", params: { ms: 1500 } };
  }
}

function kindName(k: Kind): string {
  return k.type === "failHard" ? "hard" : k.type;
}

// ── maps ─────────────────────────────────────────────────────────────────────────────────────────

/** The share of workflows (in percent) that have map nodes. */
const MAP_PERCENT = 30;
/** The share of a map workflow's nodes (in percent) that are maps (one at least). */
const MAP_NODE_PERCENT = 25;

const itemCount = fc.oneof(
  { weight: 2, arbitrary: fc.constant(0) },
  { weight: 2, arbitrary: fc.constant(1) },
  { weight: 3, arbitrary: fc.integer({ min: 2, max: 6 }) },
  { weight: 3, arbitrary: fc.integer({ min: 7, max: 30 }) },
);
const perMap = fc.record({
  /** Where its items come from. */
  source: fc.nat(99),
  count: itemCount,
  /** Literal items, cycled to `count` elements; large ones now and then. */
  literal: fc.array(fc.oneof({ weight: 6, arbitrary: small }, { weight: 1, arbitrary: largeValue }), {
    minLength: 1,
    maxLength: 8,
  }),
  /** Which parent an expression names. */
  parent: fc.nat(99),
  /** The item task, and a number it uses. */
  task: fc.nat(9999),
  knob: fc.nat(9999),
  /** undefined: the default maxConcurrency (40, so one lane per item here). */
  lanes: fc.option(fc.integer({ min: 1, max: 5 }), { freq: 5 }),
  /** < 50 none; < 70 a count; < 85 a percentage; else both. */
  tolerance: fc.nat(99),
  toleratedCount: fc.integer({ min: 0, max: 4 }),
  toleratedPercent: fc.oneof(fc.constantFrom(0, 10, 25, 50, 100), fc.integer({ min: 0, max: 100 })),
  /** The items' retry policy: params.retry (< 35), the map node's own (< 55), else the defaults. */
  retryWhere: fc.nat(99),
  retry: fc.record({
    maxAttempts: fc.integer({ min: 1, max: 4 }),
    initialSeconds: fc.constantFrom(0, 0.1, 0.5, 1),
  }),
  /** < 35: `onError: "continue"`. */
  onError: fc.nat(99),
  itemEvents: fc.boolean(),
});
const mapsArb = fc.record({
  /** The node made a map when none was drawn. */
  first: fc.nat(999),
  nodes: fc.array(perMap, { minLength: MAX_NODES, maxLength: MAX_NODES }),
});
type MapsDraw = typeof mapsArb extends fc.Arbitrary<infer T> ? T : never;
type MapDraw = MapsDraw["nodes"][number];

/**
 * Which of `n` nodes are maps: none unless the workflow has maps, then one at least. Drawn with
 * `mix` (uniform), so the shares are what they say.
 */
function mapsOf(n: number, maps: MapsDraw | undefined, seed: number): boolean[] {
  if (!maps || mix(seed ^ 0x3a9) % 100 >= MAP_PERCENT) return Array.from({ length: n }, () => false);
  const isMap = Array.from({ length: n }, (_, i) => mix((seed ^ 0x3a9c) + i) % 100 < MAP_NODE_PERCENT);
  if (!isMap.includes(true)) isMap[maps.first % n] = true;
  return isMap;
}

/**
 * Makes `node` a map: its items, its item task, its lanes, tolerance, retries and onError. With
 * `call`, a map over a child workflow: at most MAX_CHILD_ITEMS items, from a literal or a range.
 */
function mapNodeOf(node: NodeDefinition, parentIds: readonly string[], m: MapDraw, call?: ChildCall): void {
  const p = parentIds.length > 0 ? parentIds[m.parent % parentIds.length]! : undefined;
  const count = call ? Math.min(m.count, MAX_CHILD_ITEMS) : m.count;
  // The drawn values, then small ones cycled (large values cycled to 30 would overflow the definition).
  const cycled = m.literal.filter((v) => JSON.stringify(v).length <= 40);
  const literal = Array.from({ length: count }, (_, i) =>
    i < m.literal.length ? m.literal[i] : cycled.length > 0 ? cycled[i % cycled.length] : i,
  );
  const sources: Array<[number, unknown]> = [
    [8, literal],
    [4, `{% [1..${count}] %}`],
    [2, `{% [[1..${count}].($ * 3)] %}`],
    [2, "{% [$sort($keys(deps))] %}"],
    [1, "{% input = null ? [] : [input] %}"],
    // no array (a number): the map fails with InvalidMapItems
    [m.count === 0 ? 1 : 0, "{% 42 %}"],
  ];
  if (p !== undefined && !call)
    sources.push(
      [2, `{% $type(deps.\`${p}\`) = "array" ? deps.\`${p}\` : [deps.\`${p}\`] %}`],
      // a dep's output as it is: an array only if that dep gave one (else InvalidMapItems)
      [1, `{% deps.\`${p}\` %}`],
    );
  const items = weighted(sources, m.source);
  const attempts = m.retry.maxAttempts;
  const k = 2 + (m.knob % 4);
  const tasks: Array<[number, { type: string; params?: unknown }]> = [
    [5, { type: "pass", params: { value: "{% $item %}" } }],
    [2, { type: "pass", params: { value: { i: "{% $index %}", v: "{% $item %}" } } }],
    [1, { type: "pass", params: { value: "{% [$index, $count($keys(deps)), execution.workflow] %}" } }],
    [1, { type: "pass" }],
    // flaky: passes on attempt times + 1, when the items have that many attempts
    [3, { type: "fail", params: { times: m.knob % 3 } }],
    // every k-th item fails for good
    [3, { type: "fail", params: { times: `{% $index % ${k} = 0 ? 99 : 0 %}`, message: "item fails" } }],
    // one item fails, not retryable
    [
      1,
      {
        type: "fail",
        params: { times: `{% $index = ${m.knob % 5} ? 1 : 0 %}`, retryable: false, message: "bad item" },
      },
    ],
    [1, { type: "fail", params: { retryable: false, message: "every item is bad" } }],
    // one item's params fail to evaluate: an ExpressionError, for good
    [1, { type: "pass", params: { value: `{% $index = ${m.knob % 4} ? $error("no") : $index %}` } }],
    [2, { type: "sleep", params: { ms: `{% $index * ${m.knob % 300} %}` } }],
    [1, { type: "sleep", params: { ms: m.knob % 2500 } }],
  ];
  const task = weighted(tasks, m.task);
  const params: Record<string, unknown> = call
    ? { items, workflow: { name: call.name, input: childItemInputOf(call) } }
    : { items, task };
  if (m.lanes !== null) params.maxConcurrency = m.lanes;
  if (m.tolerance >= 50 && (m.tolerance < 70 || m.tolerance >= 85))
    params.toleratedFailureCount = m.toleratedCount;
  if (m.tolerance >= 70) params.toleratedFailurePercentage = m.toleratedPercent;
  const retry = { maxAttempts: attempts, backoff: { initialSeconds: m.retry.initialSeconds, maxSeconds: 2 } };
  if (m.retryWhere < 35) params.retry = retry;
  else if (m.retryWhere < 55) node.retry = retry;
  if (m.itemEvents) params.itemEvents = true;
  node.params = params;
  if (m.onError < 35) node.onError = "continue";
}

// ── child workflows ──────────────────────────────────────────────────────────────────────────────

/** The share of workflows (in percent) with `workflow` nodes, when there are workflows to call. */
const CHILD_PERCENT = 40;
/** The share of such a workflow's nodes (in percent) that call a child (one at least). */
const CHILD_NODE_PERCENT = 20;
/** The share of its map nodes (in percent) that run a child workflow per item. */
const CHILD_MAP_PERCENT = 35;
/** A map over a child workflow runs at most this many items (each is a whole execution). */
const MAX_CHILD_ITEMS = 5;
/** The workflow that calls itself, deeper each time, until its input reaches DEEP_LIMIT or the depth limit. */
export const DEEP_WORKFLOW = "deep";
const DEEP_LIMIT = 10;

interface ChildCall {
  name: string;
  /** Which input (and retry policy) the call gets. */
  draw: number;
}

/**
 * Which nodes call a child workflow, and which one: drawn with `mix` from the seed alone, so a
 * seed's shapes, values, flow control and maps are those it gave before (but for the nodes made
 * children). Maps among them run the child per item.
 */
function childCallsOf(
  n: number,
  isMap: readonly boolean[],
  children: readonly string[],
  share: number | undefined,
  seed: number,
): Array<ChildCall | undefined> {
  const none = Array.from({ length: n }, (): ChildCall | undefined => undefined);
  if (children.length === 0 || mix(seed ^ 0x6c1d) % 100 >= (share ?? CHILD_PERCENT)) return none;
  const draw = (i: number) => mix((seed ^ 0x6c1d0) + i);
  const calls = none.map((_, i): ChildCall | undefined => {
    const d = draw(i);
    const called = isMap[i] ? d % 100 < CHILD_MAP_PERCENT : d % 100 < CHILD_NODE_PERCENT;
    return called ? { name: children[(d >>> 8) % children.length]!, draw: d >>> 12 } : undefined;
  });
  if (!calls.some((c) => c !== undefined)) {
    const i = mix(seed ^ 0x6c1) % n;
    const d = draw(n + i);
    // A node made a child here is not a map (a map stays a map over its task).
    if (!isMap[i]) calls[i] = { name: children[d % children.length]!, draw: d >>> 12 };
  }
  return calls;
}

/** A `workflow` node: its child's input from a literal, the input or the deps; now and then its own retries. */
function childNodeOf(id: string, hasParents: boolean, call: ChildCall): NodeDefinition {
  const d = call.draw;
  if (call.name === DEEP_WORKFLOW)
    return { id, type: "workflow", params: { name: call.name, input: d % (DEEP_LIMIT + 2) } };
  const inputs: Array<[number, unknown]> = [
    [2, undefined],
    [2, { k: d % 7 }],
    [3, "{% input %}"],
    [1, '{% {"from": execution.workflow} %}'],
  ];
  if (hasParents)
    inputs.push([3, "{% deps %}"], [2, "{% [$sort($keys(deps))] %}"], [1, "{% $count($keys(deps)) %}"]);
  const input = weighted(inputs, d);
  const node: NodeDefinition = {
    id,
    type: "workflow",
    params: { name: call.name, ...(input !== undefined ? { input } : {}) },
  };
  if ((d >>> 6) % 3 === 0)
    node.retry = { maxAttempts: 1 + ((d >>> 8) % 3), backoff: { initialSeconds: 0.5, maxSeconds: 2 } };
  return node;
}

/** The input a map's item gives its child workflow. */
function childItemInputOf(call: ChildCall): unknown {
  if (call.name === DEEP_WORKFLOW) return `{% $index + ${call.draw % DEEP_LIMIT} %}`;
  return call.draw % 2 === 0 ? "{% $item %}" : '{% {"i": $index, "v": $item} %}';
}

/**
 * The workflows a world's workflows may call (world.ts draws whether a world has them): `lib0`,
 * small and calling nothing; `lib1`, calling `lib0`; and in half the worlds `deep`, which calls
 * itself with its input plus one while its input is under DEEP_LIMIT, so a chain of executions
 * reaches the depth limit (its deepest node fails with WorkflowDepthExceeded) or ends before it.
 */
export function childLibrary(seed: number): GeneratedWorkflow[] {
  const lib0 = generateWorkflow(mix(seed ^ 0x11b0), "lib0", { maxNodes: 3, maps: false });
  const lib1 = generateWorkflow(mix(seed ^ 0x11b1), "lib1", {
    maxNodes: 4,
    maps: false,
    children: ["lib0"],
    childShare: 100,
  });
  const library = [lib0, lib1];
  if (mix(seed ^ 0xdee9) % 2 === 0)
    library.push({
      definition: {
        name: DEEP_WORKFLOW,
        defaults: { retry: { maxAttempts: 1 } },
        nodes: [
          {
            id: "n0-child",
            type: "workflow",
            when: `{% $type(input) = "number" and input < ${DEEP_LIMIT} %}`,
            params: { name: DEEP_WORKFLOW, input: "{% input + 1 %}" },
          },
          { id: "n1-pass", type: "pass", dependsOn: ["n0-child"], params: { value: "{% deps %}" } },
        ],
      },
      input: 0,
    });
  return library;
}

// ── fan-out trees ────────────────────────────────────────────────────────────────────────────────

/** The workflow of a fan-out world (world.ts): a tree of executions under a small budget. */
export const TREE_WORKFLOW = "tree";

/**
 * A fan-out tree (issue 25's bomb, made small): a map that runs `tree` itself per item, `width`
 * items while its input is under `depth`, and a `workflow` node that starts one more `tree` below
 * the last level's parent; so a root's tree is wide and deep enough to pass the world's small
 * fan-out budget (EngineOptions.fanOut), on descendants, on map items in flight, or on both. Its
 * map tolerates every failure in some worlds and none in others, with one to three lanes.
 */
export function fanOutTree(seed: number): GeneratedWorkflow {
  const width = 2 + (mix(seed ^ 0xf0) % 2);
  const depth = 2 + (mix(seed ^ 0xf1) % 2);
  const lanes = 1 + (mix(seed ^ 0xf2) % 3);
  const tolerant = mix(seed ^ 0xf3) % 3 !== 0;
  const next = Array.from({ length: width }, () => "input + 1").join(", ");
  return {
    definition: {
      name: TREE_WORKFLOW,
      defaults: { retry: { maxAttempts: 1 + (mix(seed ^ 0xf4) % 2), backoff: { initialSeconds: 0.5 } } },
      nodes: [
        {
          id: "n0-map",
          type: "map",
          params: {
            items: `{% input < ${depth} ? [${next}] : [] %}`,
            workflow: { name: TREE_WORKFLOW, input: "{% $item %}" },
            maxConcurrency: lanes,
            ...(tolerant ? { toleratedFailurePercentage: 100 } : {}),
          },
          ...(tolerant ? {} : { onError: "continue" as const }),
        },
        {
          id: "n1-child",
          type: "workflow",
          when: `{% input = ${depth - 1} %}`,
          params: { name: TREE_WORKFLOW, input: depth },
          onError: "continue",
        },
        { id: "n2-pass", type: "pass", dependsOn: ["n0-map", "n1-child"], params: { value: "{% deps %}" } },
      ],
    },
    input: 0,
  };
}
