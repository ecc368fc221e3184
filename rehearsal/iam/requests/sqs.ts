/**
 * SQS, in both protocols: JSON (`X-Amz-Target: AmazonSQS.<Operation>`, what AWS SDK v3 speaks) and
 * query (`Action=<Operation>` in a form body or the query string, what older clients speak). The
 * resource is the queue ARN from its URL (`/<account>/<name>`) or its name; batch operations are
 * authorized as their single forms.
 */
import type { AuthRequest } from "../policy.js";
import type { ArnScope, AwsHttpRequest, WireProtocol } from "./types.js";
import { jsonBody, partitionOf, UnparseableRequestError } from "./types.js";

const BATCH_ACTIONS: Record<string, string> = {
  SendMessageBatch: "SendMessage",
  DeleteMessageBatch: "DeleteMessage",
  ChangeMessageVisibilityBatch: "ChangeMessageVisibility",
};

export interface SqsOperation {
  operation: string;
  protocol: WireProtocol;
  params: Record<string, unknown>;
  /** The queue path of a query-protocol request sent to the queue's URL. */
  path: string;
}

/** The operation and its parameters, from either protocol. */
export function sqsOperation(request: AwsHttpRequest): SqsOperation {
  const url = new URL(request.url, "http://sqs.invalid");
  const target = request.headers["x-amz-target"];
  if (target?.startsWith("AmazonSQS.")) {
    return {
      operation: target.slice("AmazonSQS.".length),
      protocol: "json",
      params: jsonBody(request),
      path: url.pathname,
    };
  }
  const form = new URLSearchParams(url.search);
  if (request.body.length > 0)
    for (const [key, value] of new URLSearchParams(request.body.toString("utf8"))) form.set(key, value);
  const operation = form.get("Action");
  if (!operation) throw new UnparseableRequestError("an SQS request with neither X-Amz-Target nor Action");
  return { operation, protocol: "query", params: Object.fromEntries(form), path: url.pathname };
}

export function queueArnFromUrl(queueUrl: string, region: string, scope: ArnScope): string {
  const path = queueUrl.includes("://") ? new URL(queueUrl).pathname : queueUrl;
  const [account, name] = path.split("/").filter(Boolean).slice(-2);
  if (!account || !name) throw new UnparseableRequestError(`not a queue URL: ${queueUrl}`);
  return `arn:${partitionOf(scope)}:sqs:${region}:${account}:${name}`;
}

export function sqsChecks(parsed: SqsOperation, region: string, scope: ArnScope): AuthRequest[] {
  const { operation, params } = parsed;
  const action = `sqs:${BATCH_ACTIONS[operation] ?? operation}`;
  if (operation === "ListQueues") return [{ action, resource: "*" }];
  if (operation === "GetQueueUrl" || operation === "CreateQueue") {
    const name = params.QueueName;
    if (typeof name !== "string" || name === "")
      throw new UnparseableRequestError(`${operation} without QueueName`);
    const owner =
      typeof params.QueueOwnerAWSAccountId === "string" ? params.QueueOwnerAWSAccountId : scope.account;
    return [{ action, resource: `arn:${partitionOf(scope)}:sqs:${region}:${owner}:${name}` }];
  }
  const queueUrl =
    typeof params.QueueUrl === "string" && params.QueueUrl !== "" ? params.QueueUrl : parsed.path;
  return [{ action, resource: queueArnFromUrl(queueUrl, region, scope) }];
}
