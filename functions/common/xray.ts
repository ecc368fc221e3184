/**
 * X-Ray with Powertools Tracer (the half of functions/common/tracing.ts that loads the X-Ray SDK,
 * about 120 KB with its dependencies): imported only when the construct turned tracing on.
 */
import { Tracer } from "@aws-lambda-powertools/tracer";
import { type FunctionTracing, type InvocationTracing, W3C_TRACE_ANNOTATION } from "./tracing.js";

/**
 * A function's Tracer options: AWS SDK clients captured (AwsClientOptions.capture), but not the
 * `http` task's outgoing requests — they carry the W3C `traceparent` of their attempt, and the
 * egress guard's connections stay exactly as configured.
 */
export const TRACER_OPTIONS = { captureHTTPsRequests: false } as const;

/** The invocation tracing of a function on a Powertools Tracer named `serviceName`. */
export function xrayInvocationTracing(serviceName: string): InvocationTracing {
  const tracer = new Tracer({ serviceName, ...TRACER_OPTIONS });
  return {
    invocation: (work) => traceInvocation(tracer, work),
    capture: captureWith(tracer),
    app: xrayTracing(tracer),
  };
}

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
