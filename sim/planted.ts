/**
 * Planted bugs: store decorators that break one guarantee on purpose, so tests can prove the
 * invariant checker notices. Never used by a campaign.
 */
import { NULL_PAYLOAD } from "../shared/domain/payload.js";
import { type HistoryEvent, pendingNode } from "../shared/domain/records.js";
import type { EngineOptions } from "../shared/engine/engine.js";
import type { BlobStore, NodeCondition, NodePatch, Store } from "../shared/ports.js";
import type { AuditStore } from "./audit-store.js";

function overrideTransition(store: Store, transitionNode: Store["transitionNode"]): Store {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === "transitionNode") return transitionNode;
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** Fencing broken: a completion is accepted whatever lease token it carries (a zombie's too). */
export function acceptStaleCompletions(store: Store): Store {
  return overrideTransition(store, (executionId, nodeId, condition, patch, event) => {
    if (patch.status === "COMPLETED" && condition.leaseToken !== undefined) {
      const { leaseToken: _ignored, ...rest } = condition;
      return store.transitionNode(executionId, nodeId, rest, patch, event);
    }
    return store.transitionNode(executionId, nodeId, condition, patch, event);
  });
}

/** Dispatch broken: queueing a child that is already QUEUED "succeeds" again. */
export function queueTwice(store: Store): Store {
  return overrideTransition(store, async (executionId, nodeId, condition, patch, event) => {
    const result = await store.transitionNode(executionId, nodeId, condition, patch, event);
    const queueing =
      patch.status === "QUEUED" && condition.status.length === 1 && condition.status[0] === "PENDING";
    if (!result.ok && queueing && result.current?.status === "QUEUED" && result.current.attempt === 1)
      return store.transitionNode(executionId, nodeId, { status: ["QUEUED"] }, patch, event);
    return result;
  });
}

/**
 * Fan-in broken: an `any`/`count:N` join's claim — written before it runs, or carried by its first
 * write (a lazy claim) — records one dependency fewer than its message carried.
 */
export function claimWithTooFewDeps(store: Store): Store {
  return overrideTransition(store, (executionId, nodeId, condition, patch, event) => {
    const claimFromPending = condition.status.includes("PENDING") && condition.attempt === 0;
    if (claimFromPending && patch.okDeps !== undefined && patch.okDeps.length > 0)
      return store.transitionNode(
        executionId,
        nodeId,
        condition,
        { ...patch, okDeps: patch.okDeps.slice(1) },
        event,
      );
    return store.transitionNode(executionId, nodeId, condition, patch, event);
  });
}

/**
 * Lazy claims broken (shared/engine/attempt-fence.ts): a claim carried by an attempt's ending is
 * accepted whatever the node's state, so a copy of the message that also ran ends the node again.
 */
export function carriedClaimsUnconditional(store: Store): Store {
  return overrideTransition(store, (executionId, nodeId, condition, patch, event) => {
    const carried =
      patch.status !== undefined &&
      patch.status !== "RUNNING" &&
      condition.status.length === 1 &&
      condition.status[0] === "PENDING" &&
      condition.attempt === 0;
    const anyState: NodeCondition = {
      status: ["PENDING", "QUEUED", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "SKIPPED"],
    };
    return store.transitionNode(executionId, nodeId, carried ? anyState : condition, patch, event);
  });
}

/**
 * Claims broken: the claim of a later attempt (from QUEUED) is answered as written but never is,
 * so its handler runs with no claim accepted — which only a node's first attempt may (lazily).
 */
export function retryClaimsUnwritten(store: Store): Store {
  // Once per node, so that the world still ends soon after.
  const faked = new Set<string>();
  return overrideTransition(store, async (executionId, nodeId, condition, patch, event) => {
    const retryClaim =
      patch.status === "RUNNING" &&
      condition.status.length === 1 &&
      condition.status[0] === "QUEUED" &&
      (condition.attempt ?? 0) > 1 &&
      condition.leaseToken === undefined;
    const key = `${executionId}/${nodeId}`;
    const current = retryClaim && !faked.has(key) ? await store.getNode(executionId, nodeId) : undefined;
    if (current?.status === "QUEUED" && current.attempt === condition.attempt) {
      faked.add(key);
      return {
        ok: true,
        record: { ...current, status: "RUNNING", ...(patch.lease ? { lease: patch.lease } : {}) },
      };
    }
    return store.transitionNode(executionId, nodeId, condition, patch, event);
  });
}

function overrideCreate(store: Store, createExecution: Store["createExecution"]): Store {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === "createExecution") return createExecution;
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * Idempotency keys broken as they were (the issue): global, not per workflow, and a reused key
 * returns its execution whatever the request — the first of a key (any workflow) answers them all.
 */
export function globalKeys(store: Store): Store {
  const byKey = new Map<string, string>();
  return overrideCreate(store, async (record, event, keyed, budget) => {
    const key = record.idempotencyKey;
    const held = key === undefined ? undefined : byKey.get(key);
    const existing = held === undefined ? undefined : await store.getExecution(held);
    if (existing && keyed) return { created: false, existing, keyed };
    const result = await store.createExecution(record, event, keyed, budget);
    if (result.created && key !== undefined) byKey.set(key, record.executionId);
    return result;
  });
}

/** Idempotency broken: a taken key answers as though its first request asked what this one does. */
export function sameRequestAlways(store: Store): Store {
  return overrideCreate(store, async (record, event, keyed, budget) => {
    const result = await store.createExecution(record, event, keyed, budget);
    return "existing" in result && keyed ? { ...result, keyed } : result;
  });
}

/** Blob store broken: the first value written is acknowledged but never kept (a lost S3 PUT). */
export function dropFirstBlobPut(blobs: BlobStore): BlobStore {
  let dropped = false;
  return new Proxy(blobs, {
    get(target, property, receiver) {
      if (property === "put")
        return async (key: string, text: string) => {
          if (dropped) return target.put(key, text);
          dropped = true;
        };
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** Payloads broken: the engines keep values up to 4 KB inline, whatever the world's threshold. */
export function inlineUpTo4K(options: EngineOptions): EngineOptions {
  return { ...options, payloads: { ...options.payloads, inlineBytes: 4096 } };
}

/**
 * Skips broken: a node the engine skips is recorded CANCELLED instead, a skip taken for a failure
 * (its history event left as the engine wrote it).
 */
export function skipsAsCancellations(store: Store): Store {
  return overrideTransition(store, (executionId, nodeId, condition, patch, event) =>
    store.transitionNode(
      executionId,
      nodeId,
      condition,
      patch.status === "SKIPPED" ? { ...patch, status: "CANCELLED" } : patch,
      event,
    ),
  );
}

/** Skips broken: a node the engine skips is recorded COMPLETED with a null output, as though it ran. */
export function skipsAsCompletions(store: Store): Store {
  return overrideTransition(store, (executionId, nodeId, condition, patch, event) =>
    store.transitionNode(
      executionId,
      nodeId,
      condition,
      patch.status === "SKIPPED" ? { ...patch, status: "COMPLETED", output: NULL_PAYLOAD } : patch,
      event,
    ),
  );
}

/**
 * Maps broken: a map starts one item more at once than the lanes it records (its waiting write
 * keeps lanes − 1), as an engine sending too many first items would.
 */
export function mapStartsTooMany(store: Store): Store {
  return overrideTransition(store, (executionId, nodeId, condition, patch, event) => {
    const state = patch.composite;
    if (state?.kind === "map" && state.lanes >= 2)
      return store.transitionNode(
        executionId,
        nodeId,
        condition,
        { ...patch, composite: { ...state, lanes: state.lanes - 1 } },
        event,
      );
    return store.transitionNode(executionId, nodeId, condition, patch, event);
  });
}

/** Maps broken: a map's output (an inline array) is written in reverse item order. */
export function mapOutputReversed(store: Store): Store {
  return overrideTransition(store, (executionId, nodeId, condition, patch, event) => {
    const output = patch.output;
    if (patch.status === "COMPLETED" && nodeId.endsWith("-map") && output && "json" in output) {
      const value = JSON.parse(output.json) as unknown;
      if (Array.isArray(value))
        return store.transitionNode(
          executionId,
          nodeId,
          condition,
          { ...patch, output: { json: JSON.stringify(value.reverse()) } },
          event,
        );
    }
    return store.transitionNode(executionId, nodeId, condition, patch, event);
  });
}

/** Child workflows broken: a `workflow` node completes with null, not its child's output. */
export function childOutputDropped(store: Store): Store {
  return overrideTransition(store, (executionId, nodeId, condition, patch, event) =>
    store.transitionNode(
      executionId,
      nodeId,
      condition,
      patch.status === "COMPLETED" && nodeId.endsWith("-child") ? { ...patch, output: NULL_PAYLOAD } : patch,
      event,
    ),
  );
}

/** Child workflows broken: a child is created one level deep whatever its parent's depth (no limit bites). */
export function childDepthLost(store: Store): Store {
  return overrideCreate(store, (record, event, keyed, budget) =>
    store.createExecution(record.parent ? { ...record, depth: 1 } : record, event, keyed, budget),
  );
}

/** Fan-out budget broken: a child is created without being counted against its root (no limit bites). */
export function descendantsUncounted(store: Store): Store {
  return overrideCreate(store, (record, event, keyed) => store.createExecution(record, event, keyed));
}

/** Fan-out budget broken: a map's lanes are never reserved (every reservation "fits"). */
export function reservationsUncounted(store: Store): Store {
  return overrideStore(store, "reserveMapItems", async () => ({ ok: true }) as const);
}

/** Fan-out budget broken: a map's reservation is never given back (acknowledged, yet still held). */
export function reservationsKept(store: Store): Store {
  return overrideStore(store, "releaseMapItems", async (reservation) => {
    const held = await store.listMapItemReservations(reservation.executionId);
    return held.some((r) => r.key === reservation.key && r.units === reservation.units);
  });
}

function overrideStore<K extends keyof Store>(store: Store, name: K, method: Store[K]): Store {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === name) return method;
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * External workers' limits broken: a take is conditioned on the worker's version as it is now, not
 * the one whose holds were counted, so two polls of one worker racing each other both get a task
 * past its maxParallel (or a node's maxParallelPerWorker).
 */
export function takeIgnoresWorkerVersion(store: Store): Store {
  return overrideStore(store, "takeTask", async (take) => {
    const worker = await store.getWorker(take.workerId);
    return store.takeTask({ ...take, workerVersion: worker?.version ?? take.workerVersion });
  });
}

/** Placement broken: an offer keeps only its pool, so any worker of the pool may take it. */
export function offersLoseRunsOn(store: Store): Store {
  return overrideStore(store, "offerTask", (task) =>
    store.offerTask({ ...task, runsOn: { pool: task.runsOn.pool } }),
  );
}

/**
 * Fencing of external workers' reports broken in the engine itself (planted above the audit, as
 * `WorldOptions.plantEngineStore`, so the audit records the writes as the engine made them): once
 * a node placed on workers was claimed again, the engine's reads of it answer the earlier worker's
 * attempt (a lagging replica read where a strong one was needed), so a zombie's stale token passes
 * the engine's check; and reports (completions, failures) are written without their token. A
 * zombie's report then ends the attempt another worker holds. (A store that only ignored the
 * token is never reached: the engine refuses a stale token before it writes.)
 */
export function staleTokenReports(store: Store, audit: AuditStore): Store {
  const unfenced = (condition: NodeCondition, patch: NodePatch): NodeCondition => {
    if (condition.leaseToken === undefined || (patch.status !== "COMPLETED" && patch.status !== "FAILED"))
      return condition;
    const { leaseToken: _ignored, ...rest } = condition;
    return rest;
  };
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === "transitionNode")
        return ((executionId, nodeId, condition, patch, event) =>
          store.transitionNode(
            executionId,
            nodeId,
            unfenced(condition, patch),
            patch,
            event,
          )) satisfies Store["transitionNode"];
      if (property === "failNode")
        return ((executionId, nodeId, condition, patch, event, options) =>
          store.failNode(
            executionId,
            nodeId,
            unfenced(condition, patch),
            patch,
            event,
            options,
          )) satisfies Store["failNode"];
      if (property === "getNode")
        return (async (executionId: string, nodeId: string) => {
          const current = await store.getNode(executionId, nodeId);
          const earlier = audit.nodeWrites.findLast(
            (w) =>
              w.executionId === executionId &&
              w.nodeId === nodeId &&
              w.before?.status === "RUNNING" &&
              w.before.lease?.workerId !== undefined &&
              w.after.lease?.token !== w.before.lease.token,
          )?.before;
          return current?.status === "RUNNING" && earlier && earlier.attempt < current.attempt
            ? structuredClone(earlier)
            : current;
        }) satisfies Store["getNode"];
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * Callbacks broken: a callback that times out is recorded COMPLETED (with null), as though it had
 * been settled — its timeout taken for a completion.
 */
export function timeoutsAsCompletions(store: Store): Store {
  const completed = (patch: NodePatch): NodePatch =>
    patch.error?.name === "CallbackTimedOut"
      ? {
          status: "COMPLETED",
          output: NULL_PAYLOAD,
          finishedAt: patch.finishedAt ?? patch.queuedAt ?? 0,
          lease: null,
          error: null,
        }
      : patch;
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === "transitionNode")
        return ((executionId, nodeId, condition, patch, event) =>
          store.transitionNode(
            executionId,
            nodeId,
            condition,
            completed(patch),
            event,
          )) satisfies Store["transitionNode"];
      if (property === "failNode")
        return ((executionId, nodeId, condition, patch, event, options) =>
          store.failNode(
            executionId,
            nodeId,
            condition,
            completed(patch),
            event,
            options,
          )) satisfies Store["failNode"];
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * History broken as it was (the issue): a node that never had a record is acknowledged CANCELLED
 * at its execution's end but never written, so the view shows it CANCELLED with no NodeCancelled.
 */
export function cancellationsUnwritten(store: Store): Store {
  return overrideTransition(store, async (executionId, nodeId, condition, patch, event) => {
    const unrecorded =
      patch.status === "CANCELLED" &&
      condition.attempt === 0 &&
      (await store.getNode(executionId, nodeId)) === undefined;
    if (unrecorded) return { ok: true, record: { ...pendingNode(executionId, nodeId), status: "CANCELLED" } };
    return store.transitionNode(executionId, nodeId, condition, patch, event);
  });
}

/**
 * History broken as it was (the issue): events keep their time but lose their `seq`, so the events
 * of one millisecond fall back to node-id order, whatever caused what.
 */
export function unsequencedHistory(store: Store): Store {
  const bare = ({ seq: _seq, ...event }: HistoryEvent): HistoryEvent => event;
  const bareAll = (events: HistoryEvent | readonly HistoryEvent[] | undefined) =>
    events === undefined
      ? undefined
      : Array.isArray(events)
        ? events.map(bare)
        : bare(events as HistoryEvent);
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === "createExecution")
        return ((record, event, keyed, budget) =>
          store.createExecution(record, bare(event), keyed, budget)) satisfies Store["createExecution"];
      if (property === "transitionExecution")
        return ((executionId, from, patch, event, guard) =>
          store.transitionExecution(
            executionId,
            from,
            patch,
            event && bare(event),
            guard,
          )) satisfies Store["transitionExecution"];
      if (property === "transitionNode")
        return ((executionId, nodeId, condition, patch, event) =>
          store.transitionNode(
            executionId,
            nodeId,
            condition,
            patch,
            bareAll(event),
          )) satisfies Store["transitionNode"];
      if (property === "failNode")
        return ((executionId, nodeId, condition, patch, event, options) =>
          store.failNode(
            executionId,
            nodeId,
            condition,
            patch,
            event && bareAll(event),
            options,
          )) satisfies Store["failNode"];
      if (property === "takeTask")
        return ((take) =>
          store.takeTask({
            ...take,
            claim: { ...take.claim, event: bare(take.claim.event) },
          })) satisfies Store["takeTask"];
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * Timers broken: the sweep's cursor moves an hour past the window it read, so the timers due in
 * that hour are never sent (sim/timer-invariants.ts [timer-lost]).
 */
export function timerCursorSkips(store: Store): Store {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === "advanceTimerCursor")
        return (cursor: Parameters<Store["advanceTimerCursor"]>[0]) =>
          store.advanceTimerCursor({ ...cursor, through: cursor.through + 3_600_000 });
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * Catch edges broken: a failure for good written as one the execution goes on from (caught by a
 * catch edge, or under `onError: "continue"`) marks the execution failed as an uncaught one does.
 */
export function caughtFailuresFailTheExecution(store: Store): Store {
  return overrideTransition(store, (executionId, nodeId, condition, patch, event) => {
    const nodeFailure = patch.status === "FAILED" && !nodeId.includes("[") && !nodeId.startsWith("$");
    return nodeFailure
      ? store.failNode(executionId, nodeId, condition, patch, event)
      : store.transitionNode(executionId, nodeId, condition, patch, event);
  });
}

/**
 * Execution variables' record of applied nodes lost to readers: a node run again (a duplicate
 * delivery, racing deciders, a redelivery after a crash) applies its `incr` again.
 */
export function forgetAppliedVariables(store: Store): Store {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === "getVariables")
        return async (executionId: string) => {
          const item = await target.getVariables(executionId);
          return item && { ...item, applied: "{}" };
        };
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * Loops broken: a loop of several iterations completes counting only those after the first (as an
 * engine counting its pauses, not its iterations, would): `{output, iterations: n − 1}`.
 */
export function loopCountsPauses(store: Store): Store {
  return overrideTransition(store, (executionId, nodeId, condition, patch, event) => {
    const output = patch.output;
    if (patch.status === "COMPLETED" && /^l\d+-loop$/.test(nodeId) && output && "json" in output) {
      const value = JSON.parse(output.json) as { output?: unknown; iterations?: unknown };
      if (typeof value.iterations === "number" && value.iterations > 1) {
        const miscounted = { json: JSON.stringify({ ...value, iterations: value.iterations - 1 }) };
        return store.transitionNode(executionId, nodeId, condition, { ...patch, output: miscounted }, event);
      }
    }
    return store.transitionNode(executionId, nodeId, condition, patch, event);
  });
}

/**
 * Concurrency slots broken: a write of a limit's state is taken whatever version it was read at, so
 * two attempts that read the last free slot both take it (sim/limit-invariants.ts).
 */
export function slotWritesAtAnyVersion(store: Store): Store {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === "putSlots")
        return async (
          slotKey: string,
          item: { version: number; state: string },
          _expected: number,
          now: number,
        ) => {
          const current = await target.getSlots(slotKey);
          return target.putSlots(slotKey, item, current?.version ?? 0, now);
        };
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
