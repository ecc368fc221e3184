/**
 * The inside of an isolated evaluator's thread: evaluates what it is sent, one request at a time,
 * with the domain's guard given the thread's own heap to watch (v8's statistics are per isolate).
 */

import v8 from "node:v8";
import type { MessagePort } from "node:worker_threads";
import { ExpressionError } from "../../domain/expressions.js";
import {
  crossing,
  type EvaluationData,
  type EvaluationReply,
  type EvaluationRequest,
  uncross,
} from "./protocol.js";

const heapUsed = () => v8.getHeapStatistics().used_heap_size;

export function serveEvaluations(port: MessagePort): void {
  port.on("message", (request: EvaluationRequest) => {
    void evaluate(request, port).then((reply) => port.postMessage(reply));
  });
  port.postMessage({ id: 0, kind: "ready" } satisfies EvaluationReply);
}

async function evaluate(received: EvaluationRequest, port: MessagePort): Promise<EvaluationReply> {
  const { id } = received;
  const request = { ...received, ...dataOf(received) };
  const options = {
    now: () => request.nowMs,
    heapUsed,
    ...(request.bindings ? { bindings: request.bindings } : {}),
    ...(request.limits ? { limits: request.limits } : {}),
    onExpression: (index: number) => port.postMessage({ id, kind: "at", index } satisfies EvaluationReply),
  };
  try {
    // Loaded on the thread's first request (jsonata with it): the main thread never needs it.
    const { evaluateCondition, resolveExpressions } = await import("../../domain/expression-evaluation.js");
    const value =
      request.kind === "condition"
        ? await evaluateCondition(request.value as string, request.scope, options)
        : await resolveExpressions(request.value, request.scope, options, request.path);
    const json = crossing(value);
    return json === undefined ? { id, kind: "value", value } : { id, kind: "exact-value", json };
  } catch (error) {
    if (error instanceof ExpressionError)
      return { id, kind: "expression-error", message: error.message, path: error.path };
    // Its name only: an unexpected error's message may quote the data.
    return { id, kind: "failure", message: error instanceof Error ? error.name : typeof error };
  }
}

/** The request's data as sent, exact numbers included (protocol.ts `crossing`). */
function dataOf(request: EvaluationRequest): EvaluationData {
  const data = request.data;
  return "exactJson" in data ? (uncross(data.exactJson) as EvaluationData) : data;
}
