/**
 * An example custom task type: one file in `tasks/`, picked up by the worker and the local runtime.
 *
 *   { "id": "shout", "type": "uppercase", "params": { "text": "hello", "suffix": "!" } }
 *
 * Without `text`, it upper-cases the execution input's `text` field.
 */
import * as z from "zod";
import { TerminalError } from "../shared/tasks/errors.js";
import { defineTask } from "../shared/tasks/task-type.js";

export const uppercase = defineTask({
  type: "uppercase",
  params: z
    .object({
      text: z.string().max(10_000).optional(),
      suffix: z.string().max(16).optional(),
    })
    .strict(),
  run: ({ params, input }) => {
    const text = params.text ?? (input as { text?: unknown } | null)?.text;
    if (typeof text !== "string")
      throw new TerminalError("uppercase needs params.text or a string input.text");
    return { text: `${text.toUpperCase()}${params.suffix ?? ""}` };
  },
});
