/**
 * EventBridge (JSON 1.1, `X-Amz-Target: AWSEvents.<Operation>`). PutEvents is authorized per entry
 * on its bus (a name, an ARN, or the default bus when absent), with `events:source` and
 * `events:detail-type` as condition keys; bus and rule operations on their ARNs.
 */
import type { AuthRequest } from "../policy.js";
import {
  type ArnScope,
  type AwsHttpRequest,
  jsonBody,
  partitionOf,
  UnparseableRequestError,
} from "./types.js";

export function busArn(bus: unknown, region: string, scope: ArnScope): string {
  const name = typeof bus === "string" && bus !== "" ? bus : "default";
  if (name.startsWith("arn:")) return name;
  return `arn:${partitionOf(scope)}:events:${region}:${scope.account}:event-bus/${name}`;
}

function ruleArn(body: Record<string, unknown>, ruleField: string, region: string, scope: ArnScope): string {
  const rule = body[ruleField];
  if (typeof rule !== "string" || rule === "")
    throw new UnparseableRequestError(`a rule operation without ${ruleField}`);
  if (rule.startsWith("arn:")) return rule;
  const bus =
    typeof body.EventBusName === "string" && body.EventBusName !== "default" ? body.EventBusName : undefined;
  const busName = bus?.startsWith("arn:") ? bus.split("/").pop() : bus;
  return `arn:${partitionOf(scope)}:events:${region}:${scope.account}:rule/${busName ? `${busName}/` : ""}${rule}`;
}

export function eventsChecks(
  operation: string,
  request: AwsHttpRequest,
  region: string,
  scope: ArnScope,
): AuthRequest[] {
  const body = jsonBody(request);
  const action = `events:${operation}`;
  switch (operation) {
    case "PutEvents": {
      const entries = body.Entries;
      if (!Array.isArray(entries) || entries.length === 0)
        throw new UnparseableRequestError("PutEvents without Entries");
      return entries.map((entry: Record<string, unknown>) => ({
        action,
        resource: busArn(entry.EventBusName, region, scope),
        context: {
          "events:source": typeof entry.Source === "string" ? entry.Source : undefined,
          "events:detail-type": typeof entry.DetailType === "string" ? entry.DetailType : undefined,
        },
      }));
    }
    case "CreateEventBus":
    case "DescribeEventBus":
    case "DeleteEventBus":
    case "UpdateEventBus":
      return [{ action, resource: busArn(body.Name, region, scope) }];
    case "PutRule":
    case "DescribeRule":
    case "DeleteRule":
    case "EnableRule":
    case "DisableRule":
      return [{ action, resource: ruleArn(body, "Name", region, scope) }];
    case "PutTargets":
    case "RemoveTargets":
    case "ListTargetsByRule":
      return [{ action, resource: ruleArn(body, "Rule", region, scope) }];
    default:
      return [{ action, resource: "*" }];
  }
}
