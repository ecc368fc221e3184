/** zod schemas of the HTTP API's requests: path parameters, bodies and query strings (contract.ts names the routes). */
import * as z from "zod";
import { workflowNameSchema } from "../domain/definition.js";
import { PAYLOAD_LIMITS, UPLOAD_PREFIX } from "../domain/payload.js";
import { PLACEMENT_LIMITS, workerIdSchema } from "../domain/placement.js";
import { EXECUTION_STATUSES } from "../domain/records.js";

/**
 * An execution id in a path: ids are the engine's own (UUIDs), so a longer one names nothing; the
 * bound keeps it within DynamoDB's key size, which would otherwise refuse the read as a fault.
 */
export const executionIdParamsSchema = z.object({
  id: z.string().min(1).max(128, "an execution id is at most 128 characters"),
});

/** A workflow name in a path. */
export const workflowNameParamsSchema = z.object({ name: workflowNameSchema });

const versionNumber = z.number().int("version must be a whole number").min(1, "version must be at least 1");

/** An upload's reference, as `POST /payloads` answered it. */
const inputRefSchema = z
  .string()
  .regex(
    new RegExp(`^${UPLOAD_PREFIX}[A-Za-z0-9-]{1,64}$`),
    `inputRef must be a reference POST /payloads answered ("${UPLOAD_PREFIX}…")`,
  );

const oneInput = (value: { input?: unknown; inputRef?: string }) =>
  !(value.input !== undefined && value.inputRef !== undefined);
const ONE_INPUT = { message: "give either input or inputRef, not both", path: ["inputRef"] };

/** POST /executions */
export const createExecutionBodySchema = z
  .object({
    workflow: workflowNameSchema,
    version: versionNumber.optional(),
    input: z.unknown().optional(),
    inputRef: inputRefSchema.optional(),
    start: z.boolean().default(true),
    idempotencyKey: z
      .string()
      .min(1, "idempotencyKey must not be empty")
      .max(256, "idempotencyKey must be at most 256 characters")
      .optional(),
  })
  .strict()
  .refine(oneInput, ONE_INPUT);
export type CreateExecutionBody = z.output<typeof createExecutionBodySchema>;

/** POST /executions/{id}/trigger (the body itself may be absent). */
export const triggerBodySchema = z
  .object({
    input: z.unknown().optional(),
    inputRef: inputRefSchema.optional(),
  })
  .strict()
  .refine(oneInput, ONE_INPUT);

/** GET /executions/{id}?resolve=true */
export const describeExecutionQuerySchema = z.object({
  resolve: z.enum(["true", "false"], { error: 'resolve must be "true" or "false"' }).optional(),
});

/** POST /payloads: the size of the input to upload. */
export const createUploadBodySchema = z
  .object({
    bytes: z
      .number()
      .int("bytes must be a whole number")
      .min(1, "bytes must be at least 1")
      .max(
        PAYLOAD_LIMITS.maxBytes,
        `bytes must be at most ${PAYLOAD_LIMITS.maxBytes}, the limit of an input`,
      ),
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

/** A page size from the query string: a whole number within [1, max], `fallback` when absent. */
const limitParam = (max: number, fallback: number) =>
  z
    .string()
    .regex(/^[0-9]{1,9}$/, `limit must be a whole number from 1 to ${max}`)
    .transform(Number)
    .pipe(
      z
        .number()
        .min(1, `limit must be a whole number from 1 to ${max}`)
        .max(max, `limit must be a whole number from 1 to ${max}`),
    )
    .default(fallback);

/** An opaque paging cursor this API returned. */
const cursorParam = z
  .string()
  .min(1, "a cursor must not be empty")
  .max(4096, "a cursor is at most 4096 characters");

/** POST /executions/{id}/cancel (the body itself may be absent). */
export const cancelBodySchema = z
  .object({
    reason: z.string().max(1000, "reason must be at most 1000 characters").optional(),
  })
  .strict();
export type CancelBody = z.output<typeof cancelBodySchema>;

/** GET /executions/{id}/events?after=&limit= */
export const listEventsQuerySchema = z.object({
  after: cursorParam.optional(),
  limit: limitParam(1000, 100),
});
export type ListEventsQuery = z.output<typeof listEventsQuerySchema>;

/** GET /executions?workflow=&status=&limit=&next= */
export const listExecutionsQuerySchema = z.object({
  workflow: workflowNameSchema.optional(),
  status: z
    .enum(EXECUTION_STATUSES, { error: `status must be one of ${EXECUTION_STATUSES.join(", ")}` })
    .optional(),
  limit: limitParam(200, 50),
  next: cursorParam.optional(),
});
export type ListExecutionsQuery = z.output<typeof listExecutionsQuerySchema>;

/** GET /workflows?limit=&next= */
export const listWorkflowsQuerySchema = z.object({
  limit: limitParam(200, 50),
  next: cursorParam.optional(),
});
export type ListWorkflowsQuery = z.output<typeof listWorkflowsQuerySchema>;

/** GET /workers?limit=&next= */
export const listWorkersQuerySchema = z.object({
  limit: limitParam(PLACEMENT_LIMITS.maxWorkersPerPage, PLACEMENT_LIMITS.defaultWorkersPerPage),
  next: cursorParam.optional(),
});
export type ListWorkersQuery = z.output<typeof listWorkersQuerySchema>;

/** GET /dlq?limit=&next= */
export const listDeadLettersQuerySchema = z.object({
  limit: limitParam(200, 50),
  next: cursorParam.optional(),
});
export type ListDeadLettersQuery = z.output<typeof listDeadLettersQuerySchema>;

/** POST /dlq/redrive (an absent body, or one without messageIds, redrives everything). */
export const redriveBodySchema = z
  .object({
    messageIds: z
      .array(
        z
          .string()
          .min(1, "a message id must not be empty")
          .max(512, "a message id is at most 512 characters"),
      )
      .min(1, "messageIds must list at least one id (leave it out to redrive everything)")
      .max(500, "messageIds lists at most 500 ids")
      .optional(),
  })
  .strict();
export type RedriveBody = z.output<typeof redriveBodySchema>;

// ── external workers and callbacks ─────────────────────────────────────────────────────────────

/** A worker id in a path. */
export const workerIdParamsSchema = z.object({ id: workerIdSchema });

/** POST /workers */
export { workerRegistrationSchema as registerWorkerBodySchema } from "../domain/placement.js";

/** POST /workers/{id}/poll (the body itself may be absent). */
export const pollBodySchema = z
  .object({
    /** How long to wait for a task, at most 20 s (default 20). */
    waitSeconds: z.number().int().min(0).max(20).default(20),
  })
  .strict();

const tokenSchema = z
  .string()
  .min(1, "the token must not be empty")
  .max(2048, "the token is at most 2048 characters");

/** POST /tasks/heartbeat */
export const taskTokenBodySchema = z.object({ taskToken: tokenSchema }).strict();

/** An error a worker (or a callback's caller) reports. */
export const reportedErrorSchema = z
  .object({
    name: z.string().min(1).max(128).default("Error"),
    message: z.string().max(4096).default(""),
    /** Tasks: retried by policy unless false. Callbacks: for good unless true. */
    retryable: z.boolean().optional(),
  })
  .strict();

/** POST /tasks/complete */
export const completeTaskBodySchema = z
  .object({ taskToken: tokenSchema, output: z.unknown().optional() })
  .strict();

/** POST /tasks/fail */
export const failTaskBodySchema = z.object({ taskToken: tokenSchema, error: reportedErrorSchema }).strict();

/** POST /callbacks/heartbeat */
export const callbackTokenBodySchema = z.object({ token: tokenSchema }).strict();

/** POST /callbacks/complete */
export const completeCallbackBodySchema = z
  .object({ token: tokenSchema, output: z.unknown().optional() })
  .strict();

/** POST /callbacks/fail */
export const failCallbackBodySchema = z.object({ token: tokenSchema, error: reportedErrorSchema }).strict();
