/**
 * Turns an HTTP request to an AWS endpoint into what IAM checks: the service and region (from the
 * SigV4 credential scope, in the Authorization header or a presigned URL's X-Amz-Credential), the
 * operation, and every (action, resource ARN, condition keys) it needs.
 */
import { dynamodbChecks } from "./dynamodb.js";
import { eventsChecks } from "./events.js";
import { presignedExpiry, s3Checks } from "./s3.js";
import { sqsChecks, sqsOperation } from "./sqs.js";
import type { ArnScope, AwsHttpRequest, ParsedAwsRequest } from "./types.js";
import { UnparseableRequestError } from "./types.js";

export type { ArnScope, AwsHttpRequest, ParsedAwsRequest } from "./types.js";
export { UnparseableRequestError } from "./types.js";

const TARGET_PREFIXES: Array<[string, string]> = [
  ["DynamoDB_", "dynamodb"],
  ["AmazonSQS.", "sqs"],
  ["AWSEvents.", "events"],
];

/** Service and region of the request's SigV4 credential scope (`AKID/date/region/service/aws4_request`). */
export function credentialScope(request: AwsHttpRequest): { service: string; region: string } | undefined {
  const fromHeader = /Credential=([^,\s]+)/.exec(request.headers.authorization ?? "")?.[1];
  const fromQuery =
    new URL(request.url, "http://aws.invalid").searchParams.get("X-Amz-Credential") ?? undefined;
  const credential = fromHeader ?? fromQuery;
  const parts = credential?.split("/");
  if (!parts || parts.length < 5) return undefined;
  const [region, service] = parts.slice(-3, -1);
  return region && service ? { service, region } : undefined;
}

/** The access key id the request was signed with. */
export function accessKeyOf(request: AwsHttpRequest): string | undefined {
  const fromHeader = /Credential=([^/,\s]+)\//.exec(request.headers.authorization ?? "")?.[1];
  return (
    fromHeader ??
    new URL(request.url, "http://aws.invalid").searchParams.get("X-Amz-Credential")?.split("/")[0]
  );
}

export function parseAwsRequest(request: AwsHttpRequest, scope: ArnScope): ParsedAwsRequest {
  const signed = credentialScope(request);
  const target = request.headers["x-amz-target"] ?? "";
  const service = signed?.service ?? TARGET_PREFIXES.find(([prefix]) => target.startsWith(prefix))?.[1];
  const region = signed?.region ?? scope.defaultRegion;
  if (!service) throw new UnparseableRequestError("an unsigned request to no known service");
  const operationOf = (prefix: string) => {
    if (!target.startsWith(prefix))
      throw new UnparseableRequestError(`a ${service} request without X-Amz-Target ${prefix}*`);
    return target.slice(prefix.length);
  };
  switch (service) {
    case "dynamodb": {
      const operation = operationOf("DynamoDB_20120810.");
      return {
        service,
        operation,
        protocol: "json",
        region,
        checks: dynamodbChecks(operation, request, region, scope),
      };
    }
    case "sqs": {
      const parsed = sqsOperation(request);
      return {
        service,
        operation: parsed.operation,
        protocol: parsed.protocol,
        region,
        checks: sqsChecks(parsed, region, scope),
      };
    }
    case "events": {
      const operation = operationOf("AWSEvents.");
      return {
        service,
        operation,
        protocol: "json",
        region,
        checks: eventsChecks(operation, request, region, scope),
      };
    }
    case "s3": {
      const { operation, checks } = s3Checks(request, scope);
      const expiresAt = presignedExpiry(request);
      return {
        service,
        operation,
        protocol: "rest-xml",
        region,
        checks,
        ...(expiresAt === undefined ? {} : { expiresAt }),
      };
    }
    default:
      throw new UnparseableRequestError(`a request to ${service}, which the rehearsal does not model`);
  }
}
