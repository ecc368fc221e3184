/**
 * What a running execution waits on, for the driver's stop rule and for the error a test gets when
 * its execution cannot end by itself: its unfinished nodes (and those of its child executions, which
 * it waits for), with the callbacks among them, their tokens and when they time out.
 */
import { callbackToken } from "../shared/domain/attempt-token.js";
import { callbackDueAt } from "../shared/domain/callback.js";
import type { ExecutionRecord, NodeRecord, NodeStatus } from "../shared/domain/records.js";
import { isTerminalNode } from "../shared/domain/states.js";
import type { Engine } from "../shared/engine/engine.js";
import type { Store } from "../shared/ports.js";

/** An unfinished node of an execution (or of a child execution it waits for). */
export interface WaitingNode {
  executionId: string;
  nodeId: string;
  /** Its task type (`callback` for a map's item waiting for its callback). */
  type: string;
  status: NodeStatus;
  attempt: number;
  /** A callback waiting for its settlement: the token that settles it… */
  callbackToken?: string;
  /** …and when it times out (or misses its heartbeat): epoch ms, virtual. */
  dueAt?: number;
}

const PAGE = 100;

/** The execution and the running executions under it (children, grandchildren…). */
export async function executionTree(store: Store, rootId: string): Promise<ExecutionRecord[]> {
  const root = await store.getExecution(rootId);
  if (!root) return [];
  const running: ExecutionRecord[] = [];
  let next: string | undefined;
  do {
    const page = await store.listExecutions({
      status: "RUNNING",
      limit: PAGE,
      ...(next === undefined ? {} : { next }),
    });
    running.push(...page.items);
    next = page.next;
  } while (next !== undefined);
  const parentOf = new Map(running.map((e) => [e.executionId, e.parent?.executionId]));
  const under = (id: string): boolean => {
    // Nesting is at most 8 deep (docs/language.md); the bound only guards against a cycle.
    let at: string | undefined = id;
    for (let depth = 0; at !== undefined && depth < 64; depth++) {
      if (at === rootId) return true;
      at = parentOf.get(at);
    }
    return false;
  };
  return [root, ...running.filter((e) => e.executionId !== rootId && under(e.executionId))];
}

/** The unfinished nodes of the execution and of the running executions under it. */
export async function waitingNodes(engine: Engine, store: Store, rootId: string): Promise<WaitingNode[]> {
  const waiting: WaitingNode[] = [];
  for (const execution of await executionTree(store, rootId)) {
    const { definition } = await engine.getWorkflow(execution.workflow, execution.version);
    const types = new Map(definition.nodes.map((node) => [node.id, node.type]));
    if (definition.onFailure) types.set("$onFailure", definition.onFailure.type);
    for (const record of await store.listNodes(execution.executionId)) {
      if (isTerminalNode(record.status)) continue;
      waiting.push(describe(execution, record, types.get(record.nodeId) ?? "?"));
      if (record.status === "RUNNING" && record.composite?.kind === "map") {
        // A map's items may be callbacks too: those waiting count as much as the map's own nodes.
        const items = await store.listMapItems(execution.executionId, record.nodeId, record.attempt);
        for (const item of items)
          if (item.composite?.kind === "callback" && item.status === "RUNNING")
            waiting.push(describe(execution, item, "callback"));
      }
    }
  }
  return waiting;
}

function describe(execution: ExecutionRecord, record: NodeRecord, type: string): WaitingNode {
  const node: WaitingNode = {
    executionId: execution.executionId,
    nodeId: record.nodeId,
    type,
    status: record.status,
    attempt: record.attempt,
  };
  if (record.status === "RUNNING" && record.composite?.kind === "callback" && record.lease) {
    node.callbackToken = callbackToken(execution.executionId, record.nodeId, record.attempt, record.lease);
    node.dueAt = callbackDueAt(record.composite);
  }
  return node;
}
