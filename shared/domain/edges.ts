/**
 * Dependency edges and catch edges. A `dependsOn` entry is a node id (an edge taken when the parent
 * succeeds) or `{node, on, errors?}`: `on: "failure"` is taken when the parent fails for good with
 * an error its `errors` match (any, without them), `on: "always"` on either. A parent's failure that
 * some child's edge takes is **caught**: the execution goes on, the children on its success edges
 * are skipped, and those whose edge does not take that error are skipped too.
 *
 * Pure: the engine asks `edgeOutcome` how a parent's end counts for one child, and `isCaught`
 * whether a failure fails the execution.
 */
import type { NodeDefinition, OnError } from "./definition.js";
import { matchesError } from "./error-names.js";
import type { DependencyOutcome } from "./fan-in.js";
import type { ErrorInfo, NodeStatus } from "./records.js";

export const EDGE_KINDS = ["success", "failure", "always"] as const;
export type EdgeKind = (typeof EDGE_KINDS)[number];

/** How a child depends on one parent. */
export interface Edge {
  on: EdgeKind;
  /** Error names (or codes, "*") a `failure`/`always` edge takes; every error without them. */
  errors?: readonly string[];
}

export const SUCCESS_EDGE: Readonly<Edge> = Object.freeze({ on: "success" });

/** A `dependsOn` entry as the definition gives it. */
export type DependencyEntry = string | { node: string; on: EdgeKind; errors?: string[] | undefined };

/** The parent a `dependsOn` entry names. */
export function dependencyId(entry: DependencyEntry): string {
  return typeof entry === "string" ? entry : entry.node;
}

/** The edge a `dependsOn` entry makes (a plain id: a success edge). */
export function edgeOf(entry: DependencyEntry): Edge {
  if (typeof entry === "string" || entry.on === "success") return SUCCESS_EDGE;
  return entry.errors === undefined ? { on: entry.on } : { on: entry.on, errors: [...entry.errors] };
}

/** The ids a node depends on, in `dependsOn` order. */
export function dependencyIds(node: Pick<NodeDefinition, "dependsOn">): string[] {
  return (node.dependsOn ?? []).map(dependencyId);
}

/** Whether an edge takes a failure with this error. */
export function takesFailure(edge: Edge, error: Pick<ErrorInfo, "name" | "code"> | undefined): boolean {
  if (edge.on === "success") return false;
  return edge.errors === undefined || matchesError(edge.errors, error ?? { name: "Error" });
}

/** The parent's side of the edges to its children: what a failure of it needs to be caught. */
export interface ParentSide {
  onError: OnError;
  /** The edges of its children that may take a failure (`failure`/`always`). */
  catchEdges: readonly Edge[];
}

/** Whether a failure of the parent is caught: some child's edge takes it. */
export function isCaught(parent: ParentSide, error: Pick<ErrorInfo, "name" | "code"> | undefined): boolean {
  return parent.catchEdges.some((edge) => takesFailure(edge, error));
}

/**
 * Whether the execution goes on after the parent failed for good with `error`: under `onError:
 * "continue"`, or when a child's catch edge takes it.
 */
export function failureGoesOn(
  parent: ParentSide,
  error: Pick<ErrorInfo, "name" | "code"> | undefined,
): boolean {
  return parent.onError === "continue" || isCaught(parent, error);
}

/**
 * How a parent's end counts for one child over `edge` (domain/fan-in.ts): "done" (the child takes
 * it: a completion on a success or always edge, a failure the edge takes, any failure under
 * `onError: "continue"`), "skipped" (the path not taken: a completion on a failure edge, a caught
 * failure on an edge that does not take it, a skipped parent), "bad" (a failure nobody catches, a
 * cancellation), or "open".
 */
export function edgeOutcome(
  status: NodeStatus | undefined,
  error: Pick<ErrorInfo, "name" | "code"> | undefined,
  parent: ParentSide,
  edge: Edge,
): DependencyOutcome {
  switch (status) {
    case "COMPLETED":
      return edge.on === "failure" ? "skipped" : "done";
    case "SKIPPED":
      return "skipped";
    case "FAILED":
      if (parent.onError === "continue") return "done";
      if (takesFailure(edge, error)) return "done";
      return isCaught(parent, error) ? "skipped" : "bad";
    case "CANCELLED":
      return "bad";
    default:
      return "open";
  }
}

/** A catch edge's condition: its dependant runs on the parent's failure (of these errors), or either way. */
export interface CatchCondition {
  on: "failure" | "always";
  errors?: readonly string[];
}

/** Each `dependsOn` entry of a node: the parent, and a catch edge's condition (none on success). */
export function edgeConditions(
  node: Pick<NodeDefinition, "dependsOn">,
): Array<{ from: string; condition?: CatchCondition }> {
  return (node.dependsOn ?? []).map((entry) => {
    const edge = edgeOf(entry);
    if (edge.on === "success") return { from: dependencyId(entry) };
    const condition: CatchCondition =
      edge.errors === undefined ? { on: edge.on } : { on: edge.on, errors: edge.errors };
    return { from: dependencyId(entry), condition };
  });
}

/** A `dependsOn` entry as the CLI and the console name it: `charge`, `charge (on failure: Declined)`. */
export function dependencyLabel(entry: DependencyEntry): string {
  if (typeof entry === "string" || entry.on === "success") return dependencyId(entry);
  return `${entry.node} (on ${entry.on}${entry.errors === undefined ? "" : `: ${entry.errors.join(", ")}`})`;
}
