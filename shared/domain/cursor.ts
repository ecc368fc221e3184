/**
 * Paging cursors: opaque to callers (base64url of a small JSON document), checked on the way back
 * in. Every listing (executions, history, dead letters, on every store) encodes its position with
 * these, so a cursor it never returned is refused the same way everywhere: InvalidCursor.
 */
import { invalidCursor } from "./errors.js";
import * as z from "./zod.js";

export function encodeCursor(position: unknown): string {
  return Buffer.from(JSON.stringify(position), "utf8").toString("base64url");
}

/** The position a cursor holds, if it is one `schema` accepts; else an InvalidCursor error. */
export function decodeCursor<S extends z.core.$ZodType>(cursor: string, schema: S): z.output<S> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch (error) {
    throw Object.assign(invalidCursor(), { cause: error });
  }
  const result = z.safeParse(schema, parsed);
  if (!result.success) throw invalidCursor();
  return result.data;
}

/** A dead-letter listing's position: the id of the last one answered (ids sort oldest first). */
export const deadLetterCursorSchema = z.object({ d: z.string().check(z.minLength(1), z.maxLength(1024)) });
export type DeadLetterCursor = z.output<typeof deadLetterCursorSchema>;

/** A worker listing's position: the id of the last one answered (the registry sorts by id). */
export const workerCursorSchema = z.object({ k: z.string().check(z.minLength(1), z.maxLength(256)) });
export type WorkerCursor = z.output<typeof workerCursorSchema>;

/** A page of one shard's timers: the sort key of the last one answered (domain/timers.ts timerSortKey). */
export const timerPageCursorSchema = z.object({ t: z.string().check(z.minLength(1), z.maxLength(2048)) });
export type TimerPageCursor = z.output<typeof timerPageCursorSchema>;
