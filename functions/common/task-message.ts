/**
 * Task messages as SQS records carry them: the one zod schema every SQS consumer (the worker and the DLQ
 * function) parses a record body with, and the record's receive count.
 */
import * as z from "zod";
import { LIMITS } from "../../shared/domain/definition.js";
import { isTraceparent, TRACEPARENT_MAX_LENGTH } from "../../shared/domain/trace.js";
import type { TaskMessage } from "../../shared/ports.js";

export const taskMessageSchema = z
  .object({
    executionId: z.string().min(1),
    nodeId: z.string().min(1),
    attempt: z.number().int().nonnegative(),
    // Node indexes: a join has fewer parents than its workflow has nodes.
    deps: z.array(z.number().int().nonnegative()).max(LIMITS.maxNodes).optional(),
    // A W3C traceparent (shared/domain/trace.ts). One that is not is dropped, never the message: a
    // trace only observes the work, and the attempt takes its span from the execution record anyway.
    trace: z
      .string()
      .max(TRACEPARENT_MAX_LENGTH)
      .refine(isTraceparent, "not a W3C traceparent")
      .optional()
      .catch(undefined),
    check: z.literal(true).optional(),
    hops: z.number().int().min(0).max(1000).optional(),
    early: z.number().int().min(0).max(100).optional(),
    lease: z.string().min(1).max(256).optional(),
  })
  .transform(({ trace, ...message }): TaskMessage => (trace === undefined ? message : { ...message, trace }));

/** A record whose body is not a task message. */
export class MalformedTaskMessageError extends Error {
  override name = "MalformedTaskMessageError";
}

/**
 * Parses a record body. The error names what is wrong (paths and zod's messages), never the body's
 * content, so it can be logged.
 */
export function parseTaskMessage(body: string): TaskMessage {
  let raw: unknown;
  try {
    raw = JSON.parse(body);
  } catch {
    throw new MalformedTaskMessageError("the message body is not JSON");
  }
  const parsed = taskMessageSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) => `${issue.path.join(".") || "(body)"}: ${issue.message}`,
    );
    throw new MalformedTaskMessageError(`the message body is not a task message (${problems.join("; ")})`);
  }
  return parsed.data;
}

/** SQS's ApproximateReceiveCount of a record (this receive included); 1 when absent or not a count. */
export function receiveCountOf(record: { attributes?: { ApproximateReceiveCount?: string } }): number {
  const count = Number(record.attributes?.ApproximateReceiveCount);
  return Number.isInteger(count) && count > 0 ? count : 1;
}
