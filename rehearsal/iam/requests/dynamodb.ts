/**
 * DynamoDB (JSON 1.0, `X-Amz-Target: DynamoDB_20120810.<Operation>`): the action and table or index
 * ARN IAM checks. Transactions are authorized per item (TransactWriteItems needs PutItem,
 * UpdateItem, DeleteItem or ConditionCheckItem on each item's table; TransactGetItems GetItem);
 * batches per table.
 */
import type { AuthRequest } from "../policy.js";
import {
  type ArnScope,
  type AwsHttpRequest,
  jsonBody,
  partitionOf,
  UnparseableRequestError,
} from "./types.js";

const TRANSACT_WRITE_ACTIONS: Record<string, string> = {
  ConditionCheck: "dynamodb:ConditionCheckItem",
  Put: "dynamodb:PutItem",
  Update: "dynamodb:UpdateItem",
  Delete: "dynamodb:DeleteItem",
};

/** Operations that name no table. */
const ACCOUNT_LEVEL = new Set([
  "ListTables",
  "DescribeEndpoints",
  "DescribeLimits",
  "ListBackups",
  "ListGlobalTables",
]);

export function tableArn(table: string, region: string, scope: ArnScope): string {
  if (table.startsWith("arn:")) return table;
  return `arn:${partitionOf(scope)}:dynamodb:${region}:${scope.account}:table/${table}`;
}

function stringField(body: Record<string, unknown>, name: string, operation: string): string {
  const value = body[name];
  if (typeof value !== "string" || value === "")
    throw new UnparseableRequestError(`${operation} without ${name}`);
  return value;
}

export function dynamodbChecks(
  operation: string,
  request: AwsHttpRequest,
  region: string,
  scope: ArnScope,
): AuthRequest[] {
  const body = jsonBody(request);
  const action = `dynamodb:${operation}`;
  switch (operation) {
    case "BatchGetItem":
    case "BatchWriteItem": {
      const tables = Object.keys((body.RequestItems ?? {}) as Record<string, unknown>);
      if (tables.length === 0) throw new UnparseableRequestError(`${operation} without RequestItems`);
      return tables.map((table) => ({ action, resource: tableArn(table, region, scope) }));
    }
    case "TransactWriteItems":
    case "TransactGetItems": {
      const items = body.TransactItems;
      if (!Array.isArray(items) || items.length === 0)
        throw new UnparseableRequestError(`${operation} without TransactItems`);
      return items.map((item: Record<string, Record<string, unknown>>) => {
        const [kind, detail] = Object.entries(item)[0] ?? [];
        const itemAction =
          operation === "TransactGetItems" ? "dynamodb:GetItem" : TRANSACT_WRITE_ACTIONS[kind ?? ""];
        if (!itemAction || !detail)
          throw new UnparseableRequestError(`${operation} with an item of kind ${kind}`);
        return {
          action: itemAction,
          resource: tableArn(stringField(detail, "TableName", operation), region, scope),
        };
      });
    }
    default: {
      if (ACCOUNT_LEVEL.has(operation)) return [{ action, resource: "*" }];
      const table = tableArn(stringField(body, "TableName", operation), region, scope);
      const index = body.IndexName;
      return [
        { action, resource: typeof index === "string" && index !== "" ? `${table}/index/${index}` : table },
      ];
    }
  }
}
