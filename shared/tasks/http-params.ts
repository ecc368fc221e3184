/**
 * The `http` task type's params (http.ts runs it): what every run parses, and the stricter rules a
 * new definition must pass. Apart from the task's runtime so that the functions that only check
 * definitions (the api) or never run it (the sweeper, the DLQ consumer) bundle these without undici.
 */
import { exactJson } from "../domain/json-schema.js";
import * as z from "../domain/zod.js";
import type { EgressPolicy } from "./egress.js";
import { headersSchema, registrationHeadersSchema } from "./http-headers.js";

export const HTTP_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"] as const;

const statusCode = z.number().check(z.int(), z.gte(100), z.lte(599));
/**
 * An http(s) URL that WHATWG `URL` (what fetch, the egress guard and run() parse with) reads as
 * given. zod's own URL check reads the string trimmed of any Unicode space, and its failures let
 * the checks after it run, which then met strings `new URL` throws on (a 500 at registration): so
 * this check comes first, and it and zod's stop the checks after them.
 */
const urlSchema = z.pipe(
  z.string().check(
    z.refine((value) => URL.canParse(value), {
      error: "url is not a URL (the WHATWG URL parser refuses it)",
      abort: true,
    }),
  ),
  z.url({ protocol: /^https?$/, error: "url must be an http:// or https:// URL", abort: true }),
);

/**
 * The params schema; with `registration`, the rules a new definition must pass on top: credential
 * headers as secret references, and no URL host the egress policy refuses.
 */
function buildParamsSchema(registration?: { egress: EgressPolicy }) {
  const url = registration
    ? urlSchema.check(
        z.superRefine((value, ctx) => {
          if (!URL.canParse(value)) return; // refused by the checks above
          const host = new URL(value).hostname;
          const refusal = registration.egress.checkHost(host);
          if (refusal)
            ctx.addIssue({ code: "custom", message: `url host ${registration.egress.explain(refusal)}` });
        }),
      )
    : urlSchema;
  return z
    .strictObject({
      method: z.enum(HTTP_METHODS),
      url,
      /** Each value plain text or a secret reference `{"secret": "<name>"}`. */
      headers: z.optional(registration ? registrationHeadersSchema : headersSchema),
      /** Any JSON value; sent as JSON (content-type application/json) unless it is a string. */
      body: z.optional(exactJson()),
      timeoutMs: z.optional(z.number().check(z.int(), z.gte(1), z.lte(900_000))),
      /** Statuses that count as success; default any 2xx. */
      expectStatus: z.optional(z.union([statusCode, z.array(statusCode).check(z.minLength(1))])),
    })
    .check(
      z.refine((p) => p.body === undefined || (p.method !== "GET" && p.method !== "HEAD"), {
        message: "a GET or HEAD request cannot have a body",
        path: ["body"],
      }),
    );
}

/** The params as stored: every run parses them with this (definitions registered before the registration rules included). */
export const httpParamsSchema = buildParamsSchema();

export type HttpParams = z.output<typeof httpParamsSchema>;

/** The registration rules of `http` (TaskType.registrationParams) under an egress policy. */
export function httpRegistrationParams(egress: EgressPolicy) {
  return buildParamsSchema({ egress });
}
