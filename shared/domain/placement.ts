/**
 * Work outside the Lambda: where a node may run (`runsOn`), the workers that run it (a registry of
 * long-running processes, each in a pool, with executors, capabilities and labels), and the rules
 * that match them. Pure: the engine (engine/external.ts) and both stores apply these rules, so the
 * memory and DynamoDB stores cannot disagree on what a worker may take.
 */
import { createHash } from "node:crypto";
import * as z from "./zod.js";

export const PLACEMENT_LIMITS = {
  /** The Lambda worker's limit: a longer node must run on external workers, with heartbeats. */
  lambdaTimeoutSeconds: 900,
  /** An external task may run for up to a year, heartbeating. */
  maxExternalTimeoutSeconds: 365 * 24 * 3600,
  maxHeartbeatSeconds: 3600,
  /** The registration heartbeat the engine asks workers for (GET /workers health counts from it). */
  workerHeartbeatSeconds: 30,
  /** Silent this many heartbeats: stale (no new work); this many: dead (its tasks are recovered). */
  staleAfterBeats: 2,
  deadAfterBeats: 6,
  maxParallel: 1000,
  maxListItems: 64,
  /**
   * A registration silent this long after its last heartbeat is gone: hidden from every listing at
   * once, and deleted (DynamoDB's TTL on the stored item; the memory store when it lists).
   */
  workerRetentionSeconds: 24 * 3600,
  /** Live registrations (not dead) one pool may have: a new worker past it is refused (409 TooManyWorkers). */
  maxWorkersPerPool: 1000,
  /**
   * Workers in one page of GET /workers: at most, and when the request gives no `limit`. With the
   * registration's own bounds (lists of 64 names, capabilities of 256 characters) and the tasks
   * shown per worker below, a page stays under 4.5 MB: within Lambda's 6 MB response.
   */
  maxWorkersPerPage: 100,
  defaultWorkersPerPage: 50,
  /** Tasks a worker's view lists (its taskCount says how many it holds). */
  maxTasksPerWorkerView: 50,
} as const;

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]*$/;
const name = (what: string) =>
  z
    .string()
    .check(
      z.minLength(1, `${what} must not be empty`),
      z.maxLength(64, `${what} must be at most 64 characters`),
      z.regex(
        NAME,
        `${what} may use letters, digits, '.', ':', '-' and '_' and must start with a letter or digit`,
      ),
    );

export const poolNameSchema = name("a pool name");
export const workerIdSchema = name("a worker id");
const executorSchema = name("an executor");
const labelSchema = name("a label");
const capabilitiesSchema = z
  .record(
    name("a capability name"),
    z.string().check(z.maxLength(256, "a capability value must be at most 256 characters")),
  )
  .check(
    z.refine((c) => Object.keys(c).length <= PLACEMENT_LIMITS.maxListItems, {
      message: `at most ${PLACEMENT_LIMITS.maxListItems} capabilities`,
    }),
  );
const list = <T extends z.core.$ZodType>(item: T, what: string) =>
  z
    .array(item)
    .check(z.maxLength(PLACEMENT_LIMITS.maxListItems, `at most ${PLACEMENT_LIMITS.maxListItems} ${what}`));

/** Where a node may run: only on external workers of `pool` that satisfy every constraint. */
export const runsOnSchema = z.strictObject({
  pool: poolNameSchema,
  /** Every one of these executors (e.g. "ffmpeg") must be among the worker's. */
  executors: z.optional(list(executorSchema, "executors")),
  /** Each of these must equal the worker's capability of that name. */
  capabilities: z.optional(capabilitiesSchema),
  /** Every one of these labels must be among the worker's. */
  labels: z.optional(list(labelSchema, "labels")),
  /** Only these workers (by id). */
  allowedWorkers: z.optional(list(workerIdSchema, "allowed workers")),
  /** Never these workers. */
  forbiddenWorkers: z.optional(list(workerIdSchema, "forbidden workers")),
  /** At most this many attempts of this node (across executions) on one worker at once. */
  maxParallelPerWorker: z.optional(z.number().check(z.int(), z.gte(1), z.lte(PLACEMENT_LIMITS.maxParallel))),
});

export type RunsOn = z.output<typeof runsOnSchema>;

/** `POST /workers`: a worker registering (or registering again under its id). */
export const workerRegistrationSchema = z.strictObject({
  workerId: z.optional(workerIdSchema),
  pool: poolNameSchema,
  executors: z._default(list(executorSchema, "executors"), []),
  capabilities: z._default(capabilitiesSchema, {}),
  labels: z._default(list(labelSchema, "labels"), []),
  /** Tasks it runs at once, at most. */
  maxParallel: z._default(z.number().check(z.int(), z.gte(1), z.lte(PLACEMENT_LIMITS.maxParallel)), 1),
});

export type WorkerRegistration = z.output<typeof workerRegistrationSchema>;

/** A task a worker holds: counted against its limits until the task leaves that attempt. */
export interface Hold {
  executionId: string;
  nodeId: string;
  attempt: number;
  /** The node's lease token for that attempt (the fence of every write the worker makes). */
  leaseToken: string;
  /** The counter `maxParallelPerWorker` applies to (slotOf). */
  slot: string;
  claimedAt: number;
}

export interface WorkerRecord {
  workerId: string;
  pool: string;
  executors: string[];
  capabilities: Record<string, string>;
  labels: string[];
  maxParallel: number;
  registeredAt: number;
  heartbeatAt: number;
  /** How often it was asked to heartbeat. */
  heartbeatSeconds: number;
  /** Held tasks by holdKey. */
  holds: Record<string, Hold>;
  /** Bumped by every change of `holds`: a claim is conditioned on the version it counted. */
  version: number;
  /**
   * What decides where it runs (placementKey): a live registration's id is not taken over with
   * another. Absent on registrations written before it was kept.
   */
  placement?: string;
}

/** The registration as putWorker writes it: no holds or version (the store keeps those). */
export type WorkerRegistrationRecord = Omit<WorkerRecord, "holds" | "version">;

/**
 * The key of what decides where a worker runs: its pool, executors, capabilities and labels (not
 * maxParallel, which a worker may change by registering again). Order-insensitive.
 */
export function placementKey(
  worker: Pick<WorkerRecord, "pool" | "executors" | "capabilities" | "labels">,
): string {
  const capabilities = Object.keys(worker.capabilities)
    .sort()
    .map((key) => [key, worker.capabilities[key]]);
  const canonical = JSON.stringify([
    worker.pool,
    [...worker.executors].sort(),
    capabilities,
    [...worker.labels].sort(),
  ]);
  return createHash("sha256").update(canonical, "utf8").digest("base64url");
}

/**
 * The rule of registering under an id (both stores apply it in one conditional write): a new id
 * is free; a registered one is taken again with the same placement (its holds kept), or with
 * another only once it is dead (silent for deadAfterBeats heartbeats). `deadBefore` is the
 * heartbeat time below which a registration is dead (deadBefore()).
 */
export function mayRegister(
  existing: Pick<WorkerRecord, "placement" | "heartbeatAt"> | undefined,
  placement: string,
  deadBefore: number,
): boolean {
  return (
    existing === undefined ||
    existing.placement === undefined ||
    existing.placement === placement ||
    existing.heartbeatAt < deadBefore
  );
}

/** The heartbeat time below which a worker asked to beat every `heartbeatSeconds` is dead at `now`. */
export function deadBefore(now: number, heartbeatSeconds: number): number {
  return now - PLACEMENT_LIMITS.deadAfterBeats * heartbeatSeconds * 1000;
}

/** True once the registration is past its retention (gone: never listed, deleted). */
export function workerExpired(worker: Pick<WorkerRecord, "heartbeatAt">, now: number): boolean {
  return now - worker.heartbeatAt > PLACEMENT_LIMITS.workerRetentionSeconds * 1000;
}

/** When a registration last heard at `heartbeatAt` expires, in epoch seconds (DynamoDB's TTL). */
export function workerExpiresAt(heartbeatAt: number): number {
  return Math.ceil(heartbeatAt / 1000) + PLACEMENT_LIMITS.workerRetentionSeconds;
}

export type WorkerHealth = "healthy" | "stale" | "dead";

/** A worker's health from its last heartbeat: stale ones get no work, dead ones lose their tasks. */
export function workerHealth(
  worker: Pick<WorkerRecord, "heartbeatAt" | "heartbeatSeconds">,
  now: number,
): WorkerHealth {
  const silentMs = now - worker.heartbeatAt;
  const beatMs = worker.heartbeatSeconds * 1000;
  if (silentMs <= PLACEMENT_LIMITS.staleAfterBeats * beatMs) return "healthy";
  return silentMs <= PLACEMENT_LIMITS.deadAfterBeats * beatMs ? "stale" : "dead";
}

/** The key of a held task within its worker's record. */
export function holdKey(executionId: string, nodeId: string): string {
  return `${executionId}/${nodeId}`;
}

/** The counter a node's `maxParallelPerWorker` limits: the node of a workflow, whatever the execution. */
export function slotOf(workflow: string, nodeId: string): string {
  return `${workflow}/${nodeId}`;
}

/** Why `worker` may not run a node placed by `runsOn` (undefined: it may). */
export function placementRefusal(
  runsOn: RunsOn,
  worker: Omit<WorkerRecord, "holds" | "version">,
): string | undefined {
  if (worker.pool !== runsOn.pool) return `it is in pool "${worker.pool}", not "${runsOn.pool}"`;
  const missingExecutor = (runsOn.executors ?? []).find((e) => !worker.executors.includes(e));
  if (missingExecutor !== undefined) return `it has no executor "${missingExecutor}"`;
  for (const [capability, value] of Object.entries(runsOn.capabilities ?? {}))
    if (worker.capabilities[capability] !== value) return `its capability "${capability}" is not "${value}"`;
  const missingLabel = (runsOn.labels ?? []).find((l) => !worker.labels.includes(l));
  if (missingLabel !== undefined) return `it has no label "${missingLabel}"`;
  if (runsOn.allowedWorkers && !runsOn.allowedWorkers.includes(worker.workerId))
    return "it is not an allowed worker";
  if (runsOn.forbiddenWorkers?.includes(worker.workerId)) return "it is a forbidden worker";
  return undefined;
}

/** Why `worker` has no room for one more task in `slot` (undefined: it has). */
export function capacityRefusal(worker: WorkerRecord, runsOn: RunsOn, slot: string): string | undefined {
  const held = Object.values(worker.holds);
  if (held.length >= worker.maxParallel) return `it runs ${held.length} of its ${worker.maxParallel} tasks`;
  const inSlot = held.filter((h) => h.slot === slot).length;
  if (runsOn.maxParallelPerWorker !== undefined && inSlot >= runsOn.maxParallelPerWorker)
    return `it runs ${inSlot} of this node's ${runsOn.maxParallelPerWorker} per worker`;
  return undefined;
}

/**
 * A QUEUED external node offered to its pool: what a poll reads (a small index per pool, oldest
 * first), enough to match it without reading its workflow. One per node attempt.
 */
export interface ReadyTask {
  pool: string;
  executionId: string;
  nodeId: string;
  attempt: number;
  workflow: string;
  version: number;
  runsOn: RunsOn;
  offeredAt: number;
}

/** An offer's key within its pool: one per node attempt. */
export function offerKey(task: Pick<ReadyTask, "executionId" | "nodeId" | "attempt">): string {
  return `${task.executionId}/${task.nodeId}#${task.attempt}`;
}
