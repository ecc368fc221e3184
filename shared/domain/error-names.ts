/**
 * How a retrier's or a catch edge's `errors` name a failure (domain/retry.ts, domain/edges.ts):
 * by its `name`, by its string `code` (an AWS SDK or Node error's), or "*" for any.
 */

/** What of a failure the names match. */
export interface NamedError {
  name: string;
  code?: string | undefined;
}

/** Whether `names` match a failure: "*", its name or its code. */
export function matchesError(names: readonly string[], error: NamedError): boolean {
  return names.some((n) => n === "*" || n === error.name || (error.code !== undefined && n === error.code));
}
