/**
 * Request building for the DynamoDB store: expression placeholders, update expressions, the error
 * shapes it tells apart, and the document client settings it needs.
 */
import type { AttributeValue, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import type { HistoryEvent } from "../../domain/records.js";
import { ATTR } from "./keys.js";

/** Collects placeholders for one expression-based request. */
export class Expression {
  readonly names: Record<string, string> = {};
  readonly values: Record<string, unknown> = {};
  private counter = 0;

  /** `#name` for an attribute name (all names weft uses are plain identifiers). */
  name(attribute: string): string {
    const placeholder = `#${attribute}`;
    this.names[placeholder] = attribute;
    return placeholder;
  }

  value(value: unknown): string {
    const placeholder = `:v${this.counter++}`;
    this.values[placeholder] = value;
    return placeholder;
  }

  /** ExpressionAttributeValues, omitted when empty (DynamoDB refuses an empty map). */
  get valuesOrUndefined(): Record<string, unknown> | undefined {
    return Object.keys(this.values).length > 0 ? this.values : undefined;
  }

  appendHistory(events: HistoryEvent | readonly HistoryEvent[]): string {
    const history = this.name(ATTR.history);
    const list = Array.isArray(events) ? [...events] : [events];
    return `${history} = list_append(if_not_exists(${history}, ${this.value([])}), ${this.value(list)})`;
  }

  projection(attributes: readonly string[]): string {
    return attributes.map((attribute) => this.name(attribute)).join(", ");
  }
}

export function updateExpression(sets: string[], removes: string[], adds: string[] = []): string {
  const parts: string[] = [];
  if (sets.length > 0) parts.push(`SET ${sets.join(", ")}`);
  if (removes.length > 0) parts.push(`REMOVE ${removes.join(", ")}`);
  if (adds.length > 0) parts.push(`ADD ${adds.join(", ")}`);
  return parts.join(" ");
}

function errorName(error: unknown): string {
  return error instanceof Error ? error.name : "";
}

export function isConditionFailure(
  error: unknown,
): error is Error & { Item?: Record<string, AttributeValue> } {
  return errorName(error) === "ConditionalCheckFailedException";
}

export type CancellationReasons = Array<{ Code?: string } | undefined>;

export function cancellationReasons(error: unknown): CancellationReasons | undefined {
  if (errorName(error) !== "TransactionCanceledException") return undefined;
  return (error as { CancellationReasons?: CancellationReasons }).CancellationReasons ?? [];
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Outputs and inputs are JSON, whose numbers are doubles: write any finite double (not only safe
 * integers) and read every number back as a double (never a BigInt, which JSON cannot carry).
 * DynamoDB itself still refuses magnitudes above 9.9e125 or below 1e-130.
 */
export const unmarshallOptions = () => ({ wrapNumbers: (value: string) => Number(value) });

/** The document client the store expects (see the module comment). */
export function documentClient(client: DynamoDBClient): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertEmptyValues: false, allowImpreciseNumbers: true },
    // A fresh object: lib-dynamodb writes into the options it is given.
    unmarshallOptions: unmarshallOptions(),
  });
}
