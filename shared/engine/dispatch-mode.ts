/**
 * How a node is dispatched once it is ready:
 * - "direct": at most one parent, so its readiness is certain the moment that parent completes. No
 *   write queues it: the task message is its dispatch, and the claim creates its record
 *   (PENDING → RUNNING). Saves a write per node; duplicate messages are refused by the claim.
 * - "join": several parents, decided by reading them or by sharded arrivals (fan-in.ts), never by
 *   arrivals on its own record. The decision writes nothing: completed parents stay completed, so
 *   once met a fan-in stays met, and the task message is its dispatch and the claim creates its
 *   record, as for a direct node. Racing deciders may each send a message; the claim takes one.
 *   Saves the queue write. An `all` join's inputs are all its parents; an `any` or `count:N` join's
 *   message carries the dependencies its decider saw completed (they differ between deciders), and
 *   the claim records them as its inputs: those of the one message it took.
 * - "fanIn": several parents, fan-in `count:N` (N ≥ 2) too wide to read, so each parent's outcome
 *   is recorded on the child (fan-in.ts); the PENDING → QUEUED write that decides it is the
 *   dispatch (exactly once), and its inputs are the completions recorded.
 * - "deferred": its task type defers it (e.g. `wait`): queued with a not-before time, so the sweeper
 *   can find a wait too long for an SQS delay. An external node (`runsOn`) too: queued, then its
 *   message offers it to its pool (engine/external.ts).
 * - "inline": run inside the engine (e.g. `merge`), never sent.
 */
import { requiredCompletions } from "../domain/fan-in.js";
import type { GraphNode } from "../domain/graph.js";
import type { NodeStatus } from "../domain/records.js";
import type { NodeCondition } from "../ports.js";
import type { TaskRegistry } from "../tasks/task-type.js";

export type DispatchMode = "direct" | "join" | "fanIn" | "deferred" | "inline";

/** Direct and join nodes: the message is the dispatch, and the first claim is from PENDING. */
export function claimedByMessage(mode: DispatchMode): boolean {
  return mode === "direct" || mode === "join";
}

/**
 * A join whose inputs are some of its parents (`any`, `count:N`): its message carries the
 * dependencies that met its fan-in, and its claim records them.
 */
export function messageCarriesDeps(mode: DispatchMode, node: GraphNode): boolean {
  return mode === "join" && node.fanIn.kind !== "all";
}

/**
 * The dependencies a join's message carries, if they can be its inputs: distinct parents of the
 * node, enough of them to meet its fan-in. Anything else (a message from no decider of this
 * engine) is refused: undefined.
 */
export function validMessageDeps(node: GraphNode, deps: readonly number[] | undefined): number[] | undefined {
  if (deps === undefined) return undefined;
  const unique = [...new Set(deps)].sort((a, b) => a - b);
  if (unique.length !== deps.length || !unique.every((p) => node.parents.includes(p))) return undefined;
  return unique.length >= requiredCompletions(node.fanIn, node.parents.length) ? unique : undefined;
}

/**
 * How a node that is not direct learns that its dependencies are done (shared/engine/fan-in.ts):
 * - "read": up to `readMaxParents` parents, or any width when one completion suffices (any,
 *   count:1). A finishing parent, its own write durable, reads the child and its other parents
 *   (strongly consistent; only the child when its own completion decides) and decides; nothing is
 *   written per edge. Reads cost a fifth of a write, so this is cheaper while k parents × k reads
 *   stays below k writes × 5 (with small outputs: a read costs a unit per 4 KB of the record).
 * - "sharded": wider `all` fan-ins. Each completed parent is recorded once in an arrival shard of
 *   at most `shardSize` parents (an item beside the child), so no item grows past one write unit
 *   (one set of 1,000 parents would cost 4 units per arrival) nor takes every write of a wide
 *   join; the parent that fills a shard reads the other shards. Arrivals at one shard from the
 *   messages of one worker invocation share writes (arrival-batcher.ts).
 * - "arrivals": wider `count:N` fan-ins (N ≥ 2), where failures count too: each parent's outcome
 *   is recorded once on the child (number sets written under a condition).
 */
export type FanInSource = "read" | "arrivals" | "sharded";

export interface FanInSettings {
  readMaxParents: number;
  shardSize: number;
}

export const DEFAULT_FAN_IN: FanInSettings = { readMaxParents: 4, shardSize: 100 };

export function fanInSource(settings: FanInSettings, node: GraphNode): FanInSource {
  // A fan-in met by one completion (any, count:1) reads only itself, whatever its width: the
  // completing parent decides alone (fan-in.ts).
  // One whose parents may be skipped is read too unless it is `all` (whose shards count a skip as
  // an arrival): an arrival tells completions from failures, not from skips.
  if (
    node.parents.length <= settings.readMaxParents ||
    requiredCompletions(node.fanIn, node.parents.length) === 1 ||
    (node.mayBeSkipped && node.fanIn.kind !== "all")
  )
    return "read";
  return node.fanIn.kind === "all" ? "sharded" : "arrivals";
}

/** The arrival shard of a parent: shards hold `shardSize` consecutive parents of the child. */
export function shardOf(settings: FanInSettings, child: GraphNode, parentIndex: number): number {
  return Math.floor(child.parents.indexOf(parentIndex) / settings.shardSize);
}

/** The parents (node indexes) whose arrivals shard `shard` holds. */
export function shardParents(settings: FanInSettings, child: GraphNode, shard: number): readonly number[] {
  return child.parents.slice(shard * settings.shardSize, (shard + 1) * settings.shardSize);
}

export function shardCount(settings: FanInSettings, child: GraphNode): number {
  return Math.ceil(child.parents.length / settings.shardSize);
}

export function dispatchMode(
  settings: { tasks: TaskRegistry; fanIn: FanInSettings },
  node: GraphNode,
): DispatchMode {
  // An external node is offered to its pool once QUEUED (engine/external.ts): queued like a deferred one.
  if (node.runsOn) return "deferred";
  const task = settings.tasks.get(node.type);
  if (task?.inline) return "inline";
  if (task?.defer) return "deferred";
  // Concurrency limits (engine/slots.ts): queued by a write, so a node waiting for a slot has a
  // record that says so, and never run by a continuation (its message passes the limits).
  if (node.concurrency !== undefined) return "deferred";
  if (node.parents.length <= 1) return "direct";
  return fanInSource(settings.fanIn, node) === "arrivals" ? "fanIn" : "join";
}

/**
 * The dependencies a node's handler receives: all its parents (a direct node, any `all` fan-in —
 * the done ones, as loadDeps reads them), or those recorded when it was decided or claimed. An `all`
 * node's record may hold none: one cancelled at an end and revived by a redrive (simulation seed 3556).
 */
export function depIndexesOf(
  mode: DispatchMode,
  node: GraphNode,
  okDeps: readonly number[],
): readonly number[] {
  return mode === "direct" || node.fanIn.kind === "all" ? node.parents : okDeps;
}

/**
 * The conditions under which work that never got (or lost) its claim may be written off — a
 * dead-lettered message, an unknown task type: the node is at the message's attempt in QUEUED or
 * RUNNING, or — the first attempt of a direct or join node, never claimed — still PENDING.
 */
export function unclaimedConditions(
  mode: DispatchMode,
  attempt: number,
  statuses: readonly NodeStatus[],
): NodeCondition[] {
  const queued: NodeCondition = { status: statuses, attempt };
  return claimedByMessage(mode) && attempt === 1 ? [{ status: ["PENDING"], attempt: 0 }, queued] : [queued];
}
