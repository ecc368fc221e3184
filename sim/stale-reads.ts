/**
 * Eventually consistent reads, as a lagging DynamoDB replica answers them: with the world's chance,
 * such a read returns an item's version from before its latest write (none, for an item that write
 * created), item by item. Strong reads always see the latest version. Sits between the audit log
 * (which knows each earlier version) and the scheduler's gates.
 */
import type { Store } from "../shared/ports.js";
import type { AuditStore } from "./audit-store.js";
import type { Rng } from "./prng.js";

export function withStaleReads(audit: AuditStore, rng: Rng, chance: number): Store {
  if (chance === 0) return audit;
  const lags = () => rng.chance(chance);
  const getExecution: Store["getExecution"] = async (executionId, consistency) => {
    const earlier = consistency === "eventual" && lags() ? audit.earlierExecution(executionId) : undefined;
    return earlier ? structuredClone(earlier.record) : audit.getExecution(executionId, consistency);
  };
  const getNodes: Store["getNodes"] = async (executionId, nodeIds, consistency) => {
    const latest = await audit.getNodes(executionId, nodeIds, consistency);
    if (consistency !== "eventual") return latest;
    // A record missing now was missing before too: records are never deleted.
    return latest.flatMap((record) => {
      const earlier = lags() ? audit.earlierNode(executionId, record.nodeId) : undefined;
      if (!earlier) return [record];
      return earlier.record ? [structuredClone(earlier.record)] : [];
    });
  };
  return new Proxy(audit, {
    get: (target, property, receiver) =>
      property === "getExecution"
        ? getExecution
        : property === "getNodes"
          ? getNodes
          : Reflect.get(target, property, receiver),
  });
}
