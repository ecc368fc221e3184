/**
 * Execution variables in the simulation: worlds whose workflows carry `vars` nodes incrementing one
 * counter (`hits`), and the invariant that an increment counts once, whatever the duplicate
 * deliveries, crashes, redeliveries and redrives of the world:
 *  - the counter equals the number of incr nodes whose operation the variables record as applied
 *    (each adds 1) [vars-once];
 *  - every COMPLETED incr node's operation is recorded, with the output it completed with, and the
 *    recorded values are distinct (each increment saw its own count) [vars-once].
 * A node may have applied its operation and still end CANCELLED (its execution ended between the
 * write and its completion): applied, not completed, and still counted once.
 */
import type { WorkflowDefinition } from "../shared/domain/definition.js";
import { Payloads } from "../shared/engine/payloads.js";
import type { BlobStore, Store } from "../shared/ports.js";
import type { Violation } from "./invariants.js";
import type { Rng } from "./prng.js";

export const COUNTER = "hits";

/** A `vars` node adding 1 to the counter, after `parent`. */
function incrNode(id: string, parent: string | undefined) {
  return {
    id,
    type: "vars",
    ...(parent === undefined ? {} : { dependsOn: [parent] }),
    params: { op: "incr", path: COUNTER, by: 1 },
  };
}

/** `definition` with 1–5 incr nodes, each after a node drawn from it (or an entry). */
export function withIncrNodes(definition: WorkflowDefinition, rng: Rng): WorkflowDefinition {
  const ids = definition.nodes.map((node) => node.id);
  const count = rng.int(1, 5);
  const added = Array.from({ length: count }, (_, i) =>
    incrNode(`v${i}-incr`, rng.chance(0.15) ? undefined : rng.pick(ids)),
  );
  return { ...definition, nodes: [...definition.nodes, ...added] } as WorkflowDefinition;
}

const isIncr = (definition: WorkflowDefinition, nodeId: string) =>
  definition.nodes.some((node) => node.id === nodeId && node.type === "vars");

export async function checkVariables(
  store: Store,
  blobs: BlobStore,
  definitions: ReadonlyMap<string, WorkflowDefinition>,
): Promise<Violation[]> {
  const loader = new Payloads(blobs);
  const violations: Violation[] = [];
  let next: string | undefined;
  do {
    const page = await store.listExecutions({ limit: 200, ...(next ? { next } : {}) });
    for (const execution of page.items) {
      const definition = definitions.get(execution.workflow);
      if (!definition?.nodes.some((node) => node.type === "vars")) continue;
      const id = execution.executionId;
      const v = (message: string, nodeId?: string) =>
        violations.push({ rule: "vars-once", executionId: id, ...(nodeId ? { nodeId } : {}), message });
      const item = await store.getVariables(id);
      const document = item ? (JSON.parse(item.document) as Record<string, unknown>) : {};
      const applied = item ? (JSON.parse(item.applied) as Record<string, { a: number; r: unknown }>) : {};
      const appliedIncrs = Object.keys(applied).filter((nodeId) => isIncr(definition, nodeId));
      const counter = document[COUNTER] ?? 0;
      if (counter !== appliedIncrs.length)
        v(`the counter is ${JSON.stringify(counter)}, but ${appliedIncrs.length} incr nodes applied theirs`);
      const values = appliedIncrs.map((nodeId) => (applied[nodeId]?.r as { value?: unknown })?.value);
      if (new Set(values).size !== values.length)
        v(`two increments recorded the same count: ${JSON.stringify(values)}`);
      for (const record of await store.listNodes(id)) {
        if (!isIncr(definition, record.nodeId) || record.status !== "COMPLETED") continue;
        const entry = applied[record.nodeId];
        if (!entry) {
          v("COMPLETED, but its operation is not recorded as applied", record.nodeId);
          continue;
        }
        const output = record.output === undefined ? undefined : await loader.load(record.output);
        if (JSON.stringify(output) !== JSON.stringify(entry.r))
          v(
            `output ${JSON.stringify(output)}, but its operation recorded ${JSON.stringify(entry.r)}`,
            record.nodeId,
          );
      }
    }
    next = page.next;
  } while (next);
  return violations;
}
