/**
 * The compiled form of a valid definition: nodes by index with parents/children resolved and the
 * retry policy and timeout fully defaulted, so the engine never re-derives them per message.
 */

import {
  type FanIn,
  type OnError,
  parseFanIn,
  type RetryDefinition,
  type WorkflowDefinition,
} from "./definition.js";
import { dependencyIds, type Edge, edgeOf, SUCCESS_EDGE } from "./edges.js";
import type { RunsOn } from "./placement.js";
import { type ConcurrencyLimit, concurrencyLimits } from "./slots.js";

/** How long to wait before the next attempt (domain/retry.ts backoffDelayMs). */
export interface Backoff {
  initialSeconds: number;
  maxSeconds: number;
  multiplier: number;
  jitter: "full" | "none";
}

/** One retrier: the errors it retries ("*": any), up to how many attempts of the node in all, and how. */
export interface ResolvedRetrier extends Backoff {
  errors: string[];
  maxAttempts: number;
}

export interface ResolvedRetry {
  /** The first whose `errors` match a failure decides it; an error none matches is not retried. */
  retriers: ResolvedRetrier[];
  /** Error names that fail the node at once, whatever the attempt count (the object form's). */
  nonRetryable: string[];
  /** The most attempts any error gets: what needs a bound (worker time, the simulation) reads it. */
  maxAttempts: number;
}

export interface GraphNode {
  /** Position in `definition.nodes`; the engine stores dependency sets as these indexes. */
  index: number;
  id: string;
  type: string;
  params: unknown;
  /** In `dependsOn` order. */
  parents: number[];
  /** How it depends on each parent, in `parents` order (domain/edges.ts; a plain id: success). */
  edges: Edge[];
  /** Its children's edges that take failures (`failure`/`always`): whether a failure is caught. */
  catchEdges: Edge[];
  /** In ascending index order. */
  children: number[];
  fanIn: FanIn;
  retry: ResolvedRetry;
  timeoutSeconds: number;
  /** The `{% %}` expression deciding whether the node runs once it is ready (else SKIPPED). */
  when?: string;
  onError: OnError;
  /**
   * Whether the node may end SKIPPED: it has a `when`, or a dependency that may be skipped. Only
   * such nodes' dependants need to tell a skip from a completion when they are decided.
   */
  mayBeSkipped: boolean;
  /** The workflow's `onFailure` handler: not part of the DAG (ON_FAILURE_NODE_ID). */
  onFailureHandler?: true;
  /** Runs on external workers only (domain/placement.ts), with heartbeats this often. */
  runsOn?: RunsOn;
  heartbeatSeconds?: number;
  /** Variables its completion sets (domain/vars.ts, engine/vars.ts applyAssign). */
  assign?: Record<string, unknown>;
  /** Its concurrency limits (domain/slots.ts, engine/slots.ts): each must have room before it runs. */
  concurrency?: ConcurrencyLimit[];
  /** An item of a `map` node (domain/map.ts): not part of the DAG either. */
  item?: { mapId: string; mapAttempt: number; index: number; map: GraphNode };
}

/**
 * The id under which the `onFailure` handler runs as a node of a failed execution. Node ids of a
 * definition never start with "$", so it names no node of the DAG.
 */
export const ON_FAILURE_NODE_ID = "$onFailure";

export interface WorkflowGraph {
  definition: WorkflowDefinition;
  nodes: GraphNode[];
  byId: Map<string, GraphNode>;
  /** Nodes with no dependencies: dispatched when the execution starts. */
  entries: number[];
  /** Nodes nobody depends on: their outputs make the execution's output. */
  sinks: number[];
  /** The `onFailure` handler (also in `byId`, never in `nodes`): run once when the execution fails. */
  onFailure?: GraphNode;
}

/** The built-in retrier: every error, 3 attempts, exponential backoff from 1 s with full jitter. */
export const DEFAULT_RETRIER: Readonly<ResolvedRetrier> = Object.freeze({
  errors: ["*"],
  maxAttempts: 3,
  initialSeconds: 1,
  maxSeconds: 300,
  multiplier: 2,
  jitter: "full",
});

export const DEFAULT_RETRY: Readonly<ResolvedRetry> = Object.freeze({
  retriers: [DEFAULT_RETRIER],
  nonRetryable: [],
  maxAttempts: DEFAULT_RETRIER.maxAttempts,
});

/** A policy of one retrier for every error: the built-in one with `maxAttempts` attempts. */
export function retryWithAttempts(maxAttempts: number): ResolvedRetry {
  return { retriers: [{ ...DEFAULT_RETRIER, maxAttempts }], nonRetryable: [], maxAttempts };
}

export const DEFAULT_NODE_TIMEOUT_SECONDS = 300;

export interface CompileOptions {
  /**
   * Attempts of a node whose definition and `defaults.retry` name none: the deployment's setting
   * (WEFT_DEFAULT_MAX_ATTEMPTS), passed in by the engine. Default DEFAULT_RETRY.maxAttempts.
   */
  defaultMaxAttempts?: number;
  /**
   * Timeout of a node whose definition and `defaults` name none: what the deployment's worker can
   * give, at most DEFAULT_NODE_TIMEOUT_SECONDS (engine/worker-time.ts), passed in by the engine.
   */
  defaultTimeoutSeconds?: number;
}

/**
 * A node's policy from its `retry`, the workflow's `defaults.retry` and `base` (the built-in one,
 * with the deployment's attempts; a map's, for its items). The object forms merge field by field
 * (backoff included): the node's over the defaults' over the base's first retrier. A list is taken
 * whole, each retrier's missing fields from the defaults' object form or else the base's first
 * retrier; a node's own `retry`, of either form, replaces a defaults list.
 */
export function resolveRetry(
  defaults: RetryDefinition | undefined,
  node: RetryDefinition | undefined,
  base: Readonly<ResolvedRetry> = DEFAULT_RETRY,
): ResolvedRetry {
  const baseRetrier = base.retriers[0] ?? DEFAULT_RETRIER;
  const defaultsPolicy = defaults !== undefined && !Array.isArray(defaults) ? defaults : undefined;
  const own = node ?? (Array.isArray(defaults) ? defaults : undefined);
  if (Array.isArray(own)) {
    const retriers = own.map((retrier) => retrierOf(retrier.errors, [retrier, defaultsPolicy], baseRetrier));
    return { retriers, nonRetryable: [], maxAttempts: Math.max(...retriers.map((r) => r.maxAttempts)) };
  }
  if (own === undefined && defaultsPolicy === undefined) return copyRetry(base);
  const layers = [own, defaultsPolicy];
  const retryOn = own?.retryOn ?? defaultsPolicy?.retryOn;
  const nonRetryable = own?.nonRetryable ?? defaultsPolicy?.nonRetryable;
  // Without a retryOn of its own, a policy keeps the base's errors (a map's allow-list for its items).
  const retrier = retrierOf(retryOn ?? baseRetrier.errors, layers, baseRetrier);
  return {
    retriers: [retrier],
    // Copied so a caller mutating the policy cannot change the definition or the frozen defaults.
    nonRetryable: [...(nonRetryable ?? base.nonRetryable)],
    maxAttempts: retrier.maxAttempts,
  };
}

type RetryLayer = { maxAttempts?: number | undefined; backoff?: Partial<Backoff> | undefined } | undefined;

function retrierOf(
  errors: readonly string[],
  layers: readonly RetryLayer[],
  base: ResolvedRetrier,
): ResolvedRetrier {
  const pick = <K extends keyof Backoff>(key: K): Backoff[K] => {
    for (const layer of layers) {
      const value = layer?.backoff?.[key];
      if (value !== undefined) return value as Backoff[K];
    }
    return base[key];
  };
  return {
    errors: [...errors],
    maxAttempts: layers.find((layer) => layer?.maxAttempts !== undefined)?.maxAttempts ?? base.maxAttempts,
    initialSeconds: pick("initialSeconds"),
    maxSeconds: pick("maxSeconds"),
    multiplier: pick("multiplier"),
    jitter: pick("jitter"),
  };
}

function copyRetry(policy: Readonly<ResolvedRetry>): ResolvedRetry {
  return {
    retriers: policy.retriers.map((r) => ({ ...r, errors: [...r.errors] })),
    nonRetryable: [...policy.nonRetryable],
    maxAttempts: policy.maxAttempts,
  };
}

/** Assumes `definition` passed validateDefinition: ids unique, dependencies known, no cycles. */
export function compileGraph(definition: WorkflowDefinition, options: CompileOptions = {}): WorkflowGraph {
  const indexById = new Map<string, number>();
  definition.nodes.forEach((node, index) => {
    indexById.set(node.id, index);
  });

  const defaultTimeout =
    definition.defaults?.timeoutSeconds ?? options.defaultTimeoutSeconds ?? DEFAULT_NODE_TIMEOUT_SECONDS;
  const builtInRetry =
    options.defaultMaxAttempts === undefined ? DEFAULT_RETRY : retryWithAttempts(options.defaultMaxAttempts);
  const nodes: GraphNode[] = definition.nodes.map((node, index) => ({
    index,
    id: node.id,
    type: node.type,
    params: node.params,
    parents: dependencyIds(node).map((dep) => {
      const parent = indexById.get(dep);
      if (parent === undefined)
        throw new Error(`compileGraph: node "${node.id}" depends on unknown "${dep}"`);
      return parent;
    }),
    edges: (node.dependsOn ?? []).map(edgeOf),
    catchEdges: [],
    children: [],
    fanIn: parseFanIn(node.fanIn),
    retry: resolveRetry(definition.defaults?.retry, node.retry, builtInRetry),
    timeoutSeconds: node.timeoutSeconds ?? defaultTimeout,
    ...(node.when !== undefined ? { when: node.when } : {}),
    ...(node.runsOn !== undefined ? { runsOn: node.runsOn } : {}),
    ...(node.heartbeatSeconds !== undefined ? { heartbeatSeconds: node.heartbeatSeconds } : {}),
    ...(node.assign !== undefined ? { assign: node.assign } : {}),
    ...(node.concurrency !== undefined ? { concurrency: concurrencyLimits(node.concurrency) } : {}),
    onError: node.onError ?? "fail",
    mayBeSkipped: false,
  }));

  // Visiting children in index order keeps every children list sorted without a sort.
  for (const node of nodes) {
    node.parents.forEach((parent, position) => {
      nodes[parent]!.children.push(node.index);
      const edge = node.edges[position] ?? SUCCESS_EDGE;
      if (edge.on !== "success") nodes[parent]!.catchEdges.push(edge);
    });
  }
  markSkippable(nodes);

  const handler = definition.onFailure;
  const onFailure: GraphNode | undefined = handler && {
    index: nodes.length,
    id: ON_FAILURE_NODE_ID,
    type: handler.type,
    params: handler.params,
    parents: [],
    edges: [],
    catchEdges: [],
    children: [],
    fanIn: { kind: "all" },
    retry: resolveRetry(definition.defaults?.retry, handler.retry, builtInRetry),
    timeoutSeconds: handler.timeoutSeconds ?? defaultTimeout,
    onError: "continue",
    mayBeSkipped: false,
    onFailureHandler: true,
  };
  return {
    definition,
    nodes,
    byId: new Map([...nodes, ...(onFailure ? [onFailure] : [])].map((node) => [node.id, node])),
    ...(onFailure ? { onFailure } : {}),
    entries: nodes.filter((n) => n.parents.length === 0).map((n) => n.index),
    sinks: nodes.filter((n) => n.children.length === 0).map((n) => n.index),
  };
}

/** How `child` depends on its parent `parentIndex` (a success edge when it does not). */
export function edgeFrom(child: GraphNode, parentIndex: number): Edge {
  return child.edges[child.parents.indexOf(parentIndex)] ?? SUCCESS_EDGE;
}

/**
 * Sets `mayBeSkipped`: nodes with a `when` or a parent with catch edges, and everything downstream
 * of one (the graph is acyclic).
 */
function markSkippable(nodes: GraphNode[]): void {
  // The children of a node with catch edges take one path of two: the other is skipped.
  const pending = nodes.filter(
    (node) => node.when !== undefined || node.parents.some((p) => nodes[p]!.catchEdges.length > 0),
  );
  for (const node of pending) node.mayBeSkipped = true;
  while (pending.length > 0) {
    const node = pending.pop()!;
    for (const child of node.children) {
      const next = nodes[child]!;
      if (next.mayBeSkipped) continue;
      next.mayBeSkipped = true;
      pending.push(next);
    }
  }
}
