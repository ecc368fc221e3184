/**
 * The environment the deployed functions (and `createEngineFromEnv`) read, as a zod schema.
 * Wiring only: no engine logic lives here.
 */
import { z } from "zod";

/** An unset variable and an empty one mean the same thing (CDK and shells both produce "" at times). */
const emptyAsUndefined = (value: unknown) => (value === "" ? undefined : value);

const required = (name: string) =>
  z.preprocess(emptyAsUndefined, z.string({ error: `${name} must be set` }).min(1, `${name} must be set`));

export const envSchema = z.object({
  WEFT_TABLE_NAME: required("WEFT_TABLE_NAME"),
  WEFT_QUEUE_URL: required("WEFT_QUEUE_URL"),
  WEFT_DLQ_URL: required("WEFT_DLQ_URL"),
  WEFT_EVENT_BUS_NAME: required("WEFT_EVENT_BUS_NAME"),
  WEFT_LEASE_SECONDS: z.preprocess(
    emptyAsUndefined,
    z.coerce
      .number()
      .int("WEFT_LEASE_SECONDS must be a whole number of seconds")
      .min(1, "WEFT_LEASE_SECONDS must be at least 1")
      .max(43_200, "WEFT_LEASE_SECONDS must be at most 43200 (SQS's longest visibility timeout)")
      .default(60),
  ),
  /** The AWS SDK reads this variable itself too; it is parsed here so the local runtime can print it. */
  AWS_ENDPOINT_URL: z.preprocess(
    emptyAsUndefined,
    z.url({ message: "AWS_ENDPOINT_URL must be a URL such as http://127.0.0.1:5000" }).optional(),
  ),
});

export interface WeftConfig {
  tableName: string;
  queueUrl: string;
  deadLetterUrl: string;
  eventBusName: string;
  leaseSeconds: number;
  /** Endpoint override for every AWS client (moto, DynamoDB Local, LocalStack); undefined for real AWS. */
  endpoint?: string;
}

/** Reads and validates the configuration; throws one error naming every problem. */
export function loadConfig(env: Record<string, string | undefined> = process.env): WeftConfig {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);
    throw new Error(`invalid weft configuration: ${problems.join("; ")}`);
  }
  const value = parsed.data;
  return {
    tableName: value.WEFT_TABLE_NAME,
    queueUrl: value.WEFT_QUEUE_URL,
    deadLetterUrl: value.WEFT_DLQ_URL,
    eventBusName: value.WEFT_EVENT_BUS_NAME,
    leaseSeconds: value.WEFT_LEASE_SECONDS,
    ...(value.AWS_ENDPOINT_URL === undefined ? {} : { endpoint: value.AWS_ENDPOINT_URL }),
  };
}
