/**
 * The workflow definition format as a zod schema, with the limits weft enforces at submit.
 * Shape checks live here; graph checks (cycles, reachability, …) and expression checks live in
 * validate.ts. Version 2 of the format only adds optional fields (`when`, `onError`, `onFailure`,
 * `{% %}` expressions in params, `runsOn` and `heartbeatSeconds`), so every v1 definition is a v2
 * definition meaning the same.
 */
import { EDGE_KINDS } from "./edges.js";
import { PLACEMENT_LIMITS, runsOnSchema } from "./placement.js";
import { rateLimitSchema } from "./rate.js";
import { concurrencySchema } from "./slots.js";
import { assignSchema } from "./vars.js";
import * as z from "./zod.js";

export const LIMITS = {
  /** Largest DAG accepted. Every node is one DynamoDB item, so this bounds an execution's item count. */
  maxNodes: 2000,
  /** The serialized definition is stored in one item (≤ 400 KB), so stay well below that. */
  maxDefinitionBytes: 300 * 1024,
  maxIdLength: 64,
  maxNameLength: 80,
  maxDependsOn: 1000,
  maxAttempts: 100,
  /** A `retry` list's retriers, and the error names a retrier, `retryOn` or `nonRetryable` lists. */
  maxRetriers: 20,
  maxErrorNames: 50,
  maxErrorNameLength: 128,
  /** A handler runs inside one Lambda invocation, which lasts at most 15 minutes. */
  maxNodeTimeoutSeconds: 900,
  maxExecutionTimeoutSeconds: 366 * 24 * 3600,
  maxExpressionLength: 4096,
} as const;

const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]*$/;
const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

export const nodeIdSchema = z
  .string()
  .check(
    z.minLength(1, "node id must not be empty"),
    z.maxLength(LIMITS.maxIdLength, `node id must be at most ${LIMITS.maxIdLength} characters`),
    z.regex(ID_PATTERN, "node id may use letters, digits, '-' and '_' and must start with a letter or digit"),
  );

export const workflowNameSchema = z
  .string()
  .check(
    z.minLength(1, "workflow name must not be empty"),
    z.maxLength(LIMITS.maxNameLength, `workflow name must be at most ${LIMITS.maxNameLength} characters`),
    z.regex(
      NAME_PATTERN,
      "workflow name may use letters, digits, '.', '-' and '_' and must start with a letter or digit",
    ),
  );

export const fanInSchema = z
  .string()
  .check(z.regex(/^(all|any|count:[1-9][0-9]*)$/, 'fanIn must be "all", "any" or "count:N" with N ≥ 1'));

export const backoffSchema = z.strictObject({
  initialSeconds: z.optional(z.number().check(z.gte(0), z.lte(3600))),
  maxSeconds: z.optional(z.number().check(z.gte(0), z.lte(24 * 3600))),
  multiplier: z.optional(z.number().check(z.gte(1), z.lte(10))),
  jitter: z.optional(z.enum(["full", "none"])),
});

/** Error names a retrier or a catch edge matches: a task error's `name` or `code`, or "*" for any. */
const errorNameSchema = z.string().check(z.minLength(1), z.maxLength(LIMITS.maxErrorNameLength));

export const errorNamesSchema = z
  .array(errorNameSchema)
  .check(z.minLength(1, 'list at least one error name (or "*")'), z.maxLength(LIMITS.maxErrorNames));

/** The object form: one policy for every error but `nonRetryable` (or only `retryOn`'s). */
export const retryPolicySchema = z.strictObject({
  maxAttempts: z.optional(z.number().check(z.int(), z.gte(1), z.lte(LIMITS.maxAttempts))),
  backoff: z.optional(backoffSchema),
  nonRetryable: z.optional(z.array(errorNameSchema).check(z.maxLength(LIMITS.maxErrorNames))),
  /** The allow-list shorthand: only these errors are retried. */
  retryOn: z.optional(errorNamesSchema),
});

/** One retrier of the list form: the errors it retries, and how. */
export const retrierSchema = z.strictObject({
  errors: errorNamesSchema,
  maxAttempts: z.optional(z.number().check(z.int(), z.gte(1), z.lte(LIMITS.maxAttempts))),
  backoff: z.optional(backoffSchema),
});

/**
 * `retry`: the object form, or a list of retriers of which the first whose `errors` match a failure
 * decides it (an error no retrier matches is not retried), as Step Functions' Retry.
 */
export const retrySchema = z.union(
  [
    retryPolicySchema,
    z
      .array(retrierSchema)
      .check(z.minLength(1, "a retry list needs at least one retrier"), z.maxLength(LIMITS.maxRetriers)),
  ],
  {
    error:
      "retry is an object {maxAttempts?, backoff?, nonRetryable?, retryOn?} or a list of retriers [{errors, maxAttempts?, backoff?}], each naming the errors it retries",
  },
);

/**
 * A JSONata expression, written as Step Functions writes them: the whole string is `{% … %}`
 * (domain/expressions.ts compiles and evaluates it).
 */
export const expressionSchema = z
  .string()
  .check(
    z.maxLength(
      LIMITS.maxExpressionLength,
      `an expression must be at most ${LIMITS.maxExpressionLength} characters`,
    ),
    z.regex(/^\{%[\s\S]*%\}$/, 'an expression is a string "{% … %}"'),
  );

/**
 * What a node's failure for good does: "fail" (the default) fails the execution at once;
 * "continue" leaves the node FAILED while the execution goes on, its dependants seeing
 * `deps[id] = {error: {name, message}}` and counting it as done for their fan-in.
 */
export const onErrorSchema = z.enum(["fail", "continue"]);

/**
 * A `dependsOn` entry: a node id, taken when it succeeds, or an edge `{node, on, errors?}` taken on
 * its success, its failure for good (a catch edge, matching `errors` when given) or always.
 */
export const dependencySchema = z.union(
  [
    z.string(),
    z.strictObject({
      node: z.string(),
      on: z.enum(EDGE_KINDS),
      errors: z.optional(errorNamesSchema),
    }),
  ],
  { error: 'a dependsOn entry is a node id or {"node", "on": "success" | "failure" | "always", "errors"?}' },
);

export const nodeDefinitionSchema = z.strictObject({
  id: nodeIdSchema,
  type: z.string().check(z.minLength(1, "type must not be empty"), z.maxLength(64)),
  description: z.optional(z.string().check(z.maxLength(1024))),
  params: z.optional(z.unknown()),
  /** Node ids (success edges), or catch edges `{node, on, errors?}` (domain/edges.ts). */
  dependsOn: z.optional(z.array(dependencySchema).check(z.maxLength(LIMITS.maxDependsOn))),
  fanIn: z.optional(fanInSchema),
  retry: z.optional(retrySchema),
  /**
   * Up to the Lambda's 900 s; up to a year for a node that runs on external workers (runsOn),
   * which must then heartbeat (validate.ts).
   */
  timeoutSeconds: z.optional(
    z.number().check(z.int(), z.gte(1), z.lte(PLACEMENT_LIMITS.maxExternalTimeoutSeconds)),
  ),
  /** Run on external workers only (domain/placement.ts), never in the Lambda worker. */
  runsOn: z.optional(runsOnSchema),
  /** An external worker heartbeats each attempt at least this often, or loses it. */
  heartbeatSeconds: z.optional(
    z.number().check(z.int(), z.gte(1), z.lte(PLACEMENT_LIMITS.maxHeartbeatSeconds)),
  ),
  /** Evaluated when the node is ready; anything but true ends it SKIPPED without running. */
  when: z.optional(expressionSchema),
  onError: z.optional(onErrorSchema),
  /**
   * Variables set once the node completes (domain/vars.ts): each key a path, each value a value or
   * an expression over the node's scope with its output as `$output`.
   */
  assign: z.optional(assignSchema),
  /**
   * At most `limit` attempts of the node run at once per value of `key` (domain/slots.ts); the
   * others wait QUEUED, granted fairly across key values, holding no worker.
   */
  concurrency: z.optional(concurrencySchema),
});

/**
 * A handler run once when an execution fails (compensation, alerting), given the error and the
 * completed outputs; its outcome is recorded and never changes the execution's status.
 */
export const onFailureSchema = z.strictObject({
  type: z.string().check(z.minLength(1, "type must not be empty"), z.maxLength(64)),
  params: z.optional(z.unknown()),
  retry: z.optional(retrySchema),
  timeoutSeconds: z.optional(z.number().check(z.int(), z.gte(1), z.lte(LIMITS.maxNodeTimeoutSeconds))),
});

export const workflowDefinitionSchema = z.strictObject({
  name: workflowNameSchema,
  description: z.optional(z.string().check(z.maxLength(4096))),
  defaults: z.optional(
    z.strictObject({
      timeoutSeconds: z.optional(z.number().check(z.int(), z.gte(1), z.lte(LIMITS.maxNodeTimeoutSeconds))),
      retry: z.optional(retrySchema),
    }),
  ),
  /** Whole-execution deadline; the sweeper fails executions that pass it. */
  timeoutSeconds: z.optional(z.number().check(z.int(), z.gte(1), z.lte(LIMITS.maxExecutionTimeoutSeconds))),
  /**
   * At most `limit` starts every `periodSeconds` per value of `key` (domain/rate.ts): a start past it
   * is refused with 429 and Retry-After, creating nothing.
   */
  rateLimit: z.optional(rateLimitSchema),
  /** Publish node-level lifecycle events too (execution-level ones are always published). */
  events: z.optional(z.strictObject({ nodes: z.optional(z.boolean()) })),
  onFailure: z.optional(onFailureSchema),
  nodes: z
    .array(nodeDefinitionSchema)
    .check(
      z.minLength(1, "a workflow needs at least one node"),
      z.maxLength(LIMITS.maxNodes, `a workflow may have at most ${LIMITS.maxNodes} nodes`),
    ),
});

export type WorkflowDefinition = z.infer<typeof workflowDefinitionSchema>;
export type NodeDefinition = z.infer<typeof nodeDefinitionSchema>;
export type RetryDefinition = z.infer<typeof retrySchema>;
export type RetryPolicyDefinition = z.infer<typeof retryPolicySchema>;
export type RetrierDefinition = z.infer<typeof retrierSchema>;
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
