/**
 * The `http` task's request headers: each value is plain text or a secret reference
 * (`{"secret": "ssm:/weft/api-token"}`, see secrets.ts). Credentials must be references: a new
 * definition with a plain-text Authorization, Proxy-Authorization, Cookie or X-Api-Key is refused,
 * and one stored before that rule is shown with those values redacted (redactDefinition).
 */
import { CHECKED_UNDER_EXPRESSIONS } from "../domain/expression-rules.js";
import { REDACTED } from "../domain/redact.js";
import * as z from "../domain/zod.js";
import { isSecretRef, secretRefSchema } from "./secrets.js";

/** Header names whose values are credentials (lower case). */
export const CREDENTIAL_HEADERS: ReadonlySet<string> = new Set([
  "authorization",
  "proxy-authorization",
  "cookie",
  "x-api-key",
]);

export { REDACTED };

export const headerValueSchema = z.union([z.string(), secretRefSchema]);
export const headersSchema = z.record(z.string(), headerValueSchema);

/** Headers as stored: what every run accepts (definitions registered before the credential rule included). */
export type HttpHeaders = z.output<typeof headersSchema>;

/** The registration rule: credential headers must be secret references, never plain text. */
export const registrationHeadersSchema = headersSchema.check(
  z.superRefine((headers, ctx) => {
    for (const [name, value] of Object.entries(headers)) {
      if (typeof value !== "string" || !CREDENTIAL_HEADERS.has(name.toLowerCase())) continue;
      ctx.addIssue({
        code: "custom",
        path: [name],
        // An expression is no way around it: it would compute the credential from stored data.
        params: CHECKED_UNDER_EXPRESSIONS,
        message: `header "${name}" holds a plain-text credential; refer to a secret instead: {"secret": "ssm:/path/to/parameter"} (SSM Parameter Store) or {"secret": "<Secrets Manager secret name or ARN>"}`,
      });
    }
  }),
);

/** A copy of the headers with plain-text credential values replaced by "***" (references kept). */
export function redactHeaders(headers: unknown): unknown {
  if (typeof headers !== "object" || headers === null || Array.isArray(headers)) return headers;
  const copy: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(headers)) {
    copy[name] = CREDENTIAL_HEADERS.has(name.toLowerCase()) && !isSecretRef(value) ? REDACTED : value;
  }
  return copy;
}

/**
 * A definition as it may be shown: every `http` node's plain-text credential headers redacted (a
 * definition registered before they were refused may hold them). Secret references are shown as
 * they are. Returns the same object when there is nothing to redact.
 */
export function redactDefinition<D>(definition: D): D {
  const nodes = (definition as { nodes?: unknown }).nodes;
  if (!Array.isArray(nodes)) return definition;
  let changed = false;
  const redacted = nodes.map((node: unknown) => {
    if (typeof node !== "object" || node === null) return node;
    const { type, params } = node as { type?: unknown; params?: unknown };
    if (type !== "http" || typeof params !== "object" || params === null) return node;
    const headers = (params as { headers?: unknown }).headers;
    const clean = redactHeaders(headers);
    if (JSON.stringify(clean) === JSON.stringify(headers)) return node;
    changed = true;
    return { ...node, params: { ...params, headers: clean } };
  });
  return changed ? ({ ...definition, nodes: redacted } as D) : definition;
}
