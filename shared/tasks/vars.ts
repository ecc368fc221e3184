/**
 * The `vars` task type: one operation on its execution's variables (set, merge, incr, unset;
 * domain/vars.ts), run inside the engine with no queue hop and applied once per node
 * (engine/vars.ts). Its output is the operation's result (`{"value": n}` for incr).
 */
import { detailCode, staticVarsProblems, VARS_TASK_TYPE, varsParamsSchema } from "../domain/vars.js";
import * as z from "../domain/zod.js";
import { TerminalError } from "./errors.js";
import { defineTask } from "./task-type.js";

/**
 * Registration's stricter rule: the operation's limits, on what is known before it runs (values
 * given by an expression are checked when the node runs). Each refusal keeps its own code.
 */
const registrationParams = varsParamsSchema.check(
  z.superRefine((op, ctx) => {
    for (const problem of staticVarsProblems(op))
      ctx.addIssue({
        code: "custom",
        message: problem.message,
        path: problem.field === "" ? [] : fieldKeys(problem.field),
        params: { detailCode: detailCode(problem.code) },
      });
  }),
);

/** `values["a.b"]` → ["values", "a.b"]; `paths[2]` → ["paths", 2]. */
function fieldKeys(field: string): Array<string | number> {
  const keys: Array<string | number> = [];
  for (const match of field.matchAll(/([A-Za-z_$][A-Za-z0-9_$]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]/g)) {
    if (match[1] !== undefined) keys.push(match[1]);
    else if (match[2] !== undefined) keys.push(Number(match[2]));
    else if (match[3] !== undefined) keys.push(JSON.parse(match[3]) as string);
  }
  return keys;
}

export const varsTask = defineTask({
  type: VARS_TASK_TYPE,
  params: varsParamsSchema,
  registrationParams,
  inline: true,
  expectedMs: () => 0,
  run: ({ params, context }) => {
    if (!context.variables)
      throw new TerminalError("a vars node runs inside the engine, which gives it its execution's variables");
    return context.variables.apply(params);
  },
});
