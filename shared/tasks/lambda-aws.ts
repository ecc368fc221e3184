/** The LambdaInvoker port on AWS Lambda (Invoke, RequestResponse). */

import { InvokeCommand, type InvokeCommandOutput, type LambdaClient } from "@aws-sdk/client-lambda";
import { parseExact, stringifyExact } from "../domain/exact-numbers.js";
import { classifyAwsError } from "./aws-errors.js";
import type { LambdaInvocationResult, LambdaInvoker } from "./lambda.js";

/** Invoke errors that the same request will meet again: retrying cannot help. */
const TERMINAL_INVOKE_ERRORS = new Set([
  "ResourceNotFoundException",
  "InvalidParameterValueException",
  "InvalidRequestContentException",
  "RequestTooLargeException",
]);

export class AwsLambdaInvoker implements LambdaInvoker {
  constructor(private readonly client: LambdaClient) {}

  async invoke(
    functionName: string,
    qualifier: string | undefined,
    payload: unknown,
    signal: AbortSignal,
  ): Promise<LambdaInvocationResult> {
    let response: InvokeCommandOutput;
    try {
      response = await this.client.send(
        new InvokeCommand({
          FunctionName: functionName,
          ...(qualifier === undefined ? {} : { Qualifier: qualifier }),
          InvocationType: "RequestResponse",
          // Exact numbers (exact-numbers.ts) are written as their digits.
          Payload: new TextEncoder().encode(stringifyExact(payload)),
        }),
        { abortSignal: signal },
      );
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      const target = qualifier === undefined ? functionName : `${functionName}:${qualifier}`;
      throw classifyAwsError(error, {
        what: `invoking ${target}`,
        grant: {
          action: "lambda:InvokeFunction",
          resource: target,
          contextKey: "weft:invokableFunctionArns",
          prop: "invokableFunctionArns",
        },
        terminal: TERMINAL_INVOKE_ERRORS,
      });
    }
    const text = response.Payload ? new TextDecoder().decode(response.Payload) : "";
    const result = parsePayload(text);
    return response.FunctionError === undefined
      ? { payload: result }
      : { functionError: response.FunctionError, payload: result };
  }
}

function parsePayload(text: string): unknown {
  if (text.trim() === "") return null;
  try {
    return parseExact(text);
  } catch {
    return text;
  }
}
