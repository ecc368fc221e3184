/** Read-side queries: an execution's history in pages, and executions newest first. */

import { z } from "zod";
import { decodeCursor, encodeCursor } from "../domain/cursor.js";
import { notFound } from "../domain/errors.js";
import type { ExecutionStatus, HistoryEvent } from "../domain/records.js";
import type { EngineContext } from "./context.js";

export interface HistoryPage {
  events: Array<Omit<HistoryEvent, "at"> & { at: string }>;
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
 * History is kept on the items it describes (no extra write per event) and merged in time order
 * here. The cursor is the count of events already returned: new events carry later times, so they
 * land after it.
 */
export async function listHistory(
  ctx: EngineContext,
  executionId: string,
  page: { after?: string; limit: number },
): Promise<HistoryPage> {
  const offset = page.after === undefined ? 0 : decodeOffset(page.after);
  const [execution, history] = await Promise.all([
    ctx.store.getExecution(executionId),
    ctx.store.listHistory(executionId),
  ]);
  if (!execution) throw notFound(`execution "${executionId}" does not exist`);
  const slice = history.slice(offset, offset + page.limit);
  const events = slice.map((event) => ({ ...event, at: iso(event.at) }));
  const end = offset + slice.length;
  return end < history.length ? { events, next: encodeOffset(end) } : { events };
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
const offsetCursorSchema = z.object({ o: z.number().int().min(0) });

function encodeOffset(offset: number): string {
  return encodeCursor({ o: offset });
}

function decodeOffset(cursor: string): number {
  return decodeCursor(cursor, offsetCursorSchema).o;
}
