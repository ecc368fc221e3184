/**
 * A plain reference evaluator: how each node must end and what its output must be, computed
 * straight from the definition with no engine involved. `pass` → its value (or the input), `merge`
 * → the outputs of the dependencies it saw, `noop` → null, `sleep` → {sleptMs}, flaky `fail` →
 * {attempt} (or a failure for good when its attempts run out first, or `retryable: false`),
 * `wait` → {waitedSeconds}.
 *
 * Flow control, evaluated with the `jsonata` package itself (not the engine's expressions module):
 *  - a dependency is done (COMPLETED, or FAILED under `onError: "continue"`), skipped, or bad
 *    (FAILED under the default `onError: "fail"`, or CANCELLED);
 *  - the deps a node sees are its done inputs — for `all` every done parent, for `any`/`count:N`
 *    the parents recorded when it became ready (its okDeps, a fact of the run) — completed ones
 *    with their output, continue-failed ones as {error: {name, message}}, skipped ones absent;
 *  - `all`: a bad parent cancels it; every parent skipped skips it; otherwise it is ready.
 *    `any`/`count:N`: ready once N parents are done; else skipped when skips alone make it
 *    unmeetable and cancelled when a parent is bad (either, when both could have come first);
 *  - once ready, its `when` ({input, deps, execution}) must give true to run: false or undefined
 *    skip it, any other value (or an evaluation error) fails it with ExpressionError;
 *  - `{% %}` strings anywhere in its params are replaced by their values (an error: ExpressionError).
 *
 * What the definition cannot tell comes from the run as facts: which deps an `any`/`count:N` node
 * saw, the attempt a flaky node passed on when attempts were lost, and nodes that ended for reasons
 * outside the definition (a dead letter, attempts lost to crashes, a cancellation, a redrive): those
 * ends are taken as they are, and the nodes downstream of them judged from them.
 *
 * A `map` node, once ready and its `when` true: its `items` (a literal array, or an expression over
 * {input, deps, execution}) must give an array (an evaluation error: ExpressionError; anything else:
 * InvalidMapItems). Each item `i` of value `v` is its task run with params mapped over the map's
 * scope and the bindings `$item` = v, `$index` = i, under the items' retry policy (the map's
 * `retry` param over the map node's): its end and output as for a node of that type. An item's end
 * outside the definition (lost attempts, a cancellation) is taken from the run (its id
 * `<map>[<attempt>.<i>]`, the map's last attempt). More failed (or cancelled) items than tolerated
 * (`toleratedFailureCount`, ⌊`toleratedFailurePercentage`/100 · items⌋, the smaller of the two when
 * both are given, else none) fail the map with MapFailed; otherwise it completes with its items'
 * outputs in item order, a failed item as {error: {name, message}}.
 *
 * A `workflow` node (or a map's item over a workflow): its params mapped as any node's, `input`
 * the child's input; at the depth limit it fails with WorkflowDepthExceeded. Otherwise it ends as
 * its last attempt's child did (a fact of the run): the child's output when it SUCCEEDED,
 * ChildWorkflowFailed when it FAILED, ChildWorkflowCancelled when it was CANCELLED.
 *
 * A node placed on external workers (`runsOn`) ends as a node of its type does in the Lambda
 * worker: the same handler runs. A `callback` node ends as its settler made its last attempt end (a
 * fact of the run: the settler records what it sent, the audit which call ended the attempt):
 * COMPLETED with the output the settler sent, FAILED with the settler's error; an attempt no
 * settlement ended times out: FAILED with CallbackTimedOut.
 */
import jsonata from "jsonata";
import type {
  NodeDefinition,
  RetryDefinition,
  RetryPolicyDefinition,
  WorkflowDefinition,
} from "../shared/domain/definition.js";
import { dependencyIds } from "../shared/domain/edges.js";
import { encodeJson } from "../shared/domain/json.js";
import type { NodeStatus } from "../shared/domain/records.js";
import { CatchRules } from "./catch-rules.js";

export interface ReferenceFacts {
  input: unknown;
  /** The `execution` an expression sees (default: id "", the definition's name, version 1). */
  execution?: { id: string; workflow: string; version: number };
  /** Ids of the dependencies whose outputs the node saw (its okDeps when it became ready). */
  okDepsOf(nodeId: string): readonly string[];
  /** The attempt on which a flaky `fail` node passed (times + 1 unless attempts were lost to crashes). */
  passingAttemptOf(nodeId: string, times: number): number;
  /**
   * How the node ended in the run (undefined while it had not ended, or had no record), and
   * whether its handler ran in its last life: the ends the reference takes as given (see settle).
   */
  endedAs?(nodeId: string):
    | {
        status: NodeStatus;
        error?: { name: string; message: string };
        handlerRan?: boolean;
        attempt?: number;
      }
    | undefined;
  /** A map node's last attempt in the run, which names its items (default 1). */
  mapAttemptOf?(mapId: string): number;
  /** Some of the node's (or item's) attempts were lost to crashes or expired leases, not its handler. */
  attemptsLost?(nodeId: string): boolean;
  /**
   * The child execution a `workflow` node's (or item's) last attempt started, as it ended (its
   * output resolved): what the node ends as. Undefined when that attempt started none.
   */
  childOf?(nodeId: string): ChildEnd | undefined;
  /**
   * A `loop` node's last attempt as the run left it (sim/loop-invariants.ts reads it from the
   * store and checks it there): how many iterations it started and how the last one ended.
   * Undefined when that attempt started none.
   */
  loopOf?(nodeId: string): LoopEnd | undefined;
  /** How deep the execution is in children (0: started by a client); at the limit a child is refused. */
  depth?: number;
  /**
   * The node's (or item's) last attempt was refused by its root's fan-out budget (a fact of the run,
   * the refusal checked against the budget by sim/fan-out-invariants.ts): it fails with
   * FanOutLimitExceeded.
   */
  fanOutRefused?(nodeId: string): boolean;
  /**
   * A `callback` node's last attempt as its settler ended it: completed with the output it sent,
   * or failed with its error. Undefined when no settlement ended it (it timed out, or never waited).
   */
  callbackOf?(nodeId: string): CallbackEnd | undefined;
  /**
   * A `vars` node's output as the run recorded it (its operation's result: an `incr`'s value
   * depends on the order the run applied them in); sim/vars-invariants.ts checks it against the
   * execution's variables.
   */
  recordedOutputOf?(nodeId: string): unknown;
}

export type CallbackEnd =
  | { status: "COMPLETED"; output: unknown }
  | { status: "FAILED"; error: { name: string; message: string } };

export interface ChildEnd {
  executionId: string;
  status: string;
  output?: unknown;
}

/** A `loop` node's last attempt: its iterations (children 1..n) and the last one's end. */
export interface LoopEnd {
  iterations: number;
  last: ChildEnd;
}

/** How deep executions nest (the engine's CHILD_LIMITS.maxDepth, restated as the checker's own). */
const MAX_DEPTH = 8;

export type ReferenceStatus = "COMPLETED" | "FAILED" | "SKIPPED" | "CANCELLED";

export interface NodeError {
  name: string;
  /** Unknown for an ExpressionError the engine words (the run's record tells it). */
  message?: string;
}

export interface ReferenceNode {
  id: string;
  onError: "fail" | "continue";
  /** How it must end, given how its parents ended. */
  status: ReferenceStatus;
  /** Other ends timing may give it (an `any`/`count:N` fan-in both skips and failures made unmeetable). */
  alternatives: ReferenceStatus[];
  /** Why it ends so, for messages. */
  why: string;
  /** The deps it saw, once ready (its `when` and params were evaluated over them). */
  deps?: Record<string, unknown>;
  /** Those of its deps that are continue-failed dependencies, seen as {error}. */
  continued: string[];
  /** What its `when` gave (undefined: none, or no evaluation). */
  whenValue?: unknown;
  /** COMPLETED: its output; also, for a node that should not run, what it would output if it did. */
  output?: unknown;
  /** FAILED: its error (the run's, once known; else the predicted one). */
  error?: NodeError;
  /** The definition alone says it fails for good once run (a failing handler, an ExpressionError). */
  failsForGood: boolean;
  /** A map node that got its items: each item's end, and what they decide for the map. */
  map?: ReferenceMap;
  /** A `workflow` node: the input its params give its child (every attempt's child gets the same). */
  childInput?: unknown;
}

export interface ReferenceItem {
  index: number;
  /** `<map>[<attempt>.<index>]`. */
  id: string;
  /** Its end: the handler's (predicted), or the run's where it ended otherwise. */
  status: ReferenceStatus;
  /** What its handler gives it (before the run's end is taken). */
  predicted: "COMPLETED" | "FAILED";
  /** COMPLETED (or predicted so): its output. */
  output?: unknown;
  error?: NodeError;
  /** The run ended it (its record is terminal). */
  ended: boolean;
  why: string;
  /** A map over a workflow: the input its params give the item's child. */
  childInput?: unknown;
}

export interface ReferenceMap {
  /** The map attempt whose items these are. */
  attempt: number;
  items: ReferenceItem[];
  lanes: number;
  tolerated: number;
  /** Items failed or cancelled (the run's ends, else the predicted ones). */
  failures: number;
  /** COMPLETED with `output` when failures ≤ tolerated, else FAILED (MapFailed). */
  decided: "COMPLETED" | "FAILED";
  /** The item retry policy's attempts. */
  maxAttempts: number;
}

export interface Reference {
  nodes: Map<string, ReferenceNode>;
  /** SUCCEEDED unless a node fails for good under `onError: "fail"` (or is cancelled for it). */
  status: "SUCCEEDED" | "FAILED";
  /** {sink: output} over the COMPLETED sinks, continue-failed sinks as {error}, skipped ones absent. */
  output: Record<string, unknown>;
}

const EXPRESSION = /^\{%([\s\S]*)%\}$/;
/** A node's attempts when neither it nor the workflow's defaults say (the engine's built-in policy). */
const DEFAULT_MAX_ATTEMPTS = 3;
/** A map's lanes when it gives no maxConcurrency. */
const DEFAULT_MAX_CONCURRENCY = 40;
const NODE_ENDED = new Set<NodeStatus>(["COMPLETED", "FAILED", "CANCELLED", "SKIPPED"]);

/** How many failed items a map tolerates: the smaller limit when both are given, none when neither. */
export function toleratedOf(
  params: { toleratedFailureCount?: number; toleratedFailurePercentage?: number },
  items: number,
): number {
  const limits: number[] = [];
  if (params.toleratedFailureCount !== undefined) limits.push(params.toleratedFailureCount);
  if (params.toleratedFailurePercentage !== undefined)
    limits.push(Math.floor((params.toleratedFailurePercentage * items) / 100));
  return limits.length === 0 ? 0 : Math.min(...limits);
}

/** The value a node's dependants see for it when it is done: its output, or {error} when it failed. */
export function seenAs(node: ReferenceNode): unknown {
  if (node.status === "FAILED") return { error: { name: node.error?.name, message: node.error?.message } };
  return node.output ?? null;
}

/** What a node whose catch edge took `node`'s failure sees for it: its error with its attempt. */
export function caughtSeenAs(node: ReferenceNode, attempt: number | undefined): unknown {
  return { error: { name: node.error?.name, message: node.error?.message, attempt } };
}

/** What every node must end as, and the execution's expected end. */
export async function referenceRun(
  definition: WorkflowDefinition,
  facts: ReferenceFacts,
): Promise<Reference> {
  const byId = new Map(definition.nodes.map((n) => [n.id, n]));
  const memo = new Map<string, Promise<ReferenceNode>>();
  const execution = facts.execution ?? { id: "", workflow: definition.name, version: 1 };
  const evaluate = (id: string): Promise<ReferenceNode> => {
    let result = memo.get(id);
    if (!result) {
      const node = byId.get(id);
      if (!node) throw new Error(`reference: unknown node ${id}`);
      result = evaluateNode(node);
      memo.set(id, result);
    }
    return result;
  };

  const catches = new CatchRules(definition);
  /** How a node's end counts for one dependant (catch edges: sim/catch-rules.ts). */
  const outcomeOf = (n: ReferenceNode, childId: string): "done" | "skipped" | "bad" => {
    const end = catches.endFor(n.id, childId, n.status, n.error?.name);
    return end === "open" ? "bad" : end;
  };

  const evaluateNode = async (node: NodeDefinition): Promise<ReferenceNode> => {
    const parentIds = dependencyIds(node);
    const parents: ReferenceNode[] = [];
    for (const p of parentIds) parents.push(await evaluate(p));
    const base: ReferenceNode = {
      id: node.id,
      onError: node.onError ?? "fail",
      status: "CANCELLED",
      alternatives: [],
      why: "",
      continued: [],
      failsForGood: false,
    };
    const done = parents.filter((p) => outcomeOf(p, node.id) === "done");
    const skipped = parents.filter((p) => outcomeOf(p, node.id) === "skipped");
    const bad = parents.filter((p) => outcomeOf(p, node.id) === "bad");
    const fanIn = node.fanIn ?? "all";
    let inputs: string[];
    if (parents.length === 0) inputs = [];
    else if (fanIn === "all" || parents.length === 1) {
      if (bad.length > 0)
        return settle(node, {
          ...base,
          status: "CANCELLED",
          why: `dependency ${bad[0]!.id} ended ${bad[0]!.status}`,
        });
      if (skipped.length === parents.length)
        return settle(node, { ...base, status: "SKIPPED", why: "every dependency was skipped" });
      inputs = done.map((p) => p.id);
    } else {
      const required = fanIn === "any" ? 1 : Number(fanIn.slice("count:".length));
      if (done.length >= required) inputs = [...facts.okDepsOf(node.id)];
      else {
        // Unmeetable once parents − skipped < required with no bad parent yet: skipped; a bad
        // parent arriving first: cancelled.
        const bySkips = parents.length - skipped.length < required;
        const why = `${done.length} of ${required} dependencies done (${skipped.length} skipped, ${bad.length} bad)`;
        if (bad.length === 0) return settle(node, { ...base, status: "SKIPPED", why });
        return settle(node, {
          ...base,
          status: "CANCELLED",
          alternatives: bySkips ? ["SKIPPED"] : [],
          why,
        });
      }
    }

    // Ready: the deps it saw, then its `when`, its params, its handler.
    const parentById = new Map(parents.map((p) => [p.id, p]));
    const deps: Record<string, unknown> = {};
    const continued: string[] = [];
    for (const dep of inputs) {
      const parent = parentById.get(dep) ?? (await evaluate(dep));
      // A failure this node's catch edge took: seen with its attempt (the run's).
      deps[dep] =
        parent.status === "FAILED" && parent.onError !== "continue"
          ? caughtSeenAs(parent, facts.endedAs?.(dep)?.attempt)
          : seenAs(parent);
      if (parent.status === "FAILED") continued.push(dep);
    }
    const ready: ReferenceNode = { ...base, deps, continued };
    const scope = { input: facts.input, deps, execution };
    if (node.when !== undefined) {
      const when = await evaluateExpression(node.when, scope);
      if ("error" in when) return settle(node, expressionFailure(ready, `its when failed: ${when.error}`));
      ready.whenValue = when.value;
      if (when.value === false || when.value === undefined)
        return settle(node, {
          ...ready,
          status: "SKIPPED",
          why: `its when gave ${when.value === undefined ? "undefined" : "false"}`,
        });
      if (when.value !== true)
        return settle(node, expressionFailure(ready, `its when gave ${JSON.stringify(when.value)}`));
    }
    if (node.type === "map") return settle(node, await runMap(node, ready, scope));
    // A loop's params are evaluated per iteration (with $iteration and $previous), not here.
    if (node.type === "loop") return settle(node, loopRun(ready, node.params));
    const params = await resolveParams(node.params, scope);
    if ("error" in params)
      return settle(node, expressionFailure(ready, `its params failed: ${params.error}`));
    return settle(node, run(node, ready, (params.value ?? {}) as Record<string, unknown>));
  };

  /** A map node's items, their ends, and the map's end and output. */
  const runMap = async (
    node: NodeDefinition,
    ready: ReferenceNode,
    scope: Record<string, unknown>,
  ): Promise<ReferenceNode> => {
    const params = (node.params ?? {}) as {
      items?: unknown;
      task?: { type: string; params?: unknown };
      workflow?: unknown;
      maxConcurrency?: number;
      toleratedFailureCount?: number;
      toleratedFailurePercentage?: number;
      retry?: { maxAttempts?: number };
    };
    const list = await resolveParams(params.items, scope);
    if ("error" in list) return expressionFailure(ready, `its items failed: ${list.error}`);
    if (!Array.isArray(list.value))
      return {
        ...ready,
        status: "FAILED",
        why: `its items are ${list.value === undefined ? "undefined" : JSON.stringify(list.value)?.slice(0, 40)}, not an array`,
        error: { name: "InvalidMapItems" },
        failsForGood: true,
      };
    const values = list.value as unknown[];
    // Its lanes refused by the fan-out budget (a fact of the run): it fails before any item runs.
    if (values.length > 0 && facts.fanOutRefused?.(node.id))
      return {
        ...ready,
        status: "FAILED",
        why: "its lanes were refused by the fan-out budget",
        error: { name: "FanOutLimitExceeded" },
        failsForGood: true,
      };
    // A map over a workflow runs a `workflow` item per value, its params the map's `workflow`.
    const task = params.workflow
      ? { type: "workflow", params: params.workflow }
      : (params.task ?? { type: "noop" });
    const maxAttempts =
      params.retry?.maxAttempts ??
      policyOf(node.retry)?.maxAttempts ??
      policyOf(definition.defaults?.retry)?.maxAttempts ??
      DEFAULT_MAX_ATTEMPTS;
    const attempt = facts.mapAttemptOf?.(node.id) ?? 1;
    const items: ReferenceItem[] = [];
    for (const [index, value] of values.entries()) {
      const id = `${node.id}[${attempt}.${index}]`;
      const bindings = { item: value ?? null, index };
      const resolved = await resolveParams(task.params, scope, bindings);
      const end =
        "error" in resolved
          ? {
              status: "FAILED" as const,
              why: `its params failed: ${resolved.error}`,
              error: { name: "ExpressionError" },
            }
          : handlerEnd(task.type, id, (resolved.value ?? {}) as Record<string, unknown>, maxAttempts);
      const item: ReferenceItem = {
        index,
        id,
        status: end.status,
        predicted: end.status,
        ...("output" in end ? { output: normalized(end.output) } : {}),
        ...(end.error ? { error: end.error } : {}),
        ended: false,
        why: end.why,
        ...("childInput" in end ? { childInput: end.childInput } : {}),
      };
      // The run's end, where it is not the handler's: lost attempts, a cancellation.
      const ended = facts.endedAs?.(id);
      if (ended && NODE_ENDED.has(ended.status)) {
        item.ended = true;
        if (ended.status === "FAILED" || ended.status === "CANCELLED") {
          item.status = ended.status;
          item.error = ended.error
            ? { name: ended.error.name, message: ended.error.message }
            : { name: "Error", message: "failed" };
          if (end.status !== "FAILED") item.why = `it ended ${ended.status} (${item.error.name})`;
        }
      }
      items.push(item);
    }
    const tolerated = toleratedOf(params, items.length);
    const failures = items.filter((item) => item.status !== "COMPLETED").length;
    const lanes = Math.max(1, Math.min(params.maxConcurrency ?? DEFAULT_MAX_CONCURRENCY, items.length));
    const map: ReferenceMap = {
      attempt,
      items,
      lanes,
      tolerated,
      failures,
      decided: failures > tolerated ? "FAILED" : "COMPLETED",
      maxAttempts,
    };
    if (map.decided === "FAILED")
      return {
        ...ready,
        map,
        status: "FAILED",
        why: `${failures} of ${items.length} items failed, ${tolerated} tolerated`,
        error: { name: "MapFailed" },
        failsForGood: true,
      };
    return {
      ...ready,
      map,
      status: "COMPLETED",
      why: `its ${items.length} items ran (${failures} failed, ${tolerated} tolerated)`,
      output: items.map((item) =>
        item.status === "COMPLETED"
          ? (item.output ?? null)
          : { error: { name: item.error?.name, message: item.error?.message } },
      ),
    };
  };

  /** A map item's handler: its end and output (as `run` for a node of that type). */
  const handlerEnd = (
    type: string,
    id: string,
    params: Record<string, unknown>,
    attempts: number,
  ): {
    status: "COMPLETED" | "FAILED";
    output?: unknown;
    error?: NodeError;
    why: string;
    childInput?: unknown;
  } => {
    switch (type) {
      case "workflow":
        return childRun(id, params);
      case "pass":
        return { status: "COMPLETED", output: "value" in params ? params.value : facts.input, why: "it ran" };
      case "noop":
        return { status: "COMPLETED", output: null, why: "it ran" };
      case "sleep":
        return { status: "COMPLETED", output: { sleptMs: params.ms }, why: "it ran" };
      case "fail": {
        const times = params.times as number | undefined;
        const message = params.message as string | undefined;
        const output = { attempt: facts.passingAttemptOf(id, Number(times ?? Number.NaN)) };
        // Not retryable, failing its first `times` attempts: one failure ends it — unless those
        // attempts were all lost before their handler failed (the run says so), when it passes on
        // the attempt it got to.
        if (
          params.retryable === false &&
          times !== undefined &&
          facts.attemptsLost?.(id) === true &&
          output.attempt > times
        )
          return { status: "COMPLETED", output, why: "it ran (its first attempts were lost)" };
        if (params.retryable === false && (times === undefined || times >= 1))
          return {
            status: "FAILED",
            output,
            why: "its handler fails (not retryable)",
            error: { name: "TerminalError", ...(message ? { message } : {}) },
          };
        if (times === undefined || times >= attempts)
          return {
            status: "FAILED",
            output,
            why: `its handler fails its ${times ?? "every"} first attempts, of ${attempts}`,
            error: { name: "RetryableError", message: message ?? `fail task failed on attempt ${attempts}` },
          };
        return { status: "COMPLETED", output, why: "it ran" };
      }
      default:
        throw new Error(`reference: no item rule for type ${type}`);
    }
  };

  /**
   * A `workflow` node or item: refused at the depth limit; otherwise it ends as its last attempt's
   * child did — its output when it succeeded, ChildWorkflowFailed when it failed (its retries each
   * ran a new child), ChildWorkflowCancelled when it was cancelled.
   */
  const childRun = (
    id: string,
    params: Record<string, unknown>,
  ): {
    status: "COMPLETED" | "FAILED";
    output?: unknown;
    error?: NodeError;
    why: string;
    childInput: unknown;
    failsForGood: boolean;
  } => {
    const childInput = normalized(params.input ?? null);
    if ((facts.depth ?? 0) >= MAX_DEPTH)
      return {
        status: "FAILED",
        why: `its execution is ${facts.depth} deep, at the limit`,
        error: { name: "WorkflowDepthExceeded" },
        childInput,
        failsForGood: true,
      };
    if (facts.fanOutRefused?.(id))
      return {
        status: "FAILED",
        why: "its child was refused by the fan-out budget",
        error: { name: "FanOutLimitExceeded" },
        childInput,
        failsForGood: true,
      };
    const child = facts.childOf?.(id);
    if (child?.status === "SUCCEEDED")
      return {
        status: "COMPLETED",
        output: child.output ?? null,
        why: "its child succeeded",
        childInput,
        failsForGood: false,
      };
    if (child?.status === "FAILED" || child?.status === "CANCELLED")
      return {
        status: "FAILED",
        why: `its child ${child.executionId} ended ${child.status}`,
        error: { name: child.status === "FAILED" ? "ChildWorkflowFailed" : "ChildWorkflowCancelled" },
        childInput,
        failsForGood: true,
      };
    // No child (the node never got to start one), or one still running: the run's end decides.
    return {
      status: "FAILED",
      why: child ? `its child ${child.executionId} is ${child.status}` : "it started no child",
      error: { name: "NoChild" },
      childInput,
      failsForGood: false,
    };
  };

  /**
   * A `loop` node, as a `workflow` node over its last attempt's last iteration: refused at the depth
   * limit or by the fan-out budget; a failed or cancelled iteration fails it as a child fails a
   * `workflow` node; a succeeded one ends it by the checker's own reading of its `while` rule
   * (`$iteration < K`, the only one the simulation draws): false completes it with
   * `{output, iterations}`, true at `maxIterations` fails it with LoopLimitExceeded; true below it,
   * the run stopped it (its end decides).
   */
  const loopRun = (n: ReferenceNode, rawParams: unknown): ReferenceNode => {
    const params = (rawParams ?? {}) as { while?: unknown; maxIterations?: number };
    const base = n;
    if ((facts.depth ?? 0) >= MAX_DEPTH)
      return {
        ...base,
        status: "FAILED",
        why: `its execution is ${facts.depth} deep, at the limit`,
        error: { name: "WorkflowDepthExceeded" },
        failsForGood: true,
      };
    if (facts.fanOutRefused?.(n.id))
      return {
        ...base,
        status: "FAILED",
        why: "an iteration was refused by the fan-out budget",
        error: { name: "FanOutLimitExceeded" },
        failsForGood: true,
      };
    const loop = facts.loopOf?.(n.id);
    const last = loop?.last;
    if (!loop || !last)
      return {
        ...base,
        status: "FAILED",
        why: "it started no iteration",
        error: { name: "NoChild" },
        failsForGood: false,
      };
    if (last.status === "FAILED" || last.status === "CANCELLED")
      return {
        ...base,
        status: "FAILED",
        why: `its iteration ${loop.iterations} (${last.executionId}) ended ${last.status}`,
        error: { name: last.status === "FAILED" ? "ChildWorkflowFailed" : "ChildWorkflowCancelled" },
        failsForGood: true,
      };
    if (last.status !== "SUCCEEDED")
      return {
        ...base,
        status: "FAILED",
        why: `its iteration ${loop.iterations} is ${last.status}`,
        error: { name: "NoChild" },
        failsForGood: false,
      };
    const again = whileRule(params.while);
    if (again === undefined)
      throw new Error(`reference: a loop's while is not $iteration < K: ${String(params.while)}`);
    if (loop.iterations >= again)
      return {
        ...base,
        status: "COMPLETED",
        why: `its while is false after iteration ${loop.iterations}`,
        output: { output: last.output ?? null, iterations: loop.iterations },
        failsForGood: false,
      };
    if (loop.iterations >= (params.maxIterations ?? Number.POSITIVE_INFINITY))
      return {
        ...base,
        status: "FAILED",
        why: `its while still holds after its ${loop.iterations} maxIterations`,
        error: { name: "LoopLimitExceeded" },
        failsForGood: true,
      };
    return {
      ...base,
      status: "FAILED",
      why: `its while holds after iteration ${loop.iterations}, and no next one ended`,
      error: { name: "NoChild" },
      failsForGood: false,
    };
  };

  const expressionFailure = (n: ReferenceNode, why: string): ReferenceNode => ({
    ...n,
    status: "FAILED",
    why,
    error: { name: "ExpressionError" },
    failsForGood: true,
  });

  /** The handler's end and output. */
  const run = (node: NodeDefinition, n: ReferenceNode, params: Record<string, unknown>): ReferenceNode => {
    const ran = { ...n, status: "COMPLETED" as const, why: "it ran" };
    switch (node.type) {
      case "pass":
        return { ...ran, output: "value" in params ? params.value : facts.input };
      case "noop":
        return { ...ran, output: null };
      case "merge":
        return { ...ran, output: { ...n.deps } };
      case "sleep":
        return { ...ran, output: { sleptMs: params.ms } };
      case "wait":
        return { ...ran, output: { waitedSeconds: params.seconds } };
      case "vars":
        return { ...ran, output: facts.recordedOutputOf?.(node.id) ?? null };
      case "callback": {
        const settled = facts.callbackOf?.(node.id);
        if (settled?.status === "COMPLETED")
          return { ...ran, why: "its settler completed it", output: settled.output };
        if (settled?.status === "FAILED")
          return {
            ...n,
            status: "FAILED",
            why: `its settler failed it (${settled.error.name})`,
            error: settled.error,
            failsForGood: true,
          };
        return {
          ...n,
          status: "FAILED",
          why: "no settlement ended its last attempt: it timed out",
          error: { name: "CallbackTimedOut" },
          failsForGood: true,
        };
      }
      case "workflow": {
        const { status, output, error, why, childInput, failsForGood } = childRun(node.id, params);
        return {
          ...n,
          status,
          why,
          childInput,
          failsForGood,
          ...(output !== undefined ? { output } : {}),
          ...(error ? { error } : {}),
        };
      }
      case "fail": {
        const times = params.times as number | undefined;
        const output = { attempt: facts.passingAttemptOf(node.id, Number(times ?? Number.NaN)) };
        const message = params.message as string | undefined;
        if (params.retryable === false)
          return {
            ...ran,
            output,
            status: "FAILED",
            why: "its handler fails (not retryable)",
            error: { name: "TerminalError", ...(message ? { message } : {}) },
            failsForGood: true,
          };
        const attempts =
          policyOf(node.retry)?.maxAttempts ??
          policyOf(definition.defaults?.retry)?.maxAttempts ??
          DEFAULT_MAX_ATTEMPTS;
        if (times === undefined || times >= attempts)
          return {
            ...ran,
            output,
            status: "FAILED",
            why: `its handler fails its ${times ?? "every"} first attempts, of ${attempts}`,
            error: { name: "RetryableError", message: message ?? `fail task failed on attempt ${attempts}` },
            failsForGood: true,
          };
        return { ...ran, output };
      }
      default:
        throw new Error(`reference: no rule for type ${node.type}`);
    }
  };

  /**
   * The run's own end where it ended for a reason outside the definition (see ReferenceFacts): a
   * failure for good that is not its handler's (a dead letter, attempts lost to crashes), a
   * cancellation, a redrive; or an end timing chose among those the reference allows.
   */
  const settle = (node: NodeDefinition, n: ReferenceNode): ReferenceNode => {
    const ended = facts.endedAs?.(node.id);
    let settled = n;
    if (ended && ended.status !== n.status && n.alternatives.includes(ended.status as ReferenceStatus))
      // an `any`/`count:N` fan-in made unmeetable by skips and failures both: the first one decided
      settled = {
        ...n,
        status: ended.status as ReferenceStatus,
        alternatives: [n.status],
        why: `${n.why}, and it ended ${ended.status}`,
      };
    else if (
      ended?.status === "FAILED" &&
      n.status === "SKIPPED" &&
      ended.handlerRan === false &&
      ended.error?.name !== "ExpressionError"
    )
      // Its attempts were lost (crashes, expired leases) before it could evaluate its `when`, or
      // see that every input was skipped: it failed for good without its handler running.
      settled = {
        ...n,
        status: "FAILED",
        why: `it failed (${ended.error?.name}) before it was decided (${n.why})`,
        ...(ended.error ? { error: { name: ended.error.name, message: ended.error.message } } : {}),
      };
    else if (ended?.status === "FAILED" && n.status !== "SKIPPED") {
      const error = ended.error
        ? { name: ended.error.name, message: ended.error.message }
        : (n.error ?? { name: "unknown" });
      settled =
        n.status === "FAILED"
          ? { ...n, error }
          : { ...n, status: "FAILED", why: `it failed (${error.name})`, error };
    } else if (ended?.status === "CANCELLED" && n.status !== "SKIPPED")
      settled = { ...n, status: "CANCELLED", why: "it was cancelled" };
    else if (
      ended?.status === "COMPLETED" &&
      n.status === "FAILED" &&
      !n.error?.name.startsWith("Expression")
    )
      // a failing handler that passed after all (a redrive ran it under a later attempt number)
      settled = { ...n, status: "COMPLETED", why: "it ran (a later attempt passed)" };
    if (settled.output !== undefined) settled.output = normalized(settled.output);
    return settled;
  };

  const nodes = new Map<string, ReferenceNode>();
  for (const node of definition.nodes) nodes.set(node.id, await evaluate(node.id));
  const isSink = (id: string) => !definition.nodes.some((n) => dependencyIds(n).includes(id));
  const output: Record<string, unknown> = {};
  let status: Reference["status"] = "SUCCEEDED";
  for (const n of nodes.values()) {
    if (n.status === "CANCELLED" || (n.status === "FAILED" && !catches.goesOn(n.id, n.error?.name)))
      status = "FAILED";
    if (isSink(n.id) && (n.status === "COMPLETED" || n.status === "FAILED")) output[n.id] = seenAs(n);
  }
  return { nodes, status, output };
}

/** The outputs alone (COMPLETED nodes', and what the others would output had they run). */
export async function referenceOutputs(
  definition: WorkflowDefinition,
  facts: ReferenceFacts,
): Promise<Map<string, unknown>> {
  const { nodes } = await referenceRun(definition, facts);
  return new Map([...nodes].map(([id, n]) => [id, n.output ?? null]));
}

/**
 * The checker's own reading of the simulation's `while` rule `{% $iteration < K %}`: K (the first
 * iteration whose output stops the loop). Undefined for any other form.
 */
export function whileRule(value: unknown): number | undefined {
  if (typeof value !== "string") return undefined;
  const match = /^\{% \$iteration < (\d+) %\}$/.exec(value);
  return match?.[1] === undefined ? undefined : Number(match[1]);
}

/** A `{% %}` expression's value (undefined when it gives nothing), or why it could not be had. */
export async function evaluateExpression(
  text: string,
  scope: Record<string, unknown>,
  bindings?: Record<string, unknown>,
): Promise<{ value: unknown } | { error: string }> {
  const body = EXPRESSION.exec(text)?.[1];
  if (body === undefined) return { error: `not an expression: ${text}` };
  try {
    const value: unknown = await jsonata(body).evaluate(scope, bindings);
    return { value: value === undefined ? undefined : normalized(value) };
  } catch (error) {
    const e = error as { code?: string; message?: string };
    return { error: `${e.code ?? "error"}: ${e.message ?? String(error)}` };
  }
}

/** Params with every `{% %}` string replaced by its value (undefined members dropped, as JSON does). */
async function resolveParams(
  params: unknown,
  scope: Record<string, unknown>,
  bindings?: Record<string, unknown>,
): Promise<{ value: unknown } | { error: string }> {
  if (typeof params === "string")
    return EXPRESSION.test(params) ? evaluateExpression(params, scope, bindings) : { value: params };
  if (Array.isArray(params)) {
    const out: unknown[] = [];
    for (const item of params) {
      const r = await resolveParams(item, scope, bindings);
      if ("error" in r) return r;
      out.push(r.value ?? null);
    }
    return { value: out };
  }
  if (params !== null && typeof params === "object") {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(params)) {
      const r = await resolveParams(item, scope, bindings);
      if ("error" in r) return r;
      if (r.value !== undefined)
        Object.defineProperty(out, key, {
          value: r.value,
          enumerable: true,
          writable: true,
          configurable: true,
        });
    }
    return { value: out };
  }
  return { value: params };
}

/** Plain exact JSON (JSONata's sequences are arrays with extra members; -0 and ±Infinity kept). */
function normalized(value: unknown): unknown {
  return JSON.parse(
    encodeJson(value ?? null, {
      maxBytes: Number.POSITIVE_INFINITY,
      maxDepth: Number.POSITIVE_INFINITY,
      what: "a reference value",
    }),
  );
}

/**
 * What a workflow's onFailure handler must end as once its execution failed: its params mapped
 * over {input, deps, execution, error} (the execution's error), then its handler as any node's.
 */
export async function referenceOnFailure(
  handler: { type: string; params?: unknown },
  scope: { input: unknown; deps: Record<string, unknown>; execution: unknown; error: unknown },
): Promise<{ status: "COMPLETED"; output: unknown } | { status: "FAILED"; why: string }> {
  const resolved = await resolveParams(handler.params, scope);
  if ("error" in resolved) return { status: "FAILED", why: `its params failed: ${resolved.error}` };
  const params = (resolved.value ?? {}) as Record<string, unknown>;
  switch (handler.type) {
    case "pass":
      return { status: "COMPLETED", output: normalized("value" in params ? params.value : scope.input) };
    case "noop":
      return { status: "COMPLETED", output: null };
    case "sleep":
      return { status: "COMPLETED", output: { sleptMs: params.ms } };
    case "fail":
      return { status: "FAILED", why: "its handler fails" };
    default:
      throw new Error(`reference: no onFailure rule for type ${handler.type}`);
  }
}

/** The object form of a `retry` (the simulation's definitions use no retrier lists). */
function policyOf(retry: RetryDefinition | undefined): RetryPolicyDefinition | undefined {
  return Array.isArray(retry) ? undefined : retry;
}
