/** A Lambda `Context` for handlers the local runtime invokes itself, as the Lambda service would. */
import { randomUUID } from "node:crypto";
import type { Context } from "aws-lambda";

export function createLambdaContext(
  functionName: string,
  timeoutMs: number,
  now: () => number = Date.now,
): Context {
  const deadline = now() + timeoutMs;
  const requestId = randomUUID();
  const fail = () => {
    throw new Error("the legacy Lambda callback methods are not supported");
  };
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: "$LATEST",
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: "1024",
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: `local/${requestId}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - now()),
    done: fail,
    fail,
    succeed: fail,
  };
}
