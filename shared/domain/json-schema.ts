/**
 * The params schema of "any JSON value" for built-in task types (the `http` body, an `emit`
 * detail): zod's `z.json()` with exact numbers (exact-numbers.ts) taken as the numbers they are,
 * so `"body": {"id": "{% input.id %}"}` with an id beyond 2^53 is sent, not refused as an object.
 */
import { type ExactNumber, isExactNumber } from "./exact-numbers.js";
import * as z from "./zod.js";

export type JsonValue =
  | string
  | number
  | boolean
  | null
  | ExactNumber
  | JsonValue[]
  | { [key: string]: JsonValue };

export function exactJson(): z.ZodMiniType<JsonValue> {
  const schema: z.ZodMiniType<JsonValue> = z.lazy(() =>
    z.union([
      z.string(),
      z.number(),
      z.boolean(),
      z.null(),
      // Before the containers: a LosslessNumber is an object, but a number here.
      z.custom<ExactNumber>((value) => isExactNumber(value), { error: "expected a number" }),
      z.array(schema),
      z.record(z.string(), schema),
    ]),
  );
  return schema;
}
