/**
 * Task messages as SQS records carry them: the one zod schema every SQS consumer (the worker and the DLQ
 * function) parses a record body with, and the record's receive count.
 */
import { LIMITS } from "../../shared/domain/definition.js";
import { isTraceparent, TRACEPARENT_MAX_LENGTH } from "../../shared/domain/trace.js";
import * as z from "../../shared/domain/zod.js";
import type { TaskMessage } from "../../shared/ports.js";

const traceparentSchema = z.optional(
  z.string().check(z.maxLength(TRACEPARENT_MAX_LENGTH), z.refine(isTraceparent, "not a W3C traceparent")),
);

export const taskMessageSchema = z.pipe(
  z.object({
    executionId: z.string().check(z.minLength(1)),
    nodeId: z.string().check(z.minLength(1)),
    attempt: z.number().check(z.int(), z.nonnegative()),
    // Node indexes: a join has fewer parents than its workflow has nodes.
    deps: z.optional(z.array(z.number().check(z.int(), z.nonnegative())).check(z.maxLength(LIMITS.maxNodes))),
    // A W3C traceparent (shared/domain/trace.ts). One that is not is dropped, never the message: a
    // trace only observes the work, and the attempt takes its span from the execution record anyway.
    // `z.catch(schema, undefined)` built as z.catch builds it: z.catch itself reads zod's `util`
    // namespace, which would bundle all of zod's util module (~8 KB) into the worker and the DLQ function.
    trace: new z.ZodMiniCatch({
      type: "catch",
      innerType: traceparentSchema,
      catchValue: () => undefined,
    }) as z.ZodMiniCatch<typeof traceparentSchema>,
    check: z.optional(z.literal(true)),
    hops: z.optional(z.number().check(z.int(), z.gte(0), z.lte(1000))),
    early: z.optional(z.number().check(z.int(), z.gte(0), z.lte(100))),
    lease: z.optional(z.string().check(z.minLength(1), z.maxLength(256))),
  }),
  z.transform(
    ({ trace, ...message }): TaskMessage => (trace === undefined ? message : { ...message, trace }),
  ),
);

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
