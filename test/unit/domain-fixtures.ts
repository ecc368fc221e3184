/** Small task registry and definition builders for the domain unit tests. */
import { z } from "zod";
import type { WorkflowDefinition } from "../../shared/domain/definition.js";
import { defineTask, TaskRegistry, type TaskType } from "../../shared/tasks/task-type.js";

/**
 * TaskRegistry takes TaskType<never>, which no defined task is assignable to (`params: ZodType<P>`
 * is covariant in P), so the cast lives here until task-type.ts accepts any TaskType<P>.
 */
const entry = <P>(task: TaskType<P>) => task as unknown as TaskType<never>;

export function testTasks(): TaskRegistry {
  return new TaskRegistry([
    entry(defineTask({ type: "noop", params: z.unknown(), run: () => null })),
    entry(
      defineTask({
        type: "echo",
        params: z.object({ value: z.number() }).strict(),
        run: ({ params }) => params.value,
      }),
    ),
    entry(defineTask({ type: "merge", params: z.unknown(), inline: true, run: ({ deps }) => deps })),
  ]);
}

type NodeSpec = WorkflowDefinition["nodes"][number];

/** A "noop" node; `extra` overrides or adds fields. */
export function node(id: string, dependsOn?: string[], extra: Partial<NodeSpec> = {}): NodeSpec {
  return { id, type: "noop", ...(dependsOn ? { dependsOn } : {}), ...extra };
}

export function workflow(nodes: NodeSpec[], extra: Partial<WorkflowDefinition> = {}): WorkflowDefinition {
  return { name: "test-flow", ...extra, nodes };
}
