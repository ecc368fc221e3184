/**
 * Running a `map` node (domain/map.ts for the layout). The map's attempt is claimed like any node;
 * then, instead of a handler, it evaluates its list, keeps it in chunks, writes itself waiting
 * (still RUNNING, holding no worker: its lease is the time of its next check) and sends the first
 * item of each lane. Each item is claimed, run, retried and dead-lettered like a node of its own;
 * its end starts the next item of its lane, or records the lane as ended. The lane that ends last
 * sends the map a message, and the map is assembled: its output is the items' outputs in item order
 * (a tolerated failure as `{"error": {name, message}}`).
 *
 * Failures: a failed item is recorded in a failure shard; once more items failed than tolerated,
 * the map fails at once and its items are cancelled (fail-fast reaches running items through their
 * heartbeat). Cancelling the execution cancels the items with the rest of its nodes.
 *
 * Recovery: an item's message redelivered after a crash re-drives its end (worker.ts), and the
 * sweeper sees item records with the execution's nodes (sweeper.ts): it recovers their leases,
 * re-drives ended items whose lane did not move on, and checks the map when its lease (its check
 * time) passes.
 */

import { mapLimit } from "../domain/concurrency.js";
import { failureGoesOn } from "../domain/edges.js";
import { TerminalError } from "../domain/errors.js";
import { mapItemsExceeded, mapReservationKey, rootOf } from "../domain/fan-out.js";
import { type GraphNode, resolveRetry, type WorkflowGraph } from "../domain/graph.js";
import { PayloadError } from "../domain/json.js";
import {
  laneCount,
  MAP_LIMITS,
  type MapItemRef,
  type MapParams,
  mapItemId,
  mapParamsSchema,
  mapTallyId,
  nextInLane,
  parseMapItemId,
  shardCapacity,
  shardsFor,
  toleratedFailures,
} from "../domain/map.js";
import type { Payload } from "../domain/payload.js";
import type { ErrorInfo, ExecutionRecord, MapState, NodeRecord } from "../domain/records.js";
import { isTerminalNode } from "../domain/states.js";
import type { MapItemsReservation } from "../ports.js";
import type { EngineContext } from "./context.js";
import type { FailAttempt } from "./contracts.js";
import { continuedFailure, loadDeps } from "./dep-outputs.js";
import { depIndexesOf, dispatchMode } from "./dispatch-mode.js";
import { HISTORY, nodeEvent, publishNodeEvent } from "./lifecycle.js";
import type { Propagation } from "./propagation.js";
import { readCompletedDeps } from "./reads.js";
import { sendTasks, taskMessage } from "./send.js";
import { checkLater, completeWaiting, evaluateInScope, startWaiting } from "./waiting.js";
import type { WaitingCheck, WaitingKind, WaitingStart } from "./waiting-kind.js";

/** An item's place: its map node, the map attempt it belongs to, its index. */
export interface MapItem extends MapItemRef {
  map: GraphNode;
}

const paramsCache = new WeakMap<GraphNode, MapParams>();

/** A map node's params, parsed once per compiled graph. */
export function mapParamsOf(node: GraphNode): MapParams {
  let params = paramsCache.get(node);
  if (!params) {
    params = mapParamsSchema.parse(node.params);
    paramsCache.set(node, params);
  }
  return params;
}

/** The lanes of a map attempt recorded as ended (their last item ended and said so). */
export async function endedLanes(
  ctx: EngineContext,
  executionId: string,
  mapId: string,
  mapAttempt: number,
  lanes: number,
): Promise<Set<number>> {
  const shards = await ctx.store.getArrivalShards(
    executionId,
    mapTallyId(mapId, mapAttempt, "lanes"),
    shardsFor(lanes, MAP_LIMITS.laneShardSize),
  );
  return new Set(shards.flatMap((shard) => shard.okDeps));
}

/**
 * The node an item id names, as the engine runs it: the map's task with its params (their `$item`
 * and `$index` evaluated per item), the map's item retry policy and timeout. Undefined when the id
 * names no item of a map of this graph.
 */
export function itemNode(graph: WorkflowGraph, nodeId: string): GraphNode | undefined {
  const ref = parseMapItemId(nodeId);
  const map = ref && graph.byId.get(ref.mapId);
  if (!ref || !map || map.type !== "map") return undefined;
  const params = mapParamsOf(map);
  // Per item: the task, or a child execution of the workflow (whose input is the item by default).
  const { type, params: itemParams } = params.task ?? {
    type: "workflow",
    params: {
      name: params.workflow!.name,
      ...(params.workflow!.version !== undefined ? { version: params.workflow!.version } : {}),
      input: params.workflow!.input === undefined ? "{% $item %}" : params.workflow!.input,
    },
  };
  return {
    index: -1,
    id: nodeId,
    type,
    params: itemParams,
    parents: [],
    edges: [],
    catchEdges: [],
    children: [],
    fanIn: { kind: "all" },
    retry: params.retry ? resolveRetry(undefined, params.retry, map.retry) : map.retry,
    timeoutSeconds: params.timeoutSeconds ?? map.timeoutSeconds,
    // An item's failure is the map's to count, never the execution's.
    onError: "continue",
    mayBeSkipped: false,
    item: { ...ref, map },
  };
}

/** What a map attempt reserves of its root's map items in flight: its lanes. */
export function mapReservation(
  execution: ExecutionRecord,
  mapId: string,
  mapAttempt: number,
  lanes: number,
): MapItemsReservation {
  return {
    rootExecutionId: rootOf(execution),
    executionId: execution.executionId,
    key: mapReservationKey(mapId, mapAttempt),
    units: lanes,
  };
}

const CHUNK_CACHE_SIZE = 16;
const ATTEMPT_CACHE_SIZE = 64;

export class Maps implements WaitingKind<"map"> {
  readonly kind = "map";
  /** Its lanes' ends tell it (afterItem); the sweeper's look at its check time is the backstop. */
  readonly ownTimer = false;

  /** Chunks of item lists this container loaded: content-addressed or inline, so never stale. */
  private readonly chunks = new Map<string, unknown[]>();
  private readonly attempts = new Map<string, { state: MapState; deps: Array<[string, Payload]> }>();

  constructor(
    private readonly ctx: EngineContext,
    private readonly propagation: Propagation,
    /** Ends a map attempt that could not start (its list's expression failed): by its retry policy. */
    private readonly failAttempt: FailAttempt,
  ) {}

  /** The claimed map attempt: its list evaluated and kept, the map waiting, one item per lane sent. */
  async start({ execution, graph, node, record, lease }: WaitingStart): Promise<void> {
    const { executionId } = execution;
    let items: unknown[];
    let chunks: Payload[];
    try {
      items = await this.evaluateItems(execution, graph, node, record);
      chunks = [];
      for (let from = 0; from < items.length; from += MAP_LIMITS.chunkSize)
        chunks.push(
          await this.ctx.payloads.save(
            executionId,
            items.slice(from, from + MAP_LIMITS.chunkSize),
            `the items of map "${node.id}"`,
          ),
        );
    } catch (error) {
      await this.failAttempt(execution, graph, node, record, lease, error);
      return;
    }
    const now = this.ctx.clock.now();
    if (items.length === 0) {
      const empty = await this.ctx.payloads.save(executionId, [], `the output of map "${node.id}"`);
      await this.complete(execution, graph, node, record, empty, { items: 0, failed: 0 });
      return;
    }
    const state: MapState = {
      kind: "map",
      items: items.length,
      lanes: laneCount(mapParamsOf(node), items.length),
      chunks,
    };
    // Its lanes (the most of its items that run at once) reserved against the root's fan-out
    // budget (domain/fan-out.ts), kept until the map completes or its execution's end settled.
    const reservation = mapReservation(execution, node.id, record.attempt, state.lanes);
    const limit = this.ctx.fanOut.maxMapItemsInFlight;
    const reserved = await this.ctx.store.reserveMapItems(reservation, limit, now, {
      nodeId: node.id,
      leaseToken: lease.token,
    });
    // Stopped meanwhile (cancelled, or its lease recovered): nothing reserved, nothing to do.
    if (!reserved.ok && reserved.fenced) return;
    if (!reserved.ok) {
      const error = mapItemsExceeded(
        node.id,
        state.lanes,
        reservation.rootExecutionId,
        limit,
        reserved.inFlight,
      );
      await this.failAttempt(execution, graph, node, record, lease, error);
      return;
    }
    const waiting = await startWaiting(
      this.ctx,
      executionId,
      node.id,
      lease,
      state,
      nodeEvent(this.ctx, HISTORY.mapStarted, now, node.id, record.attempt, {
        items: state.items,
        lanes: state.lanes,
      }),
    );
    if (!waiting.ok) {
      // Told to stop before it waited: none of its items ran, nor will.
      const current = waiting.current;
      const started =
        current?.status === "RUNNING" && current.attempt === record.attempt && current.composite;
      if (!started) await this.ctx.store.releaseMapItems(reservation);
      return;
    }
    await this.sendItems(
      execution,
      node,
      record.attempt,
      Array.from({ length: state.lanes }, (_, lane) => lane),
    );
  }

  /**
   * The value and the scope of an item about to run: its element of the list, its index, and the
   * map's own dependencies (its items see what the map saw). Undefined when the map attempt it
   * belongs to is no longer running (it failed or was cancelled): the item has nothing to do.
   */
  async itemContext(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    item: MapItem,
  ): Promise<{ bindings: { item: unknown; index: number }; deps: Array<[string, Payload]> } | undefined> {
    // Strong, and after the item's claim: a map seen waiting then ends after the claim, so its
    // cleanup finds the item claimed and stops it. An eventually consistent copy may show a map that
    // ended before the claim as still waiting, and the item would run unseen by any cleanup (tried
    // for its half read units: the simulation's map-ended invariant failed 66 of 10,000 seeds).
    const map = await this.ctx.store.getNode(execution.executionId, item.mapId);
    if (map?.status !== "RUNNING" || map.attempt !== item.mapAttempt || map.composite?.kind !== "map")
      return undefined;
    const attempt = await this.attemptOf(execution, graph, item, map.okDeps, map.composite);
    const chunk = await this.chunk(map.composite, Math.floor(item.index / MAP_LIMITS.chunkSize));
    const value = chunk[item.index % MAP_LIMITS.chunkSize];
    return { bindings: { item: value ?? null, index: item.index }, deps: attempt.deps };
  }

  /**
   * What every item of a map attempt shares, kept for the container: the map's state (fixed once it
   * waits) and its dependencies' outputs (final once it started). Saves each item two reads.
   */
  private async attemptOf(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    item: MapItem,
    okDeps: readonly number[],
    state: MapState,
  ): Promise<{ state: MapState; deps: Array<[string, Payload]> }> {
    const key = `${execution.executionId}/${item.mapId}[${item.mapAttempt}]`;
    const known = this.attempts.get(key);
    if (known) return known;
    const deps = await loadDeps(
      this.ctx,
      execution.executionId,
      graph,
      depIndexesOf(dispatchMode(this.ctx, item.map), item.map, okDeps),
      item.map,
    );
    const attempt = { state, deps };
    if (this.attempts.size >= ATTEMPT_CACHE_SIZE) this.attempts.delete(this.attempts.keys().next().value!);
    this.attempts.set(key, attempt);
    return attempt;
  }

  /**
   * After an item ended (completed, failed for good, or cancelled): its failure counted, the next
   * item of its lane sent, or its lane recorded as ended — and, the last lane, the map told.
   * Idempotent: a redelivery or the sweeper may drive it again.
   */
  async afterItem(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    item: MapItem,
    /** How it ended, when the caller wrote it just now (else it is read). */
    known?: "COMPLETED" | "FAILED",
  ): Promise<void> {
    const { executionId } = execution;
    const itemId = mapItemId(item.mapId, item.mapAttempt, item.index);
    // The map's state as this container knows it (fixed once the map waits) spares a read; whether
    // the map still runs matters only on a failure, and the next item's run checks it anyway.
    const attempt = this.attempts.get(`${executionId}/${item.mapId}[${item.mapAttempt}]`);
    const [map, read] = await Promise.all([
      attempt ? undefined : this.ctx.store.getNode(executionId, item.mapId),
      known ? undefined : this.ctx.store.getNode(executionId, itemId),
    ]);
    if (
      !attempt &&
      (map?.status !== "RUNNING" || map.attempt !== item.mapAttempt || map.composite?.kind !== "map")
    ) {
      // A recovery (its end not known to the caller) finding its map attempt ended: the map's own
      // end may be what was cut short before its propagation (the item that ended it died after
      // writing it), and nothing else would drive it.
      if (!known && map && map.attempt === item.mapAttempt)
        await this.afterMapEnded(execution, graph, item.map, map);
      return;
    }
    const ended = known ?? read?.status;
    if (!ended || !isTerminalNode(ended)) return;
    const state = attempt?.state ?? (map!.composite as MapState);
    const params = mapParamsOf(item.map);
    if (ended !== "COMPLETED") {
      const failures = await this.recordFailure(executionId, item, state);
      const tolerated = toleratedFailures(params, state.items);
      if (failures > tolerated) {
        const [current, failed] = await Promise.all([
          map ?? this.ctx.store.getNode(executionId, item.mapId),
          read ?? this.ctx.store.getNode(executionId, itemId),
        ]);
        if (current?.status !== "RUNNING" || current.attempt !== item.mapAttempt) return;
        await this.fail(execution, graph, item.map, current, {
          name: "MapFailed",
          message: `${failures} of ${state.items} items of map "${item.mapId}" failed; ${tolerated} tolerated (item ${item.index}: ${failed?.error?.message ?? ended.toLowerCase()})`,
          retryable: false,
        });
        return;
      }
    }
    const next = nextInLane(item.index, state.lanes, state.items);
    if (next !== undefined) {
      // A recovery (a redelivered or dead-lettered copy of the item's message) sends the next item
      // only if nobody claimed it yet: once claimed, its own message drives the lane. Else every copy
      // of every item would send a copy of the next, down to the lane's end (simulation seed 8731:
      // a backlog of copies that kept the last item's message from ever being received).
      if (!known && (await this.ctx.store.getNode(executionId, mapItemId(item.mapId, item.mapAttempt, next))))
        return;
      await this.sendItems(execution, item.map, item.mapAttempt, [next]);
      return;
    }
    if (await this.laneEnded(executionId, item, state))
      await sendTasks(this.ctx, [{ message: taskMessage(execution, item.mapId, item.mapAttempt) }]);
  }

  /** A map attempt that ended: its end's propagation driven again (idempotent, as any recovery). */
  private async afterMapEnded(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    map: NodeRecord,
  ): Promise<void> {
    if (map.status === "COMPLETED")
      await this.propagation.afterCompletion(execution, graph, node, { recovery: true });
    else if (map.status === "FAILED") {
      const error = map.error ?? { name: "MapFailed", message: "failed" };
      // One its dependants go on from (onError continue, or caught) propagates like a completion.
      if (failureGoesOn(node, error)) {
        await this.propagation.afterNodeFailed(execution, graph, node, error, { recovery: true });
        return;
      }
      // A failure for good fails the execution, unless a redrive revived it since (without the
      // execution's mark, as worker.ts reads it): read strongly, the caller's copy may be older.
      const fresh = await this.ctx.store.getExecution(execution.executionId);
      if (fresh?.failedNode !== undefined) await this.propagation.afterFailure(fresh, graph, node, error);
    }
  }

  /**
   * The map's check (its message after the last lane ended, or the sweeper once its check time
   * passed): assembled and completed once every lane ended, failed when too many items failed,
   * otherwise left waiting until its next check.
   */
  async check({ execution, graph, node, record }: WaitingCheck): Promise<void> {
    const state = record.composite;
    if (record.status !== "RUNNING" || state?.kind !== "map" || !record.lease) return;
    const { executionId } = execution;
    const ended = await endedLanes(this.ctx, executionId, node.id, record.attempt, state.lanes);
    if (ended.size < state.lanes) {
      await this.resendStalledLanes(execution, node, record.attempt, state, ended);
      await checkLater(this.ctx, executionId, node.id, record.lease);
      return;
    }
    const ids = Array.from({ length: state.items }, (_, i) => mapItemId(node.id, record.attempt, i));
    const items = await readCompletedDeps(this.ctx, executionId, ids);
    const failed = ids.filter((id) => items.get(id)?.status !== "COMPLETED").length;
    const tolerated = toleratedFailures(mapParamsOf(node), state.items);
    if (failed > tolerated) {
      await this.fail(execution, graph, node, record, {
        name: "MapFailed",
        message: `${failed} of ${state.items} items of map "${node.id}" failed; ${tolerated} tolerated`,
        retryable: false,
      });
      return;
    }
    const values = await mapLimit(ids, 64, async (id) => {
      const item = items.get(id);
      if (item?.status === "COMPLETED") return item.output ? this.ctx.payloads.load(item.output) : null;
      return this.ctx.payloads.load(continuedFailure(item?.error));
    });
    let output: Payload;
    try {
      output = await this.ctx.payloads.save(executionId, values, `the output of map "${node.id}"`);
    } catch (error) {
      // The items' outputs together are over a payload limit: the map's own failure, for good.
      if (!(error instanceof PayloadError)) throw error;
      await this.fail(execution, graph, node, record, {
        name: error.code,
        message: error.message,
        retryable: false,
      });
      return;
    }
    await this.complete(execution, graph, node, record, output, { items: state.items, failed });
  }

  /** The map's list: its `items` expression (or literal) evaluated over the map's scope. */
  private async evaluateItems(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    record: NodeRecord,
  ): Promise<unknown[]> {
    // A list of up to 100,000 items is larger than a param usually is: bounded as a payload.
    const items = await evaluateInScope(
      this.ctx,
      execution,
      graph,
      node,
      record.okDeps,
      mapParamsOf(node).items,
      "params.items",
      {
        limits: { maxResultBytes: this.ctx.payloads.settings.maxBytes },
      },
    );
    if (!Array.isArray(items))
      throw new TerminalError(
        `the items of map "${node.id}" must be an array; its expression gave ${items === null ? "null" : typeof items}`,
        { code: "InvalidMapItems" },
      );
    if (items.length > MAP_LIMITS.maxItems)
      throw new TerminalError(
        `map "${node.id}" got ${items.length} items; a map runs at most ${MAP_LIMITS.maxItems}`,
        { code: "MapTooLarge" },
      );
    return items;
  }

  /**
   * The backstop for a map's lanes, which no look of the sweeper reads. Each item's message drives
   * its lane, and it can be gone: never sent (the map's start, or an item's end, cut short before
   * the send), deleted by a duplicate's worker that found the item running while its claimer died,
   * lost between a retry's write and its send, or — an item waiting for its child execution — the
   * child's end notice lost to a crash (parent-notice.ts). So, for each lane not yet ended, the map's
   * check finds the lane's first unended item and sends its message again when it is stalled: no
   * record though the item before it ended a grace period ago (or it is the lane's first), a lease
   * or check time run out, or a retry overdue by the grace period; a lane whose items all ended has
   * its last item's message sent again, whose handling records the lane's end. A copy is refused at
   * its claim. One listing of the items' statuses, and strong reads of at most two items a lane.
   */
  private async resendStalledLanes(
    execution: ExecutionRecord,
    map: GraphNode,
    mapAttempt: number,
    state: MapState,
    ended: ReadonlySet<number>,
  ): Promise<void> {
    const { executionId } = execution;
    const listed = await this.ctx.store.listMapItems(executionId, map.id, mapAttempt, { statusOnly: true });
    const statusOf = new Map(
      listed.map((item) => [parseMapItemId(item.nodeId)?.index ?? -1, item.status] as const),
    );
    // Per open lane: its first item not ended (or, all ended, its last), and the one before it
    // when the listing shows the head has no record yet (only then does its end time matter).
    const heads: Array<{ index: number; before?: number; allEnded: boolean }> = [];
    for (let lane = 0; lane < state.lanes; lane++) {
      if (ended.has(lane)) continue;
      let index = lane;
      while (index + state.lanes < state.items && isTerminalNode(statusOf.get(index) ?? "PENDING"))
        index += state.lanes;
      const status = statusOf.get(index);
      const allEnded = status !== undefined && isTerminalNode(status);
      const unrecorded = status === undefined && index >= state.lanes;
      heads.push({ index, ...(unrecorded ? { before: index - state.lanes } : {}), allEnded });
    }
    const id = (index: number) => mapItemId(map.id, mapAttempt, index);
    const read = new Map(
      (
        await this.ctx.store.getNodes(
          executionId,
          heads.flatMap((head) => [id(head.index), ...(head.before === undefined ? [] : [id(head.before)])]),
        )
      ).map((item) => [item.nodeId, item]),
    );
    const now = this.ctx.clock.now();
    const overdue = (at: number | undefined) => (at ?? now) + this.ctx.sweep.graceMs < now;
    const stalled = heads.flatMap(({ index, before, allEnded }) => {
      const item = read.get(id(index));
      if (allEnded) return item ? [item] : [];
      if (!item) {
        const previous = before === undefined ? undefined : read.get(id(before));
        // No record: unsent if it is the lane's first item, or its predecessor ended a grace period ago.
        const unsent = index < state.lanes || (previous !== undefined && overdue(previous.finishedAt));
        return unsent ? [{ nodeId: id(index), attempt: 1 }] : [];
      }
      if (item.status === "RUNNING") return (item.lease?.expiresAt ?? now) < now ? [item] : [];
      return item.status === "QUEUED" && overdue(item.notBefore ?? item.queuedAt) ? [item] : [];
    });
    await sendTasks(
      this.ctx,
      stalled.map((item) => ({ message: taskMessage(execution, item.nodeId, item.attempt) })),
    );
  }

  private async sendItems(
    execution: ExecutionRecord,
    map: GraphNode,
    mapAttempt: number,
    indexes: readonly number[],
  ): Promise<void> {
    await sendTasks(
      this.ctx,
      indexes.map((index) => ({ message: taskMessage(execution, mapItemId(map.id, mapAttempt, index), 1) })),
    );
  }

  /** Records a failed item once; returns how many items of the map attempt failed so far. */
  private async recordFailure(executionId: string, item: MapItem, state: MapState): Promise<number> {
    const size = MAP_LIMITS.failureShardSize;
    const childId = mapTallyId(item.mapId, item.mapAttempt, "failed");
    await this.ctx.store.recordShardArrival({
      executionId,
      childId,
      shard: Math.floor(item.index / size),
      parentIndexes: [item.index],
      now: this.ctx.clock.now(),
    });
    const shards = await this.ctx.store.getArrivalShards(executionId, childId, shardsFor(state.items, size));
    return shards.reduce((sum, shard) => sum + shard.okDeps.length, 0);
  }

  /** Records that the lane of `item` (its last) ended; true when every lane has. */
  private async laneEnded(executionId: string, item: MapItem, state: MapState): Promise<boolean> {
    const size = MAP_LIMITS.laneShardSize;
    const childId = mapTallyId(item.mapId, item.mapAttempt, "lanes");
    const lane = item.index % state.lanes;
    const shard = Math.floor(lane / size);
    const { shard: mine } = await this.ctx.store.recordShardArrival({
      executionId,
      childId,
      shard,
      parentIndexes: [lane],
      now: this.ctx.clock.now(),
    });
    // Also on a repeat: the lane that filled its shard may have been cut short before reading.
    if (mine.okDeps.length < shardCapacity(state.lanes, size, shard)) return false;
    const others = shardsFor(state.lanes, size).filter((s) => s !== shard);
    const stored = await this.ctx.store.getArrivalShards(executionId, childId, others);
    return (
      stored.length === others.length &&
      stored.every((s) => s.okDeps.length >= shardCapacity(state.lanes, size, s.shard))
    );
  }

  private async complete(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    record: NodeRecord,
    output: Payload,
    counts: { items: number; failed: number },
  ): Promise<void> {
    await completeWaiting(
      this.ctx,
      this.propagation,
      this.failAttempt,
      { execution, graph, node, record, lease: record.lease! },
      output,
      counts,
    );
    // Every lane ended, so no item of it runs: its reservation goes back (none for an empty list).
    // A map that failed keeps its reservation until its execution's end settled (its items are
    // cancelled, running ones at their next heartbeat): Propagation.cleanUp gives it back then.
    if (counts.items > 0 && record.composite?.kind === "map")
      await this.ctx.store.releaseMapItems(
        mapReservation(execution, node.id, record.attempt, record.composite.lanes),
      );
  }

  /** The map fails for good (too many items failed): its items are cancelled, then fail-fast applies. */
  private async fail(
    execution: ExecutionRecord,
    graph: WorkflowGraph,
    node: GraphNode,
    record: NodeRecord,
    error: ErrorInfo,
  ): Promise<void> {
    const now = this.ctx.clock.now();
    const failed = await this.propagation.writeFailure(
      execution.executionId,
      node,
      { status: ["RUNNING"], leaseToken: record.lease!.token },
      { status: "FAILED", error, finishedAt: now, lease: null },
      nodeEvent(this.ctx, HISTORY.nodeFailed, now, node.id, record.attempt, { error }),
    );
    if (!failed.ok) {
      // Failed already, this same attempt (two handlings of its last item): the other may have
      // died before the failure's propagation, its message gone with this one's; driven here.
      const current = failed.current;
      if (current?.status === "FAILED" && current.attempt === record.attempt)
        await this.afterMapEnded(execution, graph, node, current);
      return;
    }
    await publishNodeEvent(this.ctx, execution, graph, "Node Failed", node.id, record.attempt, error);
    await this.cancelItems(execution.executionId, node.id, record.attempt, `map "${node.id}" failed`);
    await this.propagation.afterNodeFailed(execution, graph, node, error);
  }

  /** Cancels a map attempt's items that did not end: those not running now, running ones at their next heartbeat. */
  private async cancelItems(
    executionId: string,
    mapId: string,
    mapAttempt: number,
    reason: string,
  ): Promise<void> {
    const items = (await this.ctx.store.listMapItems(executionId, mapId, mapAttempt)).filter(
      (record) => !isTerminalNode(record.status),
    );
    await this.propagation.settleOutstanding(executionId, items, reason, false);
  }

  private async chunk(state: MapState, index: number): Promise<unknown[]> {
    const payload = state.chunks[index];
    if (!payload) throw new Error(`map state has no chunk ${index}`);
    const key = JSON.stringify(payload);
    const cached = this.chunks.get(key);
    if (cached) return cached;
    const value = (await this.ctx.payloads.load(payload)) as unknown[];
    if (this.chunks.size >= CHUNK_CACHE_SIZE) this.chunks.delete(this.chunks.keys().next().value!);
    this.chunks.set(key, value);
    return value;
  }
}
