/** Store decorators that inject faults into the real engine in tests. */
import type { HistoryEvent } from "../../shared/domain/records.js";
import { HISTORY } from "../../shared/engine/lifecycle.js";
import type { NodeCondition, NodePatch, Store } from "../../shared/ports.js";

type TransitionNode = Store["transitionNode"];

/** Proxies a store, intercepting transitionNode; every other call goes straight through. */
export function interceptTransitions(
  store: Store,
  intercept: (
    call: {
      executionId: string;
      nodeId: string;
      condition: NodeCondition;
      patch: NodePatch;
      events: readonly HistoryEvent[];
    },
    proceed: () => ReturnType<TransitionNode>,
  ) => ReturnType<TransitionNode>,
): Store {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === "transitionNode") {
        return (...args: Parameters<TransitionNode>) => {
          const [executionId, nodeId, condition, patch, event] = args;
          const events = event === undefined ? [] : [event].flat();
          return intercept({ executionId, nodeId, condition, patch, events }, () =>
            target.transitionNode(...args),
          );
        };
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * Proxies a store, handing every method call to `intercept` with the method's name and arguments;
 * `proceed` makes the real call.
 */
export function interceptCalls(
  store: Store,
  intercept: (method: string, args: unknown[], proceed: () => unknown) => unknown,
): Store {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) =>
        intercept(String(property), args, () => (value as (...a: unknown[]) => unknown).apply(target, args));
    },
  });
}

/** A heartbeat is a RUNNING write that only extends the lease. */
export const isHeartbeat = (patch: NodePatch) => Object.keys(patch).length === 1 && patch.lease !== undefined;

export function latch(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Whether a node write carries its attempt's claim (its NodeStarted): the claim written before the
 * handler runs, or — a lazy claim (shared/engine/attempt-fence.ts) — with its first heartbeat or its
 * ending. Where a test crashes "the claim", this is the write.
 */
export function carriesClaim(call: { events: readonly HistoryEvent[] }): boolean {
  return call.events.some((e) => e.type === HISTORY.nodeStarted);
}
