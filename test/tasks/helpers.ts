/** Runs one workflow on a test backend to its end and returns what the task tests inspect. */
import type { HistoryEvent } from "../../shared/domain/records.js";
import type { ExecutionView } from "../../shared/engine/views.js";
import type { Backend } from "../support/backends.js";
import { runToEnd } from "../support/harness.js";

export interface Finished {
  executionId: string;
  view: ExecutionView;
  history: HistoryEvent[];
  node(id: string): ExecutionView["nodes"][number];
}

export async function runWorkflow(
  backend: Backend,
  definition: { name: string } & Record<string, unknown>,
  input?: unknown,
): Promise<Finished> {
  const { engine, consumer, store } = backend;
  await engine.registerWorkflow(definition);
  const { executionId } = await engine.createExecution({ workflow: definition.name, input });
  await runToEnd(engine, consumer, store, executionId);
  const view = await engine.describeExecution(executionId);
  const history = await store.listHistory(executionId);
  return {
    executionId,
    view,
    history,
    node(id) {
      const found = view.nodes.find((n) => n.id === id);
      if (!found) throw new Error(`no node ${id} in ${JSON.stringify(view.nodes)}`);
      return found;
    },
  };
}

/** Quick retries so the tests do not wait on the default backoff. */
export const fastRetry = { maxAttempts: 3, backoff: { initialSeconds: 0.05, jitter: "none" } } as const;
