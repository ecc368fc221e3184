/**
 * Idempotency keys of `POST /executions`: the one place that decides whether a request with a key
 * already taken is the same request as the one that took it (the stores only keep what it asked
 * with the key, and return it: Store.createExecution).
 *
 * A key is unique within its workflow. The same request is the same input (the sha256 of its
 * exact JSON text, as the execution keeps it — for an `inputRef` upload, its content as parsed and
 * kept, so formatting aside an upload and the same value sent inline are the same input), the same
 * `start` (absent is true), and, when the request names a `version`, the existing execution's
 * version (naming none asks for the latest, which the existing one was). The same request returns
 * the existing execution; any other is refused with IdempotencyKeyConflict, and creates nothing —
 * as Step Functions answers ExecutionAlreadyExists to a reused name with another input.
 */
import { createHash } from "node:crypto";
import { type ProblemDetail, RequestError } from "../domain/errors.js";
import type { Payload } from "../domain/payload.js";
import type { ExecutionRecord } from "../domain/records.js";
import type { KeyedRequest } from "../ports.js";

/** What a keyed request asks, from the input as saved (no value is read again: a blob's hash is on its reference). */
export function keyedRequest(input: Payload, start: boolean): KeyedRequest {
  return { inputSha256: inputSha256(input), start };
}

function inputSha256(input: Payload): string {
  if ("json" in input) return createHash("sha256").update(input.json, "utf8").digest("hex");
  if ("blob" in input) return input.blob.sha256;
  // An input is saved as one text (Payloads.save), never composed of parts.
  throw new Error("an execution input kept as parts has no single text to hash");
}

/**
 * Nothing when `mine` (with the version it named, if any) is the request that took `key` and made
 * `existing`; otherwise the IdempotencyKeyConflict to raise, naming the key, the execution and
 * what differs.
 */
export function keyConflict(
  key: string,
  mine: KeyedRequest & { version?: number },
  existing: ExecutionRecord,
  first: KeyedRequest,
): RequestError | undefined {
  const details: ProblemDetail[] = [];
  if (mine.inputSha256 !== first.inputSha256)
    details.push({ path: "input", code: "differs", message: "not the input the key was first used with" });
  if (mine.start !== first.start)
    details.push({
      path: "start",
      code: "differs",
      message: `start is ${mine.start}; the key was first used with start ${first.start}`,
    });
  if (mine.version !== undefined && mine.version !== existing.version)
    details.push({
      path: "version",
      code: "differs",
      message: `version ${mine.version} was asked; the execution is of version ${existing.version}`,
    });
  if (details.length === 0) return undefined;
  return new RequestError(
    "IdempotencyKeyConflict",
    `idempotency key "${key}" of workflow "${existing.workflow}" was used for execution "${existing.executionId}" by a different request (${details.map((d) => d.path).join(", ")} differ${details.length === 1 ? "s" : ""}); use a new key for a new request`,
    { details },
  );
}
