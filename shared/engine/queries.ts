/** Read-side queries: an execution's history in pages, and executions newest first. */

import { decodeCursor, encodeCursor } from "../domain/cursor.js";
import { notFound } from "../domain/errors.js";
import { eventsShown, mapItemEvents } from "../domain/map.js";
import type { ExecutionStatus, HistoryEvent } from "../domain/records.js";
import * as z from "../domain/zod.js";
import type { EngineContext } from "./context.js";

export interface HistoryPage {
  /** In history order (domain/history.ts); `seq`, which only orders them, is left out. */
  events: Array<Omit<HistoryEvent, "at" | "seq"> & { at: string }>;
  next?: string;
}

export interface ExecutionListItem {
  executionId: string;
  workflow: string;
  version: number;
  status: ExecutionStatus;
  createdAt: string;
  startedAt?: string;
  finishedAt?: string;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * History is kept on the items it describes (no extra write per event) and merged in causal order
 * by the store (domain/history.ts). The cursor is the count of events already returned: an event
 * made after the page was read is stamped later (engine/history-stamps.ts), so it lands after it;
 * one stamped before and still being written may land before it (docs/guarantees.md, "Where the
 * guarantees stop").
 */
export async function listHistory(
  ctx: EngineContext,
  executionId: string,
  page: { after?: string; limit: number },
): Promise<HistoryPage> {
  const offset = page.after === undefined ? 0 : decodeOffset(page.after);
  const execution = await ctx.store.getExecution(executionId);
  if (!execution) throw notFound(`execution "${executionId}" does not exist`);
  // A map's items' own events only when the map asks for them (`itemEvents`); its counts are in its own.
  const graph = await ctx.graphs.get(execution.workflow, execution.version);
  const withItems = graph.nodes.some((node) => node.type === "map" && mapItemEvents(node));
  const history = await ctx.store.listHistory(executionId, { withItems });
  const shown = withItems
    ? history.filter((e) => e.nodeId === undefined || eventsShown(graph, e.nodeId))
    : history;
  const slice = shown.slice(offset, offset + page.limit);
  const events = slice.map(({ seq: _seq, ...event }) => ({ ...event, at: iso(event.at) }));
  const end = offset + slice.length;
  return end < shown.length ? { events, next: encodeOffset(end) } : { events };
}

export async function listExecutions(
  ctx: EngineContext,
  query: { workflow?: string; status?: ExecutionStatus; limit: number; next?: string },
): Promise<{ executions: ExecutionListItem[]; next?: string }> {
  const page = await ctx.store.listExecutions(query);
  const executions = page.items.map((e) => ({
    executionId: e.executionId,
    workflow: e.workflow,
    version: e.version,
    status: e.status,
    createdAt: iso(e.createdAt),
    ...(e.startedAt !== undefined ? { startedAt: iso(e.startedAt) } : {}),
    ...(e.finishedAt !== undefined ? { finishedAt: iso(e.finishedAt) } : {}),
  }));
  return page.next === undefined ? { executions } : { executions, next: page.next };
}

/** A history position: the number of events already answered. */
const offsetCursorSchema = z.object({ o: z.number().check(z.int(), z.gte(0)) });

function encodeOffset(offset: number): string {
  return encodeCursor({ o: offset });
}

function decodeOffset(cursor: string): number {
  return decodeCursor(cursor, offsetCursorSchema).o;
}
