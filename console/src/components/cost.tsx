/**
 * An execution's modeled cost (GET /executions/{id} `cost`): the AWS requests its records add up to
 * under the engine's protocol, and their dollars at list prices. Modeled, not billed.
 */
import { formatUsd } from "../../../shared/domain/cost-model.js";
import type { ModeledCost } from "../api.js";

const SERVICES = [
  ["dynamodb", "DynamoDB"],
  ["sqs", "SQS"],
  ["lambda", "Lambda"],
  ["eventbridge", "EventBridge"],
  ["s3", "S3"],
] as const;

const n = (value: number) => (Number.isInteger(value) ? String(value) : value.toFixed(value < 1 ? 3 : 1));

function requestsOf(cost: ModeledCost, service: (typeof SERVICES)[number][0]): string {
  const r = cost.requests;
  switch (service) {
    case "dynamodb":
      return `${n(r.dynamodb.writeUnits + r.dynamodb.indexWriteUnits)} write units, ${n(r.dynamodb.readUnits)} read units`;
    case "sqs":
      return `${n(r.sqs.messages)} messages, ${n(r.sqs.requests)} requests`;
    case "lambda":
      return `${n(r.lambda.invocations)} invocations, ${n(r.lambda.gbSeconds)} GB-s`;
    case "eventbridge":
      return `${n(r.eventbridge.events)} events`;
    case "s3":
      return `${n(r.s3.puts)} PUT, ${n(r.s3.gets)} GET`;
  }
}

export function CostPanel({ cost }: { cost: ModeledCost | undefined }) {
  if (cost === undefined) return null;
  return (
    <details class="card" data-testid="cost-panel">
      <summary>
        Modeled cost: <strong data-testid="cost-total">{formatUsd(cost.totalUsd)}</strong> (
        {formatUsd(cost.totalUsd * 1e6)} per million runs)
      </summary>
      <table class="table compact">
        <thead>
          <tr>
            <th>Service</th>
            <th>Requests (modeled)</th>
            <th>USD</th>
          </tr>
        </thead>
        <tbody>
          {SERVICES.map(([key, name]) => (
            <tr key={key} data-testid={`cost-${key}`}>
              <td>{name}</td>
              <td>{requestsOf(cost, key)}</td>
              <td>{formatUsd(cost.usd[key])}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p class="muted">
        {cost.model}. The engine's protocol applied to this execution's records, not a bill: see docs/cost.md.
      </p>
    </details>
  );
}
