/** The `emit` task type: puts one event on the lifecycle bus or a named bus, through a small port. */

import { cloneExact, stringifyExact } from "../domain/exact-numbers.js";
import { exactJson } from "../domain/json-schema.js";
import * as z from "../domain/zod.js";
import { TerminalError } from "./errors.js";
import { defineTask, type TaskType } from "./task-type.js";

export const DEFAULT_EMIT_SOURCE = "weft.workflow";
/** EventBridge's limit for a whole PutEvents entry; the detail alone must stay under it. */
const MAX_DETAIL_BYTES = 256 * 1024;

export interface EmitEntry {
  busName: string;
  source: string;
  detailType: string;
  detail: Record<string, unknown>;
}

/** The port `emit` sends through. An implementation may return the id the bus gave the event. */
export interface EventSender {
  send(entry: EmitEntry, signal?: AbortSignal): Promise<{ eventId?: string } | undefined>;
}

export const emitParamsSchema = z.strictObject({
  detailType: z.string().check(z.minLength(1), z.maxLength(128)),
  detail: z.optional(z.record(z.string(), exactJson())),
  source: z.optional(
    z.string().check(
      z.minLength(1),
      z.maxLength(256),
      z.refine((s) => !s.startsWith("aws."), 'source must not start with "aws." (reserved for AWS services)'),
    ),
  ),
  /** A bus name or ARN; default the lifecycle bus. */
  eventBusName: z.optional(z.string().check(z.minLength(1), z.maxLength(1600))),
});

export type EmitParams = z.output<typeof emitParamsSchema>;

export type EmitOutput = { eventId: string } | { sent: true };

export function emitTask(sender: EventSender, defaultBusName: string): TaskType<EmitParams> {
  return defineTask({
    type: "emit",
    params: emitParamsSchema,
    async run({ params: raw, context }): Promise<EmitOutput> {
      const params = emitParamsSchema.parse(raw);
      const detail = params.detail ?? {};
      const size = Buffer.byteLength(stringifyExact(detail) ?? "");
      if (size > MAX_DETAIL_BYTES)
        throw new TerminalError(
          `event detail is ${size} bytes; EventBridge takes at most ${MAX_DETAIL_BYTES}`,
        );
      const result = await sender.send(
        {
          busName: params.eventBusName ?? defaultBusName,
          source: params.source ?? DEFAULT_EMIT_SOURCE,
          detailType: params.detailType,
          detail,
        },
        context.signal,
      );
      return result?.eventId ? { eventId: result.eventId } : { sent: true };
    },
  });
}

/** An EventSender that keeps the entries, for the embedded local mode and tests (no bus there). */
export class MemoryEventSender implements EventSender {
  readonly sent: EmitEntry[] = [];
  private count = 0;

  async send(entry: EmitEntry): Promise<{ eventId: string }> {
    // cloneExact: a detail may hold exact numbers, which structuredClone would flatten.
    this.sent.push(cloneExact(entry));
    this.count += 1;
    return { eventId: `local-${this.count}` };
  }
}
