/**
 * The one place an error becomes an HTTP answer: the status of every request error code, and the
 * details a payload problem adds. Everything below the edge raises codes, never statuses.
 */

import {
  type ProblemDetail,
  REQUEST_ERROR_CODES,
  type RequestErrorCode,
  WeftError,
} from "../../shared/domain/errors.js";
import { PayloadError } from "../../shared/domain/json.js";
import { PAYLOAD_LIMITS } from "../../shared/domain/payload.js";

const STATUS_BY_CODE = {
  InvalidJson: 400,
  InvalidRequest: 400,
  BadRequest: 400,
  InvalidDefinition: 400,
  InvalidCursor: 400,
  PayloadTooDeep: 400,
  PayloadNotJson: 400,
  NotFound: 404,
  MethodNotAllowed: 405,
  Conflict: 409,
  IdempotencyKeyConflict: 409,
  WrongTokenKind: 409,
  WorkerIdTaken: 409,
  TooManyWorkers: 409,
  // A stored value that expired or was removed (S3 lifecycle): gone, not a bad request.
  PayloadMissing: 410,
  PayloadTooLarge: 413,
  RateLimited: 429,
  InternalError: 500,
  UploadsUnavailable: 501,
  Busy: 503,
} as const satisfies Record<RequestErrorCode, number>;

export interface Problem {
  status: number;
  code: string;
  message: string;
  details: readonly ProblemDetail[];
  /** The answer's Retry-After (seconds). */
  retryAfterSeconds?: number;
}

const isRequestCode = (code: string): code is RequestErrorCode =>
  (REQUEST_ERROR_CODES as readonly string[]).includes(code);

/**
 * The answer for an error raised on purpose; undefined for anything else (a bug, or a fault below:
 * the caller logs it and answers InternalError).
 */
export function problemOf(error: unknown): Problem | undefined {
  if (!(error instanceof WeftError) || !isRequestCode(error.code)) return undefined;
  const details = error instanceof PayloadError ? payloadDetails(error) : error.details;
  return {
    status: STATUS_BY_CODE[error.code],
    code: error.code,
    message: error.message,
    details,
    ...(error.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: error.retryAfterSeconds }),
  };
}

export const internalError = (): Problem => ({
  status: STATUS_BY_CODE.InternalError,
  code: "InternalError",
  message: "an unexpected error occurred",
  details: [],
});

/** Which limit a refused value met, so a client sees what to change. */
function payloadDetails(error: PayloadError): ProblemDetail[] {
  if (error.details.length > 0) return [...error.details];
  const limit =
    error.code === "PayloadTooLarge"
      ? `at most ${PAYLOAD_LIMITS.maxBytes} bytes a value`
      : error.code === "PayloadTooDeep"
        ? `at most ${PAYLOAD_LIMITS.maxDepth} levels of nesting`
        : error.code === "PayloadMissing"
          ? "the stored value is no longer there"
          : "JSON values only";
  return [{ path: "input", code: error.code, message: limit }];
}
