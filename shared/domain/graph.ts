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
import type { RunsOn } from "./placement.js";

export interface ResolvedRetry {
  maxAttempts: number;
  initialSeconds: number;
  maxSeconds: number;
  multiplier: number;
  jitter: "full" | "none";
  /** Error names that fail the node at once, whatever the attempt count. */
  nonRetryable: string[];
}

export interface GraphNode {
  /** Position in `definition.nodes`; the engine stores dependency sets as these indexes. */
  index: number;
  id: string;
  type: string;
  params: unknown;
  /** In `dependsOn` order. */
  parents: number[];
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

export const DEFAULT_RETRY: Readonly<ResolvedRetry> = Object.freeze({
  maxAttempts: 3,
  initialSeconds: 1,
  maxSeconds: 300,
  multiplier: 2,
  jitter: "full",
  nonRetryable: [],
});

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
 * Node fields win over workflow defaults, field by field (backoff included), over `builtIn` (the
 * built-in defaults, with the deployment's attempts).
 */
export function resolveRetry(
  defaults: RetryDefinition | undefined,
  node: RetryDefinition | undefined,
  builtIn: Readonly<ResolvedRetry> = DEFAULT_RETRY,
): ResolvedRetry {
  const pick = <K extends keyof ResolvedRetry>(
    key: K,
    fromDef: (r: RetryDefinition) => ResolvedRetry[K] | undefined,
  ): ResolvedRetry[K] => {
    const fromNode = node ? fromDef(node) : undefined;
    if (fromNode !== undefined) return fromNode;
    const fromDefaults = defaults ? fromDef(defaults) : undefined;
    return fromDefaults !== undefined ? fromDefaults : builtIn[key];
  };
  return {
    maxAttempts: pick("maxAttempts", (r) => r.maxAttempts),
    initialSeconds: pick("initialSeconds", (r) => r.backoff?.initialSeconds),
    maxSeconds: pick("maxSeconds", (r) => r.backoff?.maxSeconds),
    multiplier: pick("multiplier", (r) => r.backoff?.multiplier),
    jitter: pick("jitter", (r) => r.backoff?.jitter),
    // Copied so a caller mutating the policy cannot change the definition or the frozen defaults.
    nonRetryable: [...pick("nonRetryable", (r) => r.nonRetryable)],
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
    options.defaultMaxAttempts === undefined
      ? DEFAULT_RETRY
      : { ...DEFAULT_RETRY, maxAttempts: options.defaultMaxAttempts };
  const nodes: GraphNode[] = definition.nodes.map((node, index) => ({
    index,
    id: node.id,
    type: node.type,
    params: node.params,
    parents: (node.dependsOn ?? []).map((dep) => {
      const parent = indexById.get(dep);
      if (parent === undefined)
        throw new Error(`compileGraph: node "${node.id}" depends on unknown "${dep}"`);
      return parent;
    }),
    children: [],
    fanIn: parseFanIn(node.fanIn),
    retry: resolveRetry(definition.defaults?.retry, node.retry, builtInRetry),
    timeoutSeconds: node.timeoutSeconds ?? defaultTimeout,
    ...(node.when !== undefined ? { when: node.when } : {}),
    ...(node.runsOn !== undefined ? { runsOn: node.runsOn } : {}),
    ...(node.heartbeatSeconds !== undefined ? { heartbeatSeconds: node.heartbeatSeconds } : {}),
    onError: node.onError ?? "fail",
    mayBeSkipped: false,
  }));

  // Visiting children in index order keeps every children list sorted without a sort.
  for (const node of nodes) {
    for (const parent of node.parents) nodes[parent]!.children.push(node.index);
  }
  markSkippable(nodes);

  const handler = definition.onFailure;
  const onFailure: GraphNode | undefined = handler && {
    index: nodes.length,
    id: ON_FAILURE_NODE_ID,
    type: handler.type,
    params: handler.params,
    parents: [],
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

/** Sets `mayBeSkipped`: nodes with a `when`, and everything downstream of one (the graph is acyclic). */
function markSkippable(nodes: GraphNode[]): void {
  const pending = nodes.filter((node) => node.when !== undefined);
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
