/**
 * The `map` built-in type: its params, and how its items are laid out.
 *
 * A map runs one item per element of a list known at run time. Items are records of their own (a
 * node of the execution each, with its own lease, retries and idempotency key), named
 * `<map id>[<map attempt>.<index>]` so a retried map starts afresh. They run in `lanes` (at most
 * `maxConcurrency`): lane L runs items L, L + lanes, L + 2·lanes, … one after another, each started
 * by the end of the one before it. So no more than `lanes` items ever run at once, and no item is
 * written by another item's progress: nothing of the map's progress lives in one hot item. A lane
 * that ran its last item records so in a shard of lanes (as a wide `all` fan-in records arrivals),
 * and the map is assembled once every lane ended.
 */
import { expressionSchema, retrySchema, workflowNameSchema } from "./definition.js";
import type { GraphNode, WorkflowGraph } from "./graph.js";
import * as z from "./zod.js";

export const MAP_LIMITS = {
  maxItems: 100_000,
  maxConcurrency: 1000,
  defaultMaxConcurrency: 40,
  /** Items kept in one payload: an item's run loads its chunk, never the whole list. */
  chunkSize: 1000,
  /** Lanes recorded per shard when they end. */
  laneShardSize: 100,
  /** Failed items recorded per shard, for the tolerance. */
  failureShardSize: 1000,
} as const;

export const mapItemTaskSchema = z.strictObject({
  type: z.string().check(z.minLength(1, "type must not be empty"), z.maxLength(64)),
  params: z.optional(z.unknown()),
});

export const mapParamsSchema = z
  .strictObject({
    /** The list: an expression (`{% deps.list.files %}`) or a literal array. */
    items: z.union([expressionSchema, z.array(z.unknown())]),
    /** What runs per item; `$item` and `$index` are in scope in its params' expressions. */
    task: z.optional(mapItemTaskSchema),
    /** Or a child execution of this workflow per item (engine/children.ts), waited for without compute. */
    workflow: z.optional(
      z.strictObject({
        name: workflowNameSchema,
        version: z.optional(z.number().check(z.int(), z.gte(1))),
        /** Each child's input (default: the item, `{% $item %}`). */
        input: z.optional(z.unknown()),
      }),
    ),
    maxConcurrency: z.optional(z.number().check(z.int(), z.gte(1), z.lte(MAP_LIMITS.maxConcurrency))),
    toleratedFailureCount: z.optional(z.number().check(z.int(), z.gte(0))),
    toleratedFailurePercentage: z.optional(z.number().check(z.gte(0), z.lte(100))),
    /** Each item's retry policy (default: the map node's). */
    retry: z.optional(retrySchema),
    /** Each item's timeout (default: the map node's). */
    timeoutSeconds: z.optional(z.number().check(z.int(), z.gte(1), z.lte(900))),
    /** Keep every item's events in the history and publish them (default: the map's counts only). */
    itemEvents: z.optional(z.boolean()),
  })
  .check(
    z.refine((params) => (params.task === undefined) !== (params.workflow === undefined), {
      message:
        "a map runs either a `task` ({type, params}) or a `workflow` ({name, version?, input?}) per item",
      path: ["task"],
    }),
  );

export type MapParams = z.output<typeof mapParamsSchema>;

/** The item id: `<map id>[<map attempt>.<index>]` (node ids never hold "[", so it names no node). */
export function mapItemId(mapId: string, mapAttempt: number, index: number): string {
  return `${mapId}[${mapAttempt}.${index}]`;
}

const ITEM_ID = /^([A-Za-z0-9][A-Za-z0-9_-]*)\[([1-9][0-9]*)\.(0|[1-9][0-9]*)\]$/;

export interface MapItemRef {
  mapId: string;
  mapAttempt: number;
  index: number;
}

export function parseMapItemId(nodeId: string): MapItemRef | undefined {
  const match = ITEM_ID.exec(nodeId);
  if (!match) return undefined;
  return { mapId: match[1]!, mapAttempt: Number(match[2]), index: Number(match[3]) };
}

/** The record id under which a map attempt's ended lanes (`lanes`) or failed items (`failed`) are kept. */
export function mapTallyId(mapId: string, mapAttempt: number, tally: "lanes" | "failed"): string {
  return `${mapId}[${mapAttempt}]#${tally}`;
}

export function laneCount(params: Pick<MapParams, "maxConcurrency">, items: number): number {
  return Math.max(1, Math.min(params.maxConcurrency ?? MAP_LIMITS.defaultMaxConcurrency, items));
}

/** The item after `index` in its lane, or undefined when `index` is the lane's last. */
export function nextInLane(index: number, lanes: number, items: number): number | undefined {
  const next = index + lanes;
  return next < items ? next : undefined;
}

/** How many failed items the map tolerates: within both limits when both are given (default none). */
export function toleratedFailures(
  params: Pick<MapParams, "toleratedFailureCount" | "toleratedFailurePercentage">,
  items: number,
): number {
  const limits = [
    params.toleratedFailureCount,
    params.toleratedFailurePercentage === undefined
      ? undefined
      : Math.floor((params.toleratedFailurePercentage / 100) * items),
  ].filter((limit): limit is number => limit !== undefined);
  return limits.length === 0 ? 0 : Math.min(...limits);
}

/** The shards holding `count` entries, `size` to a shard. */
export function shardsFor(count: number, size: number): number[] {
  return Array.from({ length: Math.ceil(count / size) }, (_, i) => i);
}

/** How many entries shard `shard` holds once full. */
export function shardCapacity(count: number, size: number, shard: number): number {
  return Math.max(0, Math.min(size, count - shard * size));
}

const itemEventsCache = new WeakMap<GraphNode, boolean>();

/** Whether a map node asked for its items' events (`itemEvents`); parsed once per compiled graph. */
export function mapItemEvents(map: GraphNode): boolean {
  let on = itemEventsCache.get(map);
  if (on === undefined) {
    const params = mapParamsSchema.safeParse(map.params);
    on = params.success && params.data.itemEvents === true;
    itemEventsCache.set(map, on);
  }
  return on;
}

/** Whether the history and lifecycle events show a node's events: a map item's only on request (`itemEvents`). */
export function eventsShown(graph: WorkflowGraph, nodeId: string): boolean {
  const ref = parseMapItemId(nodeId);
  if (!ref) return true;
  const map = graph.byId.get(ref.mapId);
  return map?.type === "map" && mapItemEvents(map);
}
