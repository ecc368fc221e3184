/**
 * X-Ray for the deployed functions, with Powertools Tracer, joined to the W3C traces of executions
 * (shared/domain/trace.ts): the work of an execution is annotated with its W3C trace id
 * (`w3c_trace_id`), so an X-Ray search (`annotation.w3c_trace_id = "…"`) finds the invocations that
 * handled a trace that another system shows.
 *
 * Only the handler.ts entry points make a Tracer (and so load the X-Ray SDK); the apps take the
 * small FunctionTracing below, NO_TRACING by default: the local runtime and the tests trace
 * nothing. A Tracer is itself a no-op outside Lambda (no AWS_EXECUTION_ENV) or with
 * POWERTOOLS_TRACE_ENABLED=false.
 */
import type { Tracer } from "@aws-lambda-powertools/tracer";

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

/** FunctionTracing on a Powertools Tracer; a no-op where the tracer is disabled. */
export function xrayTracing(tracer: Tracer): FunctionTracing {
  return {
    annotate(traceId) {
      tracer.putAnnotation(W3C_TRACE_ANNOTATION, traceId);
    },
    async span(name, traceId, detail, work) {
      const parent = tracer.isTracingEnabled() ? tracer.getSegment() : undefined;
      if (!parent) return work();
      // Not made the current segment: the records of a batch run at once, and the AWS calls they
      // make are the handler subsegment's. This one shows each record's time and trace.
      const subsegment = parent.addNewSubsegment(name);
      if (traceId !== undefined) subsegment.addAnnotation(W3C_TRACE_ANNOTATION, traceId);
      subsegment.addMetadata("task", detail, "weft");
      try {
        return await work();
      } catch (error) {
        subsegment.addError(error instanceof Error ? error : String(error));
        throw error;
      } finally {
        subsegment.close();
      }
    },
  };
}

/**
 * Runs one invocation in a `## <handler>` subsegment (the Lambda segment itself takes no
 * annotations), annotated with the cold start and the service, errors recorded. Responses are not
 * recorded: they may carry execution inputs and outputs.
 */
export async function traceInvocation<T>(tracer: Tracer, work: () => Promise<T>): Promise<T> {
  const segment = tracer.isTracingEnabled() ? tracer.getSegment() : undefined;
  if (!segment) return work();
  const subsegment = segment.addNewSubsegment(`## ${process.env._HANDLER ?? "handler"}`);
  tracer.setSegment(subsegment);
  tracer.annotateColdStart();
  tracer.addServiceNameAnnotation();
  try {
    return await work();
  } catch (error) {
    tracer.addErrorAsMetadata(error instanceof Error ? error : new Error(String(error)));
    throw error;
  } finally {
    subsegment.close();
    tracer.setSegment(segment);
  }
}

/** Instruments an AWS SDK v3 client with the tracer (AwsClientOptions.capture in shared/config/wiring.ts). */
export function captureWith(tracer: Tracer): <C>(client: C) => C {
  return (client) => tracer.captureAWSv3Client(client);
}

/**
 * A function's Tracer options: AWS SDK clients captured (AwsClientOptions.capture), but not the
 * `http` task's outgoing requests — they carry the W3C `traceparent` of their attempt, and the
 * egress guard's connections stay exactly as configured.
 */
export const TRACER_OPTIONS = { captureHTTPsRequests: false } as const;
