/**
 * `metrics.aggregate`: sum, min, max, avg and count of a number in each dependency's output, run
 * inside the engine with no queue hop (a coordinator function, as seed 003 named them).
 *
 * `field` is a path of object keys joined with `.` into each output (absent: the output itself).
 * Only numbers count: a dependency whose output has no number there (missing, null, a string, an
 * object) is skipped and listed in `skipped`, so a partial result says which inputs it left out.
 */
import * as z from "../domain/zod.js";
import { defineTask } from "./task-type.js";

export const AGGREGATE_OPS = ["sum", "min", "max", "avg", "count"] as const;
type AggregateOp = (typeof AGGREGATE_OPS)[number];

const paramsSchema = z.strictObject({
  field: z.optional(z.string().check(z.maxLength(512))),
  /** Default: all five. */
  ops: z.optional(z.array(z.enum(AGGREGATE_OPS)).check(z.minLength(1), z.maxLength(AGGREGATE_OPS.length))),
});

function at(value: unknown, path: readonly string[]): unknown {
  let current = value;
  for (const key of path) {
    if (typeof current !== "object" || current === null || Array.isArray(current)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

export type AggregateOutput = Partial<Record<AggregateOp, number | null>> & { skipped: string[] };

/** The aggregate of `deps` (by node id, in id order so `skipped` does not depend on arrival order). */
export function aggregate(
  deps: Record<string, unknown>,
  field: string | undefined,
  ops: readonly AggregateOp[] = AGGREGATE_OPS,
): AggregateOutput {
  const path = field === undefined || field === "" ? [] : field.split(".");
  const numbers: number[] = [];
  const skipped: string[] = [];
  for (const id of Object.keys(deps).sort()) {
    const value = at(deps[id], path);
    if (typeof value === "number" && Number.isFinite(value)) numbers.push(value);
    else skipped.push(id);
  }
  const sum = numbers.reduce((a, b) => a + b, 0);
  const empty = numbers.length === 0;
  const all: Record<AggregateOp, number | null> = {
    sum,
    count: numbers.length,
    min: empty ? null : Math.min(...numbers),
    max: empty ? null : Math.max(...numbers),
    avg: empty ? null : sum / numbers.length,
  };
  const output: AggregateOutput = { skipped };
  for (const op of ops) output[op] = all[op];
  return output;
}

export const metricsAggregateTask = defineTask({
  type: "metrics.aggregate",
  params: z.optional(paramsSchema),
  inline: true,
  expectedMs: () => 0,
  run: ({ params, deps }) => aggregate(deps, params?.field, params?.ops),
});
