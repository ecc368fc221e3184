/**
 * Concurrency slots (issue 29, flow control): the pure state of one limit for one key value — who
 * holds its slots, and the fair queue of work waiting for one.
 *
 * One versioned item per (limit, key value) holds the state (the store writes it whole, only at the
 * version it was read at: engine/slots.ts re-reads and retries); the waiting work is kept in items
 * of its own, one per waiter, ordered by a `place` this module gives.
 *
 * Holders are attempts (`executionId/nodeId/attempt`). One is released when its attempt ends; one
 * whose attempt ended or whose lease passed without a release (its worker died) is *stale*, which
 * only reading its node can tell — so the engine looks for stale holders only when the limit is
 * full, and a crash holds a slot for no longer than its lease.
 *
 * Fairness is a virtual clock (the "round", as in fair queueing): a waiter of group g is placed at
 * round max(current round + 1, g's last round + 1), so each group has at most one waiter per round
 * and a group that arrives late is placed right after the round being granted, not behind every
 * waiter of a busy group. Within a round, first come first served; higher priority before any
 * round. With 1,000 waiters of group A (rounds 1..1,000) and then one of group B while round k is
 * granted, B is placed at round k + 1: it is granted within the next two grants.
 */
import { createHash } from "node:crypto";
import { stringifyExact } from "./exact-numbers.js";
import * as z from "./zod.js";

export const SLOT_LIMITS = {
  /** The largest `limit` of one concurrency limit: the holders live in one item (≤ 400 KB). */
  maxLimit: 1_000,
  /** Concurrency limits on one node. */
  maxLimitsPerNode: 4,
  /** A key value longer than this is kept as its SHA-256 (the slot key stays a small item key). */
  maxKeyChars: 256,
  /** Priorities: 0..100, higher first (issue 29's `priority`). */
  maxPriority: 100,
  defaultPriority: 50,
} as const;

/**
 * A node's `concurrency`: at most `limit` attempts of it run at once per value of `key` (an
 * expression over the node's input, or a literal), counted over every execution of the workflow
 * (`scope: "workflow"`, the default) or over every node of any workflow naming the same key
 * (`"global"`). Several limits may apply (an array): all must have room.
 */
export const concurrencyLimitSchema = z.strictObject({
  key: z.optional(z.string().check(z.minLength(1), z.maxLength(1024))),
  limit: z.number().check(z.int(), z.gte(1), z.lte(SLOT_LIMITS.maxLimit)),
  scope: z.optional(z.enum(["workflow", "global"])),
});

export const concurrencySchema = z.union(
  [
    concurrencyLimitSchema,
    z.array(concurrencyLimitSchema).check(z.minLength(1), z.maxLength(SLOT_LIMITS.maxLimitsPerNode)),
  ],
  { error: 'concurrency is {"key"?, "limit", "scope"?} or a list of them' },
);

export type ConcurrencyLimit = z.output<typeof concurrencyLimitSchema>;

/** A node's limits as a list (one object is a list of one). */
export function concurrencyLimits(value: z.output<typeof concurrencySchema> | undefined): ConcurrencyLimit[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? value : [value];
}

/** A key expression's result as the key value: strings as they are, anything else as its JSON. */
export function keyValueOf(value: unknown): string {
  const text = typeof value === "string" ? value : (stringifyExact(value) ?? "null");
  return text.length <= SLOT_LIMITS.maxKeyChars
    ? text
    : `sha256:${createHash("sha256").update(text, "utf8").digest("hex")}`;
}

/**
 * Where a limit's slots for one key value live: per workflow and node (and the limit's place in the
 * node's list), or — global — per key value alone, shared by every node that names it.
 */
export function slotKeyOf(
  limit: ConcurrencyLimit,
  workflow: string,
  nodeId: string,
  index: number,
  keyValue: string,
): string {
  return limit.scope === "global" ? `g/${keyValue}` : `w/${workflow}/${nodeId}/${index}/${keyValue}`;
}

/** An attempt holding a slot: since when (ms). */
export type HolderId = string;

/** The state of one limit for one key value (stored as JSON text in the slots item). */
export interface SlotsState {
  /** Holders by id (`executionId/nodeId/attempt`): when each took its slot (ms). */
  holders: Record<HolderId, number>;
  /**
   * By priority: the round of the last waiter granted (the fair queue's virtual clock; each priority
   * has its own, so a high-priority grant never moves the others' clock).
   */
  rounds: Record<string, number>;
  /** By `priority:group`: the last round given to its waiters, while ahead of its clock (others pruned). */
  groups: Record<string, number>;
  /** Waiters ever placed: the tie-break within a round, so places are unique. */
  seq: number;
  /** When the backstop look at this key is armed for, while work waits on it (engine/slots.ts). */
  checkAt?: number;
  /** When the holders were last read for stale ones (engine/slots.ts). */
  staleLookAt?: number;
}

export const EMPTY_SLOTS: SlotsState = { holders: {}, rounds: {}, groups: {}, seq: 0 };

const slotsStateSchema = z.object({
  holders: z.record(z.string(), z.number()),
  rounds: z.record(z.string(), z.number()),
  groups: z.record(z.string(), z.number()),
  seq: z.number(),
  checkAt: z.optional(z.number()),
  staleLookAt: z.optional(z.number()),
});

/** The state as stored; an item written by hand or by an older version is checked like any input. */
export function decodeSlots(text: string | undefined): SlotsState {
  if (text === undefined) return { holders: {}, rounds: {}, groups: {}, seq: 0 };
  return slotsStateSchema.parse(JSON.parse(text));
}

export function encodeSlots(state: SlotsState): string {
  return JSON.stringify(state);
}

/** The holder id of an attempt. */
export function holderId(executionId: string, nodeId: string, attempt: number): HolderId {
  return `${executionId}/${nodeId}/${attempt}`;
}

/** The attempt a holder id names (node ids hold no `/`: validate.ts). */
export function parseHolderId(id: HolderId): { executionId: string; nodeId: string; attempt: number } {
  const last = id.lastIndexOf("/");
  const middle = id.lastIndexOf("/", last - 1);
  return {
    executionId: id.slice(0, middle),
    nodeId: id.slice(middle + 1, last),
    attempt: Number(id.slice(last + 1)),
  };
}

export type AcquireOutcome =
  /** Taken now, or held already by this attempt (a copy of its message): `state` to write when changed. */
  | { acquired: true; changed: boolean; state: SlotsState }
  /** Every slot held by another attempt: `holders` to check for stale ones (their ids). */
  | { acquired: false; holders: HolderId[] };

/**
 * `holder` takes a slot of `limit` if one is free, after dropping the holders known `stale`. Taking
 * the slot a release handed to it (engine/slots.ts) is a hold already. Pure: the caller writes the
 * new state at the version it read.
 */
export function acquireSlot(
  state: SlotsState,
  holder: HolderId,
  limit: number,
  now: number,
  stale: ReadonlySet<HolderId> = new Set(),
): AcquireOutcome {
  if (state.holders[holder] !== undefined && !stale.has(holder))
    return { acquired: true, changed: false, state };
  const holders: Record<HolderId, number> = {};
  for (const [id, since] of Object.entries(state.holders)) if (!stale.has(id)) holders[id] = since;
  if (Object.keys(holders).length >= limit) return { acquired: false, holders: Object.keys(holders) };
  holders[holder] = now;
  return { acquired: true, changed: true, state: { ...state, holders } };
}

/** `holder`'s slot given back (not held: the state as it was, `changed` false). */
export function releaseSlot(state: SlotsState, holder: HolderId): { changed: boolean; state: SlotsState } {
  if (state.holders[holder] === undefined) return { changed: false, state };
  const { [holder]: _released, ...holders } = state.holders;
  return { changed: true, state: { ...state, holders } };
}

/**
 * The place of a new waiter of `group` at `priority` (a string that sorts in grant order: higher
 * priority first, then round, then arrival) and the state that records it.
 */
export function placeWaiter(
  state: SlotsState,
  group: string,
  priority: number = SLOT_LIMITS.defaultPriority,
): { place: string; round: number; state: SlotsState } {
  const level = clampPriority(priority);
  const member = `${level}:${group}`;
  const round = Math.max((state.rounds[level] ?? 0) + 1, (state.groups[member] ?? 0) + 1);
  const seq = state.seq + 1;
  const place = `${pad(SLOT_LIMITS.maxPriority - level, 3)}.${pad(round, 12)}.${pad(seq, 12)}`;
  return { place, round, state: { ...state, groups: { ...state.groups, [member]: round }, seq } };
}

/**
 * A waiter at `place` granted: its priority's clock moves to its round, and the groups of that
 * priority it has passed are forgotten (a group with no waiter ahead of the clock is placed as a
 * new one would be).
 */
export function grantWaiter(state: SlotsState, place: string): SlotsState {
  const { level, round: granted } = parsePlace(place);
  const round = Math.max(state.rounds[level] ?? 0, granted);
  const groups: Record<string, number> = {};
  for (const [member, last] of Object.entries(state.groups))
    if (!member.startsWith(`${level}:`) || last > round) groups[member] = last;
  return { ...state, rounds: { ...state.rounds, [level]: round }, groups };
}

/** The priority and round a place was given. */
export function parsePlace(place: string): { level: number; round: number } {
  const [inverted, round] = place.split(".");
  return { level: SLOT_LIMITS.maxPriority - Number(inverted), round: Number(round) };
}

function clampPriority(priority: number): number {
  return Math.min(SLOT_LIMITS.maxPriority, Math.max(0, Math.round(priority)));
}

function pad(value: number, width: number): string {
  return String(value).padStart(width, "0");
}
