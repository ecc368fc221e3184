/** Workflow definitions, fetched once per workflow version (they never change) and laid out once. */
import { call, type WorkflowResponse } from "./api.js";
import { type Layout, layoutFor } from "./graph/layout.js";

const definitions = new Map<string, Promise<WorkflowResponse>>();

/** A version's definition (the latest when `version` is absent, not cached then). */
export function definitionOf(name: string, version?: number): Promise<WorkflowResponse> {
  if (version === undefined) return call("getWorkflow", { name });
  const key = `${name}@${version}`;
  let found = definitions.get(key);
  if (found === undefined) {
    found = call("getWorkflow", { name }, { query: { version } });
    definitions.set(key, found);
    found.catch(() => definitions.delete(key));
  }
  return found;
}

export function layoutOf(workflow: WorkflowResponse): Promise<Layout> {
  return layoutFor(`${workflow.name}@${workflow.version}#${workflow.definitionHash}`, workflow.definition);
}
