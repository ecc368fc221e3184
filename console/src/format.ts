/** Small formatting helpers shared by the pages. */
import { stringifyExact } from "../../shared/domain/exact-numbers.js";

export const TERMINAL_EXECUTION = new Set(["SUCCEEDED", "FAILED", "CANCELLED"]);
export const TERMINAL_NODE = new Set(["COMPLETED", "FAILED", "CANCELLED", "SKIPPED"]);

export function formatDuration(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms) || ms < 0) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const seconds = Math.floor(ms / 1000);
  if (ms < 3_600_000) return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  const minutes = Math.floor(seconds / 60);
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** Between two ISO instants; `end` absent: until `now`. */
export function between(
  start: string | undefined,
  end: string | undefined,
  now = Date.now(),
): number | undefined {
  if (start === undefined) return undefined;
  const from = Date.parse(start);
  const to = end === undefined ? now : Date.parse(end);
  return Number.isNaN(from) || Number.isNaN(to) ? undefined : Math.max(0, to - from);
}

export function formatTime(iso: string | undefined): string {
  if (iso === undefined) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const pad = (n: number, width = 2) => String(n).padStart(width, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(
    date.getMinutes(),
  )}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`;
}

/** The time of day, to the millisecond (a timeline's column). */
export function formatClock(iso: string | undefined): string {
  return formatTime(iso).slice(11);
}

/**
 * A value as indented JSON text. Numbers a double cannot hold came from the API as exact numbers
 * (api.ts) and are written back as their digits (shared/domain/exact-numbers.ts).
 */
export function json(value: unknown): string {
  if (value === undefined) return "";
  try {
    return stringifyExact(value, undefined, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

/** A value as JSON text on one line, exact numbers as their digits. */
export function compactJson(value: unknown): string {
  try {
    return stringifyExact(value) ?? String(value);
  } catch {
    return String(value);
  }
}

export function errorLine(error: { name?: string; message?: string } | undefined): string {
  if (error === undefined) return "";
  return error.name ? `${error.name}: ${error.message ?? ""}` : (error.message ?? "");
}
