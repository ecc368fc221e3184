/**
 * Planted bugs: store decorators that break one guarantee on purpose, so tests can prove the
 * invariant checker notices. Never used by a campaign.
 */
import { NULL_PAYLOAD } from "../shared/domain/payload.js";
import type { EngineOptions } from "../shared/engine/engine.js";
import type { BlobStore, Store } from "../shared/ports.js";

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

/** Fan-in broken: an `any`/`count:N` join's claim records one dependency fewer than its message carried. */
export function claimWithTooFewDeps(store: Store): Store {
  return overrideTransition(store, (executionId, nodeId, condition, patch, event) => {
    const claimFromPending = patch.status === "RUNNING" && condition.status.includes("PENDING");
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
  return overrideCreate(store, async (record, event, keyed) => {
    const key = record.idempotencyKey;
    const held = key === undefined ? undefined : byKey.get(key);
    const existing = held === undefined ? undefined : await store.getExecution(held);
    if (existing && keyed) return { created: false, existing, keyed };
    const result = await store.createExecution(record, event, keyed);
    if (result.created && key !== undefined) byKey.set(key, record.executionId);
    return result;
  });
}

/** Idempotency broken: a taken key answers as though its first request asked what this one does. */
export function sameRequestAlways(store: Store): Store {
  return overrideCreate(store, async (record, event, keyed) => {
    const result = await store.createExecution(record, event, keyed);
    return !result.created && keyed ? { ...result, keyed } : result;
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
  return overrideCreate(store, (record, event, keyed) =>
    store.createExecution(record.parent ? { ...record, depth: 1 } : record, event, keyed),
  );
}
