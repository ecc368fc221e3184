/**
 * Catch edges as the simulation's reference and invariants read them, written apart from the
 * engine's domain/edges.ts (a checker that shared the engine's code would share its bugs):
 * - a `dependsOn` entry `{node, on: "failure" | "always", errors?}` takes that node's failure for
 *   good when `errors` is absent or names the error (or "*");
 * - a failure some child's entry takes is caught: the execution goes on;
 * - for each child, a parent's end is done (taken), skipped (the path not taken) or bad.
 */
import type { WorkflowDefinition } from "../shared/domain/definition.js";
import type { NodeStatus } from "../shared/domain/records.js";

interface SimEdge {
  on: "success" | "failure" | "always";
  errors?: readonly string[] | undefined;
}

export type EdgeEnd = "done" | "skipped" | "bad" | "open";

export class CatchRules {
  /** child id → parent id → edge. */
  private readonly edges = new Map<string, Map<string, SimEdge>>();
  /** parent id → the non-success edges of its children. */
  private readonly catchers = new Map<string, SimEdge[]>();
  private readonly onError = new Map<string, string>();

  constructor(definition: Pick<WorkflowDefinition, "nodes">) {
    for (const node of definition.nodes) {
      this.onError.set(node.id, node.onError ?? "fail");
      const byParent = new Map<string, SimEdge>();
      for (const entry of node.dependsOn ?? []) {
        const edge: SimEdge =
          typeof entry === "string" ? { on: "success" } : { on: entry.on, errors: entry.errors };
        const parent = typeof entry === "string" ? entry : entry.node;
        byParent.set(parent, edge);
        if (edge.on !== "success") this.catchers.set(parent, [...(this.catchers.get(parent) ?? []), edge]);
      }
      this.edges.set(node.id, byParent);
    }
  }

  /** Whether any node of the workflow has a catch edge. */
  get any(): boolean {
    return this.catchers.size > 0;
  }

  private takes(edge: SimEdge, errorName: string | undefined): boolean {
    if (edge.on === "success") return false;
    if (edge.errors === undefined) return true;
    return edge.errors.some((name) => name === "*" || name === errorName);
  }

  /** A failure of `parentId` with this error is caught by one of its children's edges. */
  caught(parentId: string, errorName: string | undefined): boolean {
    return (this.catchers.get(parentId) ?? []).some((edge) => this.takes(edge, errorName));
  }

  /** Its failure for good with this error leaves the execution running. */
  goesOn(nodeId: string, errorName: string | undefined): boolean {
    return this.onError.get(nodeId) === "continue" || this.caught(nodeId, errorName);
  }

  /** Whether `childId` takes the failure of `parentId` through its own catch edge. */
  takenBy(childId: string, parentId: string, errorName: string | undefined): boolean {
    const edge = this.edges.get(childId)?.get(parentId);
    return edge !== undefined && this.takes(edge, errorName);
  }

  /** How `parentId` ending so counts for `childId`. */
  endFor(parentId: string, childId: string, status: NodeStatus | undefined, errorName?: string): EdgeEnd {
    const edge = this.edges.get(childId)?.get(parentId) ?? { on: "success" };
    switch (status) {
      case "COMPLETED":
        return edge.on === "failure" ? "skipped" : "done";
      case "SKIPPED":
        return "skipped";
      case "FAILED":
        if (this.onError.get(parentId) === "continue" || this.takes(edge, errorName)) return "done";
        return this.caught(parentId, errorName) ? "skipped" : "bad";
      case "CANCELLED":
        return "bad";
      default:
        return "open";
    }
  }
}
