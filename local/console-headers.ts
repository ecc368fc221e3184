/**
 * The headers every file of the web console is served with, by the local runtime and by
 * `weft console` alike (both serve it through serveStatic, local/http-server.ts): defined once here.
 *
 * `weft console` acts with the user's AWS credentials and has Cancel, Redrive and Run again
 * buttons, so no other site may frame it (clickjacking: `frame-ancestors 'none'`, and
 * X-Frame-Options for browsers before CSP 2), and its pages run nothing but the console's own
 * files. The policy allows only what the console needs:
 * - its scripts, styles, images (the favicon is a file, console/public) and API calls: 'self';
 * - elkjs's layout Web Worker, loaded from the console's own assets (console/src/graph/layout.ts,
 *   `new Worker(url)`, not a blob:): `worker-src 'self'`;
 * - no inline script or style, no eval, no plugins, no <base>, and no form submissions (its forms
 *   are handled by script).
 * The browser test (test/console/console.test.ts) fails on any violation it reports.
 */
import type { ServerResponse } from "node:http";

export const CONSOLE_CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "worker-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

export const CONSOLE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "content-security-policy": CONSOLE_CONTENT_SECURITY_POLICY,
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
});

export function setConsoleHeaders(response: ServerResponse): void {
  for (const [name, value] of Object.entries(CONSOLE_HEADERS)) response.setHeader(name, value);
}
