/**
 * Submit-time validation of a workflow definition. It reports every problem at once (a user
 * fixing a 200-node DAG should not have to resubmit once per mistake), so each check works on
 * whatever part of the input is usable instead of stopping at the first schema error.
 */

import {
  fanInSchema,
  LIMITS,
  parseFanIn,
  type WorkflowDefinition,
  workflowDefinitionSchema,
} from "./definition.js";
import type { ProblemDetail } from "./errors.js";
import { cloneExact, stringifyExact } from "./exact-numbers.js";
import { checkExpressions, type ExpressionProblem } from "./expression-evaluation.js";
import { findExpressions } from "./expressions.js";
import { compileGraph, type WorkflowGraph } from "./graph.js";
import { PLACEMENT_LIMITS } from "./placement.js";
import { assignOp, detailCode, staticVarsProblems } from "./vars.js";
import * as z from "./zod.js";

/**
 * What validation needs of the task types: each one's params schema, and the names to suggest.
 * The engine's TaskRegistry is one; the domain names only this much of it.
 */
export interface TaskCatalog {
  /** `registrationParams`, when a task type has it, is what a new definition's params must pass. */
  get(type: string):
    | {
        params: z.core.$ZodType;
        registrationParams?: z.core.$ZodType;
        /** Run inside the engine, deferred, or a map: such types cannot be a map's task. */
        inline?: boolean;
        defer?: unknown;
        composite?: string;
      }
    | undefined;
  names(): string[];
}

export type ValidationResult =
  | { ok: true; definition: WorkflowDefinition; graph: WorkflowGraph }
  | { ok: false; problems: ProblemDetail[] };

/** What the deployment allows beyond the format's own limits, passed in by the engine. */
export interface DeploymentLimits {
  /**
   * The longest node `timeoutSeconds` the deployment's worker can give (engine/worker-time.ts: its
   * function timeout less the margin it keeps), and that function timeout, for the message.
   */
  nodeTimeout?: { maxSeconds: number; workerTimeoutSeconds: number };
}

export function validateDefinition(
  raw: unknown,
  tasks: TaskCatalog,
  limits: DeploymentLimits = {},
): ValidationResult {
  const problems: ProblemDetail[] = [];
  checkSize(raw, problems);
  if (limits.nodeTimeout) checkTimeouts(raw, limits.nodeTimeout, problems);

  const rawNodes = rawNodeList(raw);
  const nodes = rawNodes?.map(lenientNode) ?? [];
  const label = (index: number) => nodeLabel(nodes[index], index);

  const parsed = workflowDefinitionSchema.safeParse(raw);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) problems.push(...fromZodIssue(issue, [], label));
  }
  // An oversized node list is already reported; analysing it would only cost time.
  if (rawNodes && rawNodes.length <= LIMITS.maxNodes) {
    checkGraph(nodes, problems);
    checkCatchEdges(nodes, problems);
    checkTasks(nodes, tasks, problems);
    checkPlacement(nodes, tasks, problems);
    checkNodeExpressions(nodes, problems);
    checkAssign(nodes, problems);
    checkConcurrency(nodes, tasks, problems);
  }
  checkOnFailure(raw, nodes, tasks, problems);
  checkRateLimit(raw, problems);

  if (!parsed.success || problems.length > 0) return { ok: false, problems };
  return { ok: true, definition: parsed.data, graph: compileGraph(parsed.data) };
}

/**
 * A catch edge (`on: "failure"` or `"always"`) from a node under `onError: "continue"`: two ways to
 * say what its failure does, refused so that only one says it.
 */
function checkCatchEdges(nodes: readonly LooseNode[], problems: ProblemDetail[]): void {
  const byId = new Map(nodes.flatMap((node) => (node.id === undefined ? [] : [[node.id, node] as const])));
  for (const node of nodes) {
    for (const { name, position, on } of node.deps) {
      if (on !== "failure" && on !== "always") continue;
      if (byId.get(name)?.onError !== "continue") continue;
      problems.push({
        path: `nodes[${node.index}].dependsOn[${position}].on`,
        code: "catch_on_continue",
        message: `${nodeLabel(node, node.index)} catches the failure of "${name}" (on: "${on}"), but "${name}" has onError: "continue", whose dependants already go on from its failure: remove one of the two`,
      });
    }
  }
}

/**
 * Node timeouts (each node's, `defaults.timeoutSeconds` and the onFailure handler's) the deployment's worker cannot give: an
 * attempt never outlives its worker invocation, so such a node could never use its timeout. Values
 * the schema refuses anyway (not a whole number, over the format's 900) are left to it.
 */
function checkTimeouts(
  raw: unknown,
  limit: NonNullable<DeploymentLimits["nodeTimeout"]>,
  problems: ProblemDetail[],
): void {
  const { maxSeconds, workerTimeoutSeconds } = limit;
  const tooLong = (value: unknown): value is number =>
    typeof value === "number" &&
    Number.isInteger(value) &&
    value > maxSeconds &&
    value <= LIMITS.maxNodeTimeoutSeconds;
  const why = `the worker gives a node at most ${maxSeconds} s (its function timeout of ${workerTimeoutSeconds} s less ${workerTimeoutSeconds - maxSeconds} s kept for its last writes); lower it, or raise the worker's timeout (the stack's workerTimeout, WEFT_WORKER_TIMEOUT_SECONDS)`;
  if (!isRecord(raw)) return;
  const defaults = isRecord(raw.defaults) ? raw.defaults.timeoutSeconds : undefined;
  if (tooLong(defaults))
    problems.push({
      path: "defaults.timeoutSeconds",
      code: "timeout_exceeds_worker",
      message: `defaults.timeoutSeconds is ${defaults}, but ${why}`,
    });
  rawNodeList(raw)?.forEach((node, index) => {
    const value = isRecord(node) ? node.timeoutSeconds : undefined;
    // A node placed on external workers never runs in the Lambda worker (checkPlacement).
    if (!tooLong(value) || (isRecord(node) && node.runsOn !== undefined)) return;
    problems.push({
      path: `nodes[${index}].timeoutSeconds`,
      code: "timeout_exceeds_worker",
      message: `${nodeLabel(lenientNode(node, index), index)} has timeoutSeconds ${value}, but ${why}`,
    });
  });
  const handler = isRecord(raw.onFailure) ? raw.onFailure.timeoutSeconds : undefined;
  if (tooLong(handler))
    problems.push({
      path: "onFailure.timeoutSeconds",
      code: "timeout_exceeds_worker",
      message: `onFailure has timeoutSeconds ${handler}, but ${why}`,
    });
}

// ---------------------------------------------------------------------------------------------
// Lenient view of the nodes: what the graph checks can use even when the schema rejected a node.

interface LooseNode {
  index: number;
  /** Undefined when not a string: such a node takes no part in graph checks. */
  id: string | undefined;
  type: string | undefined;
  params: unknown;
  /** As given: checked as an expression when it is a string. */
  when: unknown;
  /**
   * The parents dependsOn names (ids, or edges' `node`) with their positions and edge kinds; other
   * entries are schema problems already.
   */
  deps: { name: string; position: number; on: string }[];
  /** As given. */
  onError: unknown;
  /** False when dependsOn is present but not an array: fan-in and entry checks would only guess. */
  depsUsable: boolean;
  hasDependsOn: boolean;
  fanIn: string | undefined;
  /** Placed on external workers (`runsOn` given, well-formed or not). */
  external: boolean;
  timeoutSeconds: unknown;
  heartbeatSeconds: unknown;
  /** As given. */
  assign: unknown;
  /** As given. */
  concurrency: unknown;
}

function rawNodeList(raw: unknown): unknown[] | undefined {
  if (!isRecord(raw)) return undefined;
  return Array.isArray(raw.nodes) ? raw.nodes : undefined;
}

function lenientNode(value: unknown, index: number): LooseNode {
  const node = isRecord(value) ? value : {};
  const dependsOn = node.dependsOn;
  const depsUsable = dependsOn === undefined || Array.isArray(dependsOn);
  const deps: LooseNode["deps"] = [];
  if (Array.isArray(dependsOn)) {
    dependsOn.forEach((entry, position) => {
      if (typeof entry === "string") deps.push({ name: entry, position, on: "success" });
      else if (isRecord(entry) && typeof entry.node === "string")
        deps.push({ name: entry.node, position, on: typeof entry.on === "string" ? entry.on : "success" });
    });
  }
  return {
    index,
    id: typeof node.id === "string" ? node.id : undefined,
    type: typeof node.type === "string" ? node.type : undefined,
    params: node.params,
    when: node.when,
    onError: node.onError,
    deps,
    depsUsable,
    // A malformed dependsOn still says "this node waits for something": it is not an entry.
    hasDependsOn: Array.isArray(dependsOn) ? dependsOn.length > 0 : dependsOn !== undefined,
    fanIn:
      typeof node.fanIn === "string" && fanInSchema.safeParse(node.fanIn).success ? node.fanIn : undefined,
    external: node.runsOn !== undefined,
    timeoutSeconds: node.timeoutSeconds,
    heartbeatSeconds: node.heartbeatSeconds,
    assign: node.assign,
    concurrency: node.concurrency,
  };
}

function nodeLabel(node: LooseNode | undefined, index: number): string {
  return node?.id !== undefined ? `node "${node.id}"` : `nodes[${index}]`;
}

// ---------------------------------------------------------------------------------------------
// Size and schema.

function checkSize(raw: unknown, problems: ProblemDetail[]): void {
  let bytes: number;
  try {
    bytes = new TextEncoder().encode(stringifyExact(raw) ?? "").length;
  } catch {
    problems.push({
      path: "",
      code: "invalid_schema",
      message: "the definition is not serializable as JSON",
    });
    return;
  }
  if (bytes > LIMITS.maxDefinitionBytes) {
    problems.push({
      path: "",
      code: "definition_too_large",
      message: `the definition is ${bytes} bytes of JSON; the limit is ${LIMITS.maxDefinitionBytes} bytes`,
    });
  }
}

/** `nodes[3].dependsOn[1]`; keys that are not identifiers are quoted: `params["a b"]`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`;
    else if (typeof key === "string" && /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key)) out += out ? `.${key}` : key;
    else out += `[${JSON.stringify(String(key))}]`;
  }
  return out;
}

/**
 * One problem per zod issue (per key for unknown keys). Codes are weft's own, not zod's, so the
 * API contract does not move with zod versions.
 */
function fromZodIssue(
  issue: z.core.$ZodIssue,
  prefix: readonly PropertyKey[],
  label: (index: number) => string,
): ProblemDetail[] {
  const path = [...prefix, ...issue.path];
  const where = describeLocation(path, label);
  if (issue.code === "unrecognized_keys") {
    return issue.keys.map((key) => ({
      path: formatPath([...path, key]),
      code: "unknown_field",
      message: `${where ? `${where}: ` : ""}unknown field "${key}"`,
    }));
  }
  const message = clarify(issue, path);
  return [
    {
      path: formatPath(path),
      code: issue.code === "too_big" ? "limit_exceeded" : "invalid_schema",
      message: where ? `${where}: ${message}` : message,
    },
  ];
}

/** A plainer message than the schema's where one helps: a node's `when` not written `{% … %}`. */
function clarify(issue: z.core.$ZodIssue, path: readonly PropertyKey[]): string {
  const when = path.length === 3 && path[0] === "nodes" && path[2] === "when";
  if (when && (issue.code === "invalid_format" || issue.code === "invalid_type")) {
    return 'must be a JSONata expression written as the whole string "{% … %}", e.g. "{% input.ready = true %}"';
  }
  return issue.message;
}

/** `node "load", field retry.maxAttempts` — names the node rather than only its position. */
function describeLocation(path: readonly PropertyKey[], label: (index: number) => string): string {
  const [first, second, ...rest] = path;
  if (first === "nodes" && typeof second === "number") {
    return rest.length > 0 ? `${label(second)}, field ${formatPath(rest)}` : label(second);
  }
  return path.length > 0 ? `field ${formatPath(path)}` : "";
}

// ---------------------------------------------------------------------------------------------
// Graph: ids, dependencies, fan-in, cycles, entries, reachability.

function checkGraph(nodes: LooseNode[], problems: ProblemDetail[]): void {
  const indexById = new Map<string, number>();
  for (const node of nodes) {
    if (node.id === undefined) continue;
    const first = indexById.get(node.id);
    if (first === undefined) {
      indexById.set(node.id, node.index);
    } else {
      problems.push({
        path: `nodes[${node.index}].id`,
        code: "duplicate_id",
        message: `node id "${node.id}" is used more than once (nodes[${first}] and nodes[${node.index}])`,
      });
    }
  }

  // Edges run parent → child; only known, distinct, non-self dependencies become edges.
  const parents: number[][] = nodes.map(() => []);
  const children: number[][] = nodes.map(() => []);
  // Nodes with a dependency that cannot be satisfied: they explain why others are unreachable.
  const badDeps = new Set<number>(nodes.filter((n) => !n.depsUsable).map((n) => n.index));
  for (const node of nodes) {
    if (node.id === undefined) continue;
    const label = nodeLabel(node, node.index);
    const seen = new Set<string>();
    for (const { name, position } of node.deps) {
      const path = `nodes[${node.index}].dependsOn[${position}]`;
      if (seen.has(name)) {
        problems.push({
          path,
          code: "duplicate_dependency",
          message: `${label} lists dependency "${name}" more than once`,
        });
        continue;
      }
      seen.add(name);
      const parent = indexById.get(name);
      if (name === node.id) {
        badDeps.add(node.index);
        problems.push({ path, code: "self_dependency", message: `${label} depends on itself` });
      } else if (parent === undefined) {
        badDeps.add(node.index);
        problems.push({
          path,
          code: "unknown_dependency",
          message: `${label} depends on "${name}", which is not a node of this workflow`,
        });
      } else {
        parents[node.index]!.push(parent);
        children[parent]!.push(node.index);
      }
    }
    checkFanIn(node, seen.size, problems);
  }

  const onCycle = checkCycles(nodes, parents, children, problems);
  for (const index of onCycle) badDeps.add(index);
  checkEntriesAndReachability(nodes, parents, children, onCycle, badDeps, problems);
}

function checkFanIn(node: LooseNode, dependencyCount: number, problems: ProblemDetail[]): void {
  if (node.fanIn === undefined || !node.depsUsable) return;
  const fanIn = parseFanIn(node.fanIn);
  const path = `nodes[${node.index}].fanIn`;
  const label = nodeLabel(node, node.index);
  if (dependencyCount === 0 && fanIn.kind !== "all") {
    problems.push({
      path,
      code: "fan_in_out_of_range",
      message: `${label} has fanIn "${node.fanIn}" but no dependencies; only "all" is allowed there`,
    });
  } else if (fanIn.kind === "count" && fanIn.n > dependencyCount) {
    problems.push({
      path,
      code: "fan_in_out_of_range",
      message: `${label} has fanIn "${node.fanIn}" but only ${dependencyCount} distinct dependencies`,
    });
  }
}

/**
 * Kahn's algorithm peels off every node that could ever run; what is left is on a cycle or
 * downstream of one. Strongly connected components of the leftovers are the cycles themselves:
 * one problem each, naming one concrete loop (and the whole component when it is larger).
 * Returns the indexes of nodes on a cycle.
 */
function checkCycles(
  nodes: LooseNode[],
  parents: number[][],
  children: number[][],
  problems: ProblemDetail[],
): Set<number> {
  const inDegree = parents.map((p) => p.length);
  const queue = nodes.filter((n) => n.id !== undefined && inDegree[n.index] === 0).map((n) => n.index);
  const left = new Set(nodes.filter((n) => n.id !== undefined).map((n) => n.index));
  for (let head = 0; head < queue.length; head++) {
    const current = queue[head]!;
    left.delete(current);
    for (const child of children[current]!) {
      inDegree[child]! -= 1;
      if (inDegree[child] === 0) queue.push(child);
    }
  }

  const onCycle = new Set<number>();
  if (left.size === 0) return onCycle;
  for (const component of stronglyConnected(left, children)) {
    // Self-loops never become edges, so a one-node component is only downstream of a cycle.
    if (component.length < 2) continue;
    for (const index of component) onCycle.add(index);
    problems.push(describeCycle(component, nodes, children));
  }
  return onCycle;
}

/** Tarjan's algorithm restricted to `within`. Recursion depth is bounded by LIMITS.maxNodes. */
function stronglyConnected(within: Set<number>, children: number[][]): number[][] {
  const order = new Map<number, number>();
  const low = new Map<number, number>();
  const stack: number[] = [];
  const onStack = new Set<number>();
  const components: number[][] = [];

  const visit = (v: number): void => {
    order.set(v, order.size);
    low.set(v, order.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of children[v]!) {
      if (!within.has(w)) continue;
      if (!order.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, order.get(w)!));
      }
    }
    if (low.get(v) === order.get(v)) {
      const component: number[] = [];
      let w: number;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      components.push(component.sort((a, b) => a - b));
    }
  };

  for (const v of [...within].sort((a, b) => a - b)) if (!order.has(v)) visit(v);
  return components.sort((a, b) => a[0]! - b[0]!);
}

/** Finds the shortest loop through the component's first node by breadth-first search. */
function describeCycle(component: number[], nodes: LooseNode[], children: number[][]): ProblemDetail {
  const members = new Set(component);
  const start = component[0]!;
  const previous = new Map<number, number>([[start, start]]);
  const queue = [start];
  let closing = start;
  search: for (let head = 0; head < queue.length; head++) {
    const current = queue[head]!;
    for (const child of children[current]!) {
      if (child === start) {
        closing = current;
        break search;
      }
      if (members.has(child) && !previous.has(child)) {
        previous.set(child, current);
        queue.push(child);
      }
    }
  }
  const loop = [closing];
  while (loop[0] !== start) loop.unshift(previous.get(loop[0]!)!);
  const id = (index: number) => nodes[index]!.id!;
  const startNode = nodes[start]!;
  const position = startNode.deps.find((dep) => dep.name === id(closing))?.position ?? 0;

  let message = `cycle: ${[...loop, start].map(id).join(" → ")} (each node depends on the one before it)`;
  if (component.length > loop.length) {
    message += `; these nodes all depend on each other in cycles: ${component.map(id).join(", ")}`;
  }
  return { path: `nodes[${start}].dependsOn[${position}]`, code: "cycle", message };
}

function checkEntriesAndReachability(
  nodes: LooseNode[],
  parents: number[][],
  children: number[][],
  onCycle: Set<number>,
  blocked: Set<number>,
  problems: ProblemDetail[],
): void {
  const named = nodes.filter((n) => n.id !== undefined);
  if (named.length === 0) return;
  const entries = named.filter((n) => !n.hasDependsOn).map((n) => n.index);
  if (entries.length === 0) {
    // Every node would then also be unreachable; saying so per node would only bury this.
    problems.push({
      path: "nodes",
      code: "no_entry_node",
      message: "no node is an entry node (one without dependsOn), so nothing could ever start",
    });
    return;
  }
  const reached = new Set(entries);
  const queue = [...entries];
  for (let head = 0; head < queue.length; head++) {
    for (const child of children[queue[head]!]!) {
      if (!reached.has(child)) {
        reached.add(child);
        queue.push(child);
      }
    }
  }
  for (const node of named) {
    // Nodes on a cycle are reported as the cycle; repeating them here adds nothing.
    if (reached.has(node.index) || onCycle.has(node.index)) continue;
    const label = nodeLabel(node, node.index);
    const causes = upstreamCauses(node.index, parents, blocked).map((i) => `"${nodes[i]!.id}"`);
    const because = blocked.has(node.index)
      ? "its own dependsOn is invalid (an unknown node, itself, or not a list)"
      : causes.length > 0
        ? `it waits, directly or through other nodes, on ${causes.join(", ")}, which can never complete`
        : "its dependencies never lead back to an entry node";
    problems.push({
      path: `nodes[${node.index}].dependsOn`,
      code: "unreachable",
      message: `${label} is not reachable from any entry node, so it could never run: ${because}`,
    });
  }
}

/** Ancestors of `start` that are themselves blocked (on a cycle or with a bad dependency). */
function upstreamCauses(start: number, parents: number[][], blocked: Set<number>): number[] {
  const seen = new Set([start]);
  const queue = [start];
  const causes: number[] = [];
  for (let head = 0; head < queue.length; head++) {
    for (const parent of parents[queue[head]!]!) {
      if (seen.has(parent)) continue;
      seen.add(parent);
      queue.push(parent);
      if (blocked.has(parent)) causes.push(parent);
    }
  }
  return causes.sort((a, b) => a - b);
}

// ---------------------------------------------------------------------------------------------
// Task types and params.

function checkTasks(nodes: LooseNode[], tasks: TaskCatalog, problems: ProblemDetail[]): void {
  for (const node of nodes) {
    if (node.type === undefined || node.type === "") continue;
    const label = nodeLabel(node, node.index);
    const task = tasks.get(node.type);
    // An external node's type is its workers' (their own task files): checked here only if known.
    if (!task && node.external) continue;
    if (!task) {
      problems.push(unknownTaskType(`nodes[${node.index}].type`, label, node.type, tasks));
      continue;
    }
    checkParams(["nodes", node.index], label, node.type, node.params, task, problems);
    if (task.composite === "map") checkMapTask(node, label, tasks, problems);
  }
}

/**
 * Placement (domain/placement.ts): only a handler of the worker's kind can run elsewhere — not a
 * type run inside the engine, deferred, or waiting (map, workflow, callback). A node longer than
 * the Lambda's limit must run on external workers and heartbeat; heartbeats shorter than its timeout.
 */
function checkPlacement(nodes: LooseNode[], tasks: TaskCatalog, problems: ProblemDetail[]): void {
  const { lambdaTimeoutSeconds } = PLACEMENT_LIMITS;
  for (const node of nodes) {
    const label = nodeLabel(node, node.index);
    const at = (field: string) => `nodes[${node.index}].${field}`;
    const timeout = typeof node.timeoutSeconds === "number" ? node.timeoutSeconds : undefined;
    const heartbeat = typeof node.heartbeatSeconds === "number" ? node.heartbeatSeconds : undefined;
    const task = node.type === undefined ? undefined : tasks.get(node.type);
    if (node.external && task && (task.inline || task.defer !== undefined || task.composite !== undefined))
      problems.push({
        path: at("runsOn"),
        code: "placement_not_allowed",
        message: `${label} is a "${node.type}", which runs inside the engine: it cannot run on external workers`,
      });
    if (!node.external && timeout !== undefined && timeout > lambdaTimeoutSeconds)
      problems.push({
        path: at("timeoutSeconds"),
        code: "timeout_exceeds_lambda",
        message: `${label} has timeoutSeconds ${timeout}, but the Lambda worker runs a node at most ${lambdaTimeoutSeconds} s; give it runsOn to run it on external workers`,
      });
    if (node.external && timeout !== undefined && timeout > lambdaTimeoutSeconds && heartbeat === undefined)
      problems.push({
        path: at("heartbeatSeconds"),
        code: "heartbeat_required",
        message: `${label} may run ${timeout} s, past the Lambda's ${lambdaTimeoutSeconds}: give it heartbeatSeconds, so a worker that dies is noticed before its timeout`,
      });
    if (!node.external && heartbeat !== undefined)
      problems.push({
        path: at("heartbeatSeconds"),
        code: "heartbeat_without_placement",
        message: `${label} has heartbeatSeconds but no runsOn: the Lambda worker heartbeats on its own`,
      });
    if (heartbeat !== undefined && timeout !== undefined && heartbeat >= timeout)
      problems.push({
        path: at("heartbeatSeconds"),
        code: "heartbeat_too_long",
        message: `${label} has heartbeatSeconds ${heartbeat}, not shorter than its timeoutSeconds ${timeout}`,
      });
  }
}

/**
 * A map's task: a known type that can run as an item (not run inside the engine, deferred or
 * itself a map), its params checked like a node's. Only `items` and the task's params may be
 * expressions: the rest says how the map runs and is read before anything is evaluated.
 */
function checkMapTask(node: LooseNode, label: string, tasks: TaskCatalog, problems: ProblemDetail[]): void {
  if (!isRecord(node.params)) return;
  const prefix = ["nodes", node.index, "params"];
  const { items: _items, task, workflow, ...rest } = node.params;
  for (const found of findExpressions({
    ...rest,
    task: isRecord(task) ? { ...task, params: undefined } : task,
    workflow: isRecord(workflow) ? { ...workflow, input: undefined } : workflow,
  }))
    problems.push({
      path: formatPath([...prefix, ...found.path]),
      code: "invalid_params",
      message: `${label}, ${formatPath(["params", ...found.path])}: only a map's \`items\`, its task's params and its workflow's input may be expressions`,
    });
  // A map over a workflow: its child's name and version are checked like a `workflow` node's (schema).
  if (!isRecord(task) || typeof task.type !== "string" || task.type === "") return;
  const inner = tasks.get(task.type);
  if (!inner) {
    problems.push(unknownTaskType(formatPath([...prefix, "task", "type"]), label, task.type, tasks));
    return;
  }
  if (inner.inline || inner.defer || inner.composite) {
    problems.push({
      path: formatPath([...prefix, "task", "type"]),
      code: "invalid_params",
      message: `${label}: a map cannot run task type "${task.type}" per item (it runs inside the engine, waits, or is a map itself)`,
    });
    return;
  }
  checkParams([...prefix, "task"], label, task.type, task.params, inner, problems);
}

function unknownTaskType(path: string, label: string, type: string, tasks: TaskCatalog): ProblemDetail {
  const known = tasks.names();
  return {
    path,
    code: "unknown_task_type",
    message: `${label} has unknown task type "${type}"; ${
      known.length > 0 ? `known types: ${known.join(", ")}` : "no task types are registered"
    }`,
  };
}

type CatalogEntry = NonNullable<ReturnType<TaskCatalog["get"]>>;

/**
 * A node's (or the onFailure handler's) params against its task type's schema. Where params hold
 * expressions, the schema still applies, but its issues at or under an expression are dropped: that
 * value is only known at run time (when the task type parses its params again).
 */
function checkParams(
  prefix: readonly PropertyKey[],
  label: string,
  type: string,
  params: unknown,
  task: CatalogEntry,
  problems: ProblemDetail[],
): void {
  const expressionPaths = findExpressions(params).map((found) => found.path);
  checkExpressionLengths(prefix, label, params, problems);
  if (expressionPaths.some((path) => path.length === 0)) return;
  const result = parseParams(task.registrationParams ?? task.params, params, expressionPaths);
  if (result.success) return;
  for (const issue of result.error.issues) {
    if (isUnderExpression(issue.path, expressionPaths) && !checkedUnderExpressions(issue)) continue;
    const path = [...prefix, "params", ...issue.path];
    const keys = issue.code === "unrecognized_keys" ? issue.keys.map((key) => [...path, key]) : [path];
    for (const keyPath of keys) {
      const field = formatPath(keyPath.slice(prefix.length));
      const detail =
        issue.code === "unrecognized_keys" ? `unknown field "${String(keyPath.at(-1))}"` : issue.message;
      problems.push({
        path: formatPath(keyPath),
        code: ownDetailCode(issue) ?? "invalid_params",
        message: `${label}, ${field} (task type "${type}"): ${detail}`,
      });
    }
  }
}

/**
 * The schema's parse of params. A refinement may throw on an expression's text where it expects a
 * value (`new URL("{% … %}")`): the params are then parsed again without their expressions, whose
 * issues would be dropped anyway.
 */
function parseParams(
  schema: z.core.$ZodType,
  params: unknown,
  expressionPaths: readonly (string | number)[][],
) {
  try {
    return z.ownSafeParse(schema, params);
  } catch (error) {
    if (expressionPaths.length === 0) throw error;
    return z.ownSafeParse(schema, withoutExpressions(params, expressionPaths));
  }
}

/** A copy of params with each expression removed (an object's key dropped, an array's item undefined). */
function withoutExpressions(params: unknown, expressionPaths: readonly (string | number)[][]): unknown {
  const copy = cloneExact(params);
  for (const path of expressionPaths) {
    let parent = copy as Record<string | number, unknown>;
    for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
    const last = path.at(-1)!;
    if (Array.isArray(parent)) parent[last as number] = undefined;
    else delete parent[last];
  }
  return copy;
}

/** A task type's refusal with a code of its own (a `vars` limit's: domain/vars.ts), else undefined. */
function ownDetailCode(issue: z.core.$ZodIssue): string | undefined {
  const code = issue.code === "custom" ? issue.params?.detailCode : undefined;
  return typeof code === "string" ? code : undefined;
}

/** A task type's rule that holds even under an expression (CHECKED_UNDER_EXPRESSIONS in expression-rules.ts). */
function checkedUnderExpressions(issue: z.core.$ZodIssue): boolean {
  return issue.code === "custom" && issue.params?.checkedUnderExpressions === true;
}

/** True when `path` (a zod issue's, within params) is an expression's path or lies under one. */
export function isUnderExpression(
  path: readonly PropertyKey[],
  expressionPaths: readonly (readonly PropertyKey[])[],
): boolean {
  return expressionPaths.some(
    (expression) => expression.length <= path.length && expression.every((key, i) => path[i] === key),
  );
}

/** Expressions in params longer than the format's limit (the schema bounds `when` itself). */
function checkExpressionLengths(
  prefix: readonly PropertyKey[],
  label: string,
  params: unknown,
  problems: ProblemDetail[],
): void {
  for (const { path, expression } of findExpressions(params)) {
    if (expression.length <= LIMITS.maxExpressionLength) continue;
    problems.push({
      path: formatPath([...prefix, "params", ...path]),
      code: "limit_exceeded",
      message: `${label}, ${formatPath(["params", ...path])}: an expression must be at most ${LIMITS.maxExpressionLength} characters; this one has ${expression.length}`,
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Expressions (`when`, and `{% … %}` strings in params): compiled, and their names checked.

function checkNodeExpressions(nodes: LooseNode[], problems: ProblemDetail[]): void {
  for (const node of nodes) {
    const label = nodeLabel(node, node.index);
    const context = { deps: node.deps.map((dep) => dep.name) };
    const prefix = `nodes[${node.index}]`;
    // A map's task params are evaluated per item, with `$item` and `$index`.
    // A map's per-item parts (its task's params, its workflow's input) see `$item` and `$index`.
    const perItem: Array<{ key: "task" | "workflow"; field: "params" | "input" }> = [
      { key: "task", field: "params" },
      { key: "workflow", field: "input" },
    ];
    const map = node.type === "map" && isRecord(node.params) ? node.params : undefined;
    const outer = map ? { ...map } : node.params;
    for (const { key, field } of perItem) {
      const part = map?.[key];
      if (!map || !isRecord(part)) continue;
      (outer as Record<string, unknown>)[key] = { ...part, [field]: undefined };
      addExpressionProblems(
        checkExpressions(part[field], `${prefix}.params.${key}.${field}`, { ...context, allowItem: true }),
        prefix,
        label,
        problems,
      );
    }
    addExpressionProblems(checkExpressions(outer, `${prefix}.params`, context), prefix, label, problems);
    if (typeof node.when === "string") {
      addExpressionProblems(checkExpressions(node.when, `${prefix}.when`, context), prefix, label, problems);
    }
  }
}

function addExpressionProblems(
  found: readonly ExpressionProblem[],
  prefix: string,
  label: string,
  problems: ProblemDetail[],
): void {
  for (const problem of found) {
    const field = problem.path.startsWith(`${prefix}.`)
      ? problem.path.slice(prefix.length + 1)
      : problem.path;
    const at = problem.position === undefined ? "" : ` (at position ${problem.position})`;
    problems.push({
      path: problem.path,
      code: problem.code,
      message: `${label}, ${field}${at}: ${problem.message}`,
    });
  }
}

// ---------------------------------------------------------------------------------------------
// `assign` (domain/vars.ts): its expressions (which also see `$output`), and the limits of what is
// known before it runs, each refused with its own code.

function checkAssign(nodes: LooseNode[], problems: ProblemDetail[]): void {
  for (const node of nodes) {
    if (!isRecord(node.assign)) continue;
    const label = nodeLabel(node, node.index);
    const prefix = `nodes[${node.index}]`;
    addExpressionProblems(
      checkExpressions(node.assign, `${prefix}.assign`, { deps: node.deps.map((dep) => dep.name) }),
      prefix,
      label,
      problems,
    );
    for (const problem of staticVarsProblems(assignOp(node.assign))) {
      const field = problem.field.replace(/^values/, "assign");
      problems.push({
        path: `${prefix}.${field}`,
        code: detailCode(problem.code),
        message: `${label}, ${problem.message.replace(/^values/, "assign")}`,
      });
    }
  }
}

// ---------------------------------------------------------------------------------------------
// `concurrency` (domain/slots.ts): only on nodes a handler runs in the worker (the engine's own
// types hold no worker while they wait, and external workers have their pools' limits); a global
// limit names its key; key expressions compile. Its shape is the schema's.

function checkConcurrency(nodes: LooseNode[], tasks: TaskCatalog, problems: ProblemDetail[]): void {
  for (const node of nodes) {
    if (node.concurrency === undefined) continue;
    const label = nodeLabel(node, node.index);
    const prefix = `nodes[${node.index}]`;
    const task = node.type === undefined ? undefined : tasks.get(node.type);
    if (task && (task.inline || task.defer !== undefined || task.composite !== undefined))
      problems.push({
        path: `${prefix}.concurrency`,
        code: "concurrency_not_applicable",
        message: `${label}: concurrency limits nodes a handler runs; type "${node.type}" is run by the engine itself, holding no worker while it waits`,
      });
    if (node.external)
      problems.push({
        path: `${prefix}.concurrency`,
        code: "concurrency_not_applicable",
        message: `${label}: concurrency does not apply to a node on external workers (runsOn): their pools and maxParallel limit them`,
      });
    const limits = Array.isArray(node.concurrency) ? node.concurrency : [node.concurrency];
    limits.forEach((limit, i) => {
      if (!isRecord(limit)) return;
      const at = Array.isArray(node.concurrency) ? `${prefix}.concurrency[${i}]` : `${prefix}.concurrency`;
      if (limit.scope === "global" && limit.key === undefined)
        problems.push({
          path: `${at}.key`,
          code: "concurrency_key_required",
          message: `${label}: a global concurrency limit is shared by the nodes naming the same key, so it needs a key`,
        });
      if (typeof limit.key === "string")
        addExpressionProblems(
          checkExpressions(limit.key, `${at}.key`, {
            deps: node.deps.map((dep) => dep.name),
          }),
          prefix,
          label,
          problems,
        );
    });
  }
}

// ---------------------------------------------------------------------------------------------
// The workflow's start `rateLimit` (domain/rate.ts): its key, an expression over the start's input.

function checkRateLimit(raw: unknown, problems: ProblemDetail[]): void {
  if (!isRecord(raw) || !isRecord(raw.rateLimit) || typeof raw.rateLimit.key !== "string") return;
  for (const problem of checkExpressions(raw.rateLimit.key, "rateLimit.key", { deps: [] })) {
    const at = problem.position === undefined ? "" : ` (at position ${problem.position})`;
    problems.push({
      path: problem.path,
      code: problem.code,
      message: `rateLimit.key${at}: ${problem.message}`,
    });
  }
}

// ---------------------------------------------------------------------------------------------
// The onFailure handler: a known task type, its params, its expressions (which see every node's
// output and the error). Its shape is the schema's; its timeout is checked with the nodes'.

function checkOnFailure(
  raw: unknown,
  nodes: LooseNode[],
  tasks: TaskCatalog,
  problems: ProblemDetail[],
): void {
  if (!isRecord(raw) || !isRecord(raw.onFailure)) return;
  const handler = raw.onFailure;
  const label = "onFailure";
  if (typeof handler.type === "string" && handler.type !== "") {
    const task = tasks.get(handler.type);
    if (task) checkParams(["onFailure"], label, handler.type, handler.params, task, problems);
    else problems.push(unknownTaskType("onFailure.type", label, handler.type, tasks));
  }
  const ids = [...new Set(nodes.flatMap((node) => (node.id === undefined ? [] : [node.id])))];
  addExpressionProblems(
    checkExpressions(handler.params, "onFailure.params", { deps: ids, allowError: true }),
    "onFailure",
    label,
    problems,
  );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
