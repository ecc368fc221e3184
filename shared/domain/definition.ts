/**
 * The workflow definition format as a zod schema, with the limits weft enforces at submit.
 * Shape checks live here; graph checks (cycles, reachability, …) and expression checks live in
 * validate.ts. Version 2 of the format only adds optional fields (`when`, `onError`, `onFailure`,
 * `{% %}` expressions in params, `runsOn` and `heartbeatSeconds`), so every v1 definition is a v2
 * definition meaning the same.
 */
import * as z from "zod";
import { PLACEMENT_LIMITS, runsOnSchema } from "./placement.js";

export const LIMITS = {
  /** Largest DAG accepted. Every node is one DynamoDB item, so this bounds an execution's item count. */
  maxNodes: 2000,
  /** The serialized definition is stored in one item (≤ 400 KB), so stay well below that. */
  maxDefinitionBytes: 300 * 1024,
  maxIdLength: 64,
  maxNameLength: 80,
  maxDependsOn: 1000,
  maxAttempts: 100,
  /** A handler runs inside one Lambda invocation, which lasts at most 15 minutes. */
  maxNodeTimeoutSeconds: 900,
  maxExecutionTimeoutSeconds: 366 * 24 * 3600,
  maxExpressionLength: 4096,
} as const;

const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]*$/;
const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

export const nodeIdSchema = z
  .string()
  .min(1, "node id must not be empty")
  .max(LIMITS.maxIdLength, `node id must be at most ${LIMITS.maxIdLength} characters`)
  .regex(ID_PATTERN, "node id may use letters, digits, '-' and '_' and must start with a letter or digit");

export const workflowNameSchema = z
  .string()
  .min(1, "workflow name must not be empty")
  .max(LIMITS.maxNameLength, `workflow name must be at most ${LIMITS.maxNameLength} characters`)
  .regex(
    NAME_PATTERN,
    "workflow name may use letters, digits, '.', '-' and '_' and must start with a letter or digit",
  );

export const fanInSchema = z
  .string()
  .regex(/^(all|any|count:[1-9][0-9]*)$/, 'fanIn must be "all", "any" or "count:N" with N ≥ 1');

export const backoffSchema = z
  .object({
    initialSeconds: z.number().min(0).max(3600).optional(),
    maxSeconds: z
      .number()
      .min(0)
      .max(24 * 3600)
      .optional(),
    multiplier: z.number().min(1).max(10).optional(),
    jitter: z.enum(["full", "none"]).optional(),
  })
  .strict();

export const retrySchema = z
  .object({
    maxAttempts: z.number().int().min(1).max(LIMITS.maxAttempts).optional(),
    backoff: backoffSchema.optional(),
    nonRetryable: z.array(z.string().min(1).max(128)).max(50).optional(),
  })
  .strict();

/**
 * A JSONata expression, written as Step Functions writes them: the whole string is `{% … %}`
 * (domain/expressions.ts compiles and evaluates it).
 */
export const expressionSchema = z
  .string()
  .max(LIMITS.maxExpressionLength, `an expression must be at most ${LIMITS.maxExpressionLength} characters`)
  .regex(/^\{%[\s\S]*%\}$/, 'an expression is a string "{% … %}"');

/**
 * What a node's failure for good does: "fail" (the default) fails the execution at once;
 * "continue" leaves the node FAILED while the execution goes on, its dependants seeing
 * `deps[id] = {error: {name, message}}` and counting it as done for their fan-in.
 */
export const onErrorSchema = z.enum(["fail", "continue"]);

export const nodeDefinitionSchema = z
  .object({
    id: nodeIdSchema,
    type: z.string().min(1, "type must not be empty").max(64),
    description: z.string().max(1024).optional(),
    params: z.unknown().optional(),
    dependsOn: z.array(z.string()).max(LIMITS.maxDependsOn).optional(),
    fanIn: fanInSchema.optional(),
    retry: retrySchema.optional(),
    /**
     * Up to the Lambda's 900 s; up to a year for a node that runs on external workers (runsOn),
     * which must then heartbeat (validate.ts).
     */
    timeoutSeconds: z.number().int().min(1).max(PLACEMENT_LIMITS.maxExternalTimeoutSeconds).optional(),
    /** Run on external workers only (domain/placement.ts), never in the Lambda worker. */
    runsOn: runsOnSchema.optional(),
    /** An external worker heartbeats each attempt at least this often, or loses it. */
    heartbeatSeconds: z.number().int().min(1).max(PLACEMENT_LIMITS.maxHeartbeatSeconds).optional(),
    /** Evaluated when the node is ready; anything but true ends it SKIPPED without running. */
    when: expressionSchema.optional(),
    onError: onErrorSchema.optional(),
  })
  .strict();

/**
 * A handler run once when an execution fails (compensation, alerting), given the error and the
 * completed outputs; its outcome is recorded and never changes the execution's status.
 */
export const onFailureSchema = z
  .object({
    type: z.string().min(1, "type must not be empty").max(64),
    params: z.unknown().optional(),
    retry: retrySchema.optional(),
    timeoutSeconds: z.number().int().min(1).max(LIMITS.maxNodeTimeoutSeconds).optional(),
  })
  .strict();

export const workflowDefinitionSchema = z
  .object({
    name: workflowNameSchema,
    description: z.string().max(4096).optional(),
    defaults: z
      .object({
        timeoutSeconds: z.number().int().min(1).max(LIMITS.maxNodeTimeoutSeconds).optional(),
        retry: retrySchema.optional(),
      })
      .strict()
      .optional(),
    /** Whole-execution deadline; the sweeper fails executions that pass it. */
    timeoutSeconds: z.number().int().min(1).max(LIMITS.maxExecutionTimeoutSeconds).optional(),
    /** Publish node-level lifecycle events too (execution-level ones are always published). */
    events: z.object({ nodes: z.boolean().optional() }).strict().optional(),
    onFailure: onFailureSchema.optional(),
    nodes: z
      .array(nodeDefinitionSchema)
      .min(1, "a workflow needs at least one node")
      .max(LIMITS.maxNodes, `a workflow may have at most ${LIMITS.maxNodes} nodes`),
  })
  .strict();

export type WorkflowDefinition = z.infer<typeof workflowDefinitionSchema>;
export type NodeDefinition = z.infer<typeof nodeDefinitionSchema>;
export type RetryDefinition = z.infer<typeof retrySchema>;
export type OnError = z.infer<typeof onErrorSchema>;
export type OnFailureDefinition = z.infer<typeof onFailureSchema>;

export type FanIn = { kind: "all" } | { kind: "any" } | { kind: "count"; n: number };

export function parseFanIn(text: string | undefined): FanIn {
  if (text === undefined || text === "all") return { kind: "all" };
  if (text === "any") return { kind: "any" };
  return { kind: "count", n: Number(text.slice("count:".length)) };
}

export function formatFanIn(fanIn: FanIn): string {
  return fanIn.kind === "count" ? `count:${fanIn.n}` : fanIn.kind;
}
