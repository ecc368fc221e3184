/** zod schemas of the HTTP API's requests (bodies and query strings) and the mapping of zod issues to details. */
import { z } from "zod";
import { workflowNameSchema } from "../../shared/domain/definition.js";
import type { ProblemDetail } from "../../shared/engine/errors.js";

const versionNumber = z.number().int("version must be a whole number").min(1, "version must be at least 1");

/** POST /executions */
export const createExecutionBodySchema = z
  .object({
    workflow: workflowNameSchema,
    version: versionNumber.optional(),
    input: z.unknown().optional(),
    start: z.boolean().default(true),
    idempotencyKey: z
      .string()
      .min(1, "idempotencyKey must not be empty")
      .max(256, "idempotencyKey must be at most 256 characters")
      .optional(),
  })
  .strict();
export type CreateExecutionBody = z.output<typeof createExecutionBodySchema>;

/** POST /executions/{id}/trigger (the body itself may be absent). */
export const triggerBodySchema = z
  .object({
    input: z.unknown().optional(),
  })
  .strict();
export type TriggerBody = z.output<typeof triggerBodySchema>;

/** GET /workflows/{name}?version=N (unknown query parameters are ignored). */
export const getWorkflowQuerySchema = z.object({
  version: z
    .string()
    .regex(/^[1-9][0-9]{0,8}$/, "version must be a positive whole number")
    .transform(Number)
    .optional(),
});
export type GetWorkflowQuery = z.output<typeof getWorkflowQuerySchema>;

/**
 * Every zod issue as a detail `{path, code, message}`. An unknown key becomes one detail per key, with the
 * key's own path, so a client sees exactly which fields to remove. `prefix` marks where the value came from
 * (e.g. "query").
 */
export function issuesToDetails(issues: readonly z.core.$ZodIssue[], prefix?: string): ProblemDetail[] {
  const join = (path: readonly PropertyKey[]) =>
    [...(prefix === undefined ? [] : [prefix]), ...path.map((part) => String(part))].join(".");
  const details: ProblemDetail[] = [];
  for (const issue of issues) {
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) {
        details.push({
          path: join([...issue.path, key]),
          code: issue.code,
          message: `unknown field "${key}"`,
        });
      }
    } else {
      details.push({ path: join(issue.path), code: issue.code, message: issue.message });
    }
  }
  return details;
}
