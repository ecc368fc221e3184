/** zod schemas of the HTTP API's requests: path parameters, bodies and query strings (contract.ts names the routes). */
import { workflowNameSchema } from "../domain/definition.js";
import { PAYLOAD_LIMITS, UPLOAD_PREFIX } from "../domain/payload.js";
import { PLACEMENT_LIMITS, workerIdSchema } from "../domain/placement.js";
import { EXECUTION_STATUSES } from "../domain/records.js";
import * as z from "../domain/zod.js";

/**
 * An execution id in a path: ids are the engine's own (UUIDs), so a longer one names nothing; the
 * bound keeps it within DynamoDB's key size, which would otherwise refuse the read as a fault.
 */
export const executionIdParamsSchema = z.object({
  id: z.string().check(z.minLength(1), z.maxLength(128, "an execution id is at most 128 characters")),
});

/** A workflow name in a path. */
export const workflowNameParamsSchema = z.object({ name: workflowNameSchema });

const versionNumber = z
  .number()
  .check(z.int("version must be a whole number"), z.gte(1, "version must be at least 1"));

/** An upload's reference, as `POST /payloads` answered it. */
const inputRefSchema = z
  .string()
  .check(
    z.regex(
      new RegExp(`^${UPLOAD_PREFIX}[A-Za-z0-9-]{1,64}$`),
      `inputRef must be a reference POST /payloads answered ("${UPLOAD_PREFIX}…")`,
    ),
  );

const oneInput = (value: { input?: unknown; inputRef?: string }) =>
  !(value.input !== undefined && value.inputRef !== undefined);
const ONE_INPUT = { message: "give either input or inputRef, not both", path: ["inputRef"] };

/** POST /executions */
export const createExecutionBodySchema = z
  .strictObject({
    workflow: workflowNameSchema,
    version: z.optional(versionNumber),
    input: z.optional(z.unknown()),
    inputRef: z.optional(inputRefSchema),
    start: z._default(z.boolean(), true),
    idempotencyKey: z.optional(
      z
        .string()
        .check(
          z.minLength(1, "idempotencyKey must not be empty"),
          z.maxLength(256, "idempotencyKey must be at most 256 characters"),
        ),
    ),
  })
  .check(z.refine(oneInput, ONE_INPUT));
export type CreateExecutionBody = z.output<typeof createExecutionBodySchema>;

/** POST /executions/{id}/trigger (the body itself may be absent). */
export const triggerBodySchema = z
  .strictObject({
    input: z.optional(z.unknown()),
    inputRef: z.optional(inputRefSchema),
  })
  .check(z.refine(oneInput, ONE_INPUT));

/** GET /executions/{id}?resolve=true */
export const describeExecutionQuerySchema = z.object({
  resolve: z.optional(z.enum(["true", "false"], { error: 'resolve must be "true" or "false"' })),
});

/** POST /payloads: the size of the input to upload. */
export const createUploadBodySchema = z.strictObject({
  bytes: z
    .number()
    .check(
      z.int("bytes must be a whole number"),
      z.gte(1, "bytes must be at least 1"),
      z.lte(
        PAYLOAD_LIMITS.maxBytes,
        `bytes must be at most ${PAYLOAD_LIMITS.maxBytes}, the limit of an input`,
      ),
    ),
});
export type TriggerBody = z.output<typeof triggerBodySchema>;

/** GET /workflows/{name}?version=N (unknown query parameters are ignored). */
export const getWorkflowQuerySchema = z.object({
  version: z.optional(
    z.pipe(
      z.string().check(z.regex(/^[1-9][0-9]{0,8}$/, "version must be a positive whole number")),
      z.transform(Number),
    ),
  ),
});
export type GetWorkflowQuery = z.output<typeof getWorkflowQuerySchema>;

/** A page size from the query string: a whole number within [1, max], `fallback` when absent. */
const limitParam = (max: number, fallback: number) =>
  z._default(
    z.pipe(
      z.pipe(
        z.string().check(z.regex(/^[0-9]{1,9}$/, `limit must be a whole number from 1 to ${max}`)),
        z.transform(Number),
      ),
      z
        .number()
        .check(
          z.gte(1, `limit must be a whole number from 1 to ${max}`),
          z.lte(max, `limit must be a whole number from 1 to ${max}`),
        ),
    ),
    fallback,
  );

/** An opaque paging cursor this API returned. */
const cursorParam = z
  .string()
  .check(
    z.minLength(1, "a cursor must not be empty"),
    z.maxLength(4096, "a cursor is at most 4096 characters"),
  );

/** POST /executions/{id}/cancel (the body itself may be absent). */
export const cancelBodySchema = z.strictObject({
  reason: z.optional(z.string().check(z.maxLength(1000, "reason must be at most 1000 characters"))),
});
export type CancelBody = z.output<typeof cancelBodySchema>;

/** GET /executions/{id}/events?after=&limit= */
export const listEventsQuerySchema = z.object({
  after: z.optional(cursorParam),
  limit: limitParam(1000, 100),
});
export type ListEventsQuery = z.output<typeof listEventsQuerySchema>;

/** GET /executions?workflow=&status=&limit=&next= */
export const listExecutionsQuerySchema = z.object({
  workflow: z.optional(workflowNameSchema),
  status: z.optional(
    z.enum(EXECUTION_STATUSES, { error: `status must be one of ${EXECUTION_STATUSES.join(", ")}` }),
  ),
  limit: limitParam(200, 50),
  next: z.optional(cursorParam),
});
export type ListExecutionsQuery = z.output<typeof listExecutionsQuerySchema>;

/** GET /workflows?limit=&next= */
export const listWorkflowsQuerySchema = z.object({
  limit: limitParam(200, 50),
  next: z.optional(cursorParam),
});
export type ListWorkflowsQuery = z.output<typeof listWorkflowsQuerySchema>;

/** GET /workers?limit=&next= */
export const listWorkersQuerySchema = z.object({
  limit: limitParam(PLACEMENT_LIMITS.maxWorkersPerPage, PLACEMENT_LIMITS.defaultWorkersPerPage),
  next: z.optional(cursorParam),
});
export type ListWorkersQuery = z.output<typeof listWorkersQuerySchema>;

/** GET /dlq?limit=&next= */
export const listDeadLettersQuerySchema = z.object({
  limit: limitParam(200, 50),
  next: z.optional(cursorParam),
});
export type ListDeadLettersQuery = z.output<typeof listDeadLettersQuerySchema>;

/** POST /dlq/redrive (an absent body, or one without messageIds, redrives everything). */
export const redriveBodySchema = z.strictObject({
  messageIds: z.optional(
    z
      .array(
        z
          .string()
          .check(
            z.minLength(1, "a message id must not be empty"),
            z.maxLength(512, "a message id is at most 512 characters"),
          ),
      )
      .check(
        z.minLength(1, "messageIds must list at least one id (leave it out to redrive everything)"),
        z.maxLength(500, "messageIds lists at most 500 ids"),
      ),
  ),
});
export type RedriveBody = z.output<typeof redriveBodySchema>;

// ── external workers and callbacks ─────────────────────────────────────────────────────────────

/** A worker id in a path. */
export const workerIdParamsSchema = z.object({ id: workerIdSchema });

/** POST /workers */
export { workerRegistrationSchema as registerWorkerBodySchema } from "../domain/placement.js";

/** POST /workers/{id}/poll (the body itself may be absent). */
export const pollBodySchema = z.strictObject({
  /** How long to wait for a task, at most 20 s (default 20). */
  waitSeconds: z._default(z.number().check(z.int(), z.gte(0), z.lte(20)), 20),
});

const tokenSchema = z
  .string()
  .check(
    z.minLength(1, "the token must not be empty"),
    z.maxLength(2048, "the token is at most 2048 characters"),
  );

/** POST /tasks/heartbeat */
export const taskTokenBodySchema = z.strictObject({ taskToken: tokenSchema });

/** An error a worker (or a callback's caller) reports. */
export const reportedErrorSchema = z.strictObject({
  name: z._default(z.string().check(z.minLength(1), z.maxLength(128)), "Error"),
  message: z._default(z.string().check(z.maxLength(4096)), ""),
  /** Tasks: retried by policy unless false. Callbacks: for good unless true. */
  retryable: z.optional(z.boolean()),
});

/** POST /tasks/complete */
export const completeTaskBodySchema = z.strictObject({
  taskToken: tokenSchema,
  output: z.optional(z.unknown()),
});

/** POST /tasks/fail */
export const failTaskBodySchema = z.strictObject({ taskToken: tokenSchema, error: reportedErrorSchema });

/** POST /callbacks/heartbeat */
export const callbackTokenBodySchema = z.strictObject({ token: tokenSchema });

/** POST /callbacks/complete */
export const completeCallbackBodySchema = z.strictObject({
  token: tokenSchema,
  output: z.optional(z.unknown()),
});

/** POST /callbacks/fail */
export const failCallbackBodySchema = z.strictObject({ token: tokenSchema, error: reportedErrorSchema });
