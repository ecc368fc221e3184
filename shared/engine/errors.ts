/** Errors the engine raises for callers; the API maps `status` and `code` straight to HTTP. */

export interface ProblemDetail {
  path: string;
  code: string;
  message: string;
}

export class WeftError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: ProblemDetail[] = [],
  ) {
    super(message);
    this.name = "WeftError";
  }
}

export const badRequest = (message: string, details: ProblemDetail[] = []) =>
  new WeftError(400, "BadRequest", message, details);
export const invalidDefinition = (details: ProblemDetail[]) =>
  new WeftError(
    400,
    "InvalidDefinition",
    `the workflow definition has ${details.length} problem(s)`,
    details,
  );
export const notFound = (message: string) => new WeftError(404, "NotFound", message);
export const conflict = (message: string) => new WeftError(409, "Conflict", message);
export const tooLarge = (message: string) => new WeftError(413, "PayloadTooLarge", message);
