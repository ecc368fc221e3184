/**
 * The `workflow` built-in type: a node that runs another workflow as a child execution and waits
 * for it holding no worker (engine/children.ts). One child per attempt (its idempotency key is the
 * attempt's), so a retry starts a new child and a redelivery finds the one it started.
 */
import { workflowNameSchema } from "./definition.js";
import * as z from "./zod.js";

export const CHILD_LIMITS = {
  /** How deep executions may nest (a parent at depth 8 may not start a child). */
  maxDepth: 8,
} as const;

export const childWorkflowParamsSchema = z.strictObject({
  /** The workflow to run (a `{% %}` expression is allowed: checked when the node runs). */
  name: z.union([workflowNameSchema, z.string().check(z.regex(/^\{%[\s\S]*%\}$/))]),
  /** A registered version (default: the latest when the node runs). */
  version: z.optional(z.number().check(z.int(), z.gte(1))),
  /** The child's input (default: null); expressions as in any params. */
  input: z.optional(z.unknown()),
});

export type ChildWorkflowParams = z.output<typeof childWorkflowParamsSchema>;

/** The child's idempotency key: one child per attempt of the parent's node. */
export function childKey(parentExecutionId: string, nodeId: string, attempt: number): string {
  return `child:${parentExecutionId}:${nodeId}:${attempt}`;
}
