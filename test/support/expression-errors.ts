/** The ExpressionError a promise rejects with, failing the test when it resolves or throws another. */
import { expect } from "vitest";
import { ExpressionError } from "../../shared/domain/expressions.js";

export async function expressionRejection(promise: Promise<unknown>): Promise<ExpressionError> {
  const outcome = await promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  if (!("error" in outcome)) throw new Error(`expected a rejection, got ${JSON.stringify(outcome.value)}`);
  expect(outcome.error).toBeInstanceOf(ExpressionError);
  return outcome.error as ExpressionError;
}
