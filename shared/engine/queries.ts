/** Read-side queries: an execution's history in pages, and executions newest first. */
import type { ExecutionStatus, HistoryEvent } from "../domain/records.js";
import type { EngineContext } from "./context.js";
import { badRequest, notFound } from "./errors.js";

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

function encodeOffset(offset: number): string {
  return Buffer.from(JSON.stringify({ o: offset })).toString("base64url");
}

function decodeOffset(cursor: string): number {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as { o?: unknown };
    if (typeof parsed.o === "number" && Number.isInteger(parsed.o) && parsed.o >= 0) return parsed.o;
  } catch {
    // fall through to the error below
  }
  throw badRequest(`"after" is not a cursor this API returned`, [
    { path: "after", code: "invalid_cursor", message: "not a cursor this API returned" },
  ]);
}
