/**
 * X-Ray for the deployed functions, joined to the W3C traces of executions (shared/domain/trace.ts):
 * the work of an execution is annotated with its W3C trace id (`w3c_trace_id`), so an X-Ray search
 * (`annotation.w3c_trace_id = "…"`) finds the invocations that handled a trace that another system
 * shows.
 *
 * Off unless the construct's `tracing` is on (as Step Functions leaves X-Ray off unless asked): it
 * sets POWERTOOLS_TRACE_ENABLED (PLATFORM_VARIABLES.tracing), and only then does a handler load
 * Powertools Tracer and the X-Ray SDK (functions/common/xray.ts), about 120 KB a new instance would
 * otherwise load for nothing. The apps take the small FunctionTracing below, NO_TRACING by default:
 * the local runtime and the tests trace nothing.
 */
import { PLATFORM_VARIABLES } from "../../shared/config/settings.js";

/** The annotation that joins X-Ray segments to W3C traces. */
export const W3C_TRACE_ANNOTATION = "w3c_trace_id";

/** What the apps ask of tracing. */
export interface FunctionTracing {
  /** Annotates the invocation's segment with a W3C trace id (the API: one request per invocation). */
  annotate(traceId: string): void;
  /**
   * Runs `work` in a subsegment of its own, annotated with `traceId` (the worker: one per SQS record,
   * as a batch mixes traces). `detail` goes in as metadata (ids only, never payloads).
   */
  span<T>(
    name: string,
    traceId: string | undefined,
    detail: Record<string, unknown>,
    work: () => Promise<T>,
  ): Promise<T>;
}

/** No tracing: the local runtime's and the tests'. */
export const NO_TRACING: FunctionTracing = {
  annotate() {},
  span: (_name, _traceId, _detail, work) => work(),
};

/** What a handler asks of tracing: a wrapper per invocation, the AWS clients' capture, the app's part. */
export interface InvocationTracing {
  /** Runs one invocation (in its own subsegment when traced). */
  invocation<T>(work: () => Promise<T>): Promise<T>;
  /** Instruments an AWS SDK v3 client (AwsClientOptions.capture in shared/config/wiring.ts). */
  capture: <C>(client: C) => C;
  /** What the app itself traces. */
  app: FunctionTracing;
}

/** No tracing at all: nothing wrapped, nothing captured. */
export const NO_INVOCATION_TRACING: InvocationTracing = {
  invocation: (work) => work(),
  capture: (client) => client,
  app: NO_TRACING,
};

/** Whether the construct turned X-Ray on for this function. */
export function tracingEnabled(env: Readonly<Record<string, string | undefined>>): boolean {
  return env[PLATFORM_VARIABLES.tracing.env] === "true";
}

/**
 * A handler's tracing: X-Ray on a Powertools Tracer named `serviceName` when tracing is on (the
 * X-Ray SDK loaded then, at init), else none.
 */
export async function invocationTracing(
  serviceName: string,
  env: Readonly<Record<string, string | undefined>>,
): Promise<InvocationTracing> {
  if (!tracingEnabled(env)) return NO_INVOCATION_TRACING;
  const { xrayInvocationTracing } = await import("./xray.js");
  return xrayInvocationTracing(serviceName);
}
