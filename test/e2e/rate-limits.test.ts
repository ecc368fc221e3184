/**
 * A workflow's start rate limit end to end (domain/rate.ts, engine/rate-limits.ts) through the
 * local runtime's HTTP API, on the embedded backend and on DynamoDB (emulator): starts past it are
 * answered 429 with Retry-After and create nothing; a key gives each value its own bucket; a key
 * that does not compile is refused at registration.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalRuntime } from "../../local/runtime.js";
import { BACKEND_KINDS } from "../support/backends.js";
import { PATIENT } from "../support/progress.js";
import { type ApiClient, apiClient, type JsonBody, startRuntime } from "../support/runtime.js";

describe.each(BACKEND_KINDS)("start rate limits end to end (%s)", PATIENT, (kind) => {
  let runtime: LocalRuntime;
  let api: ApiClient;

  beforeAll(async () => {
    runtime = await startRuntime(kind);
    api = apiClient(runtime.url);
  });
  afterAll(async () => {
    await runtime?.stop();
  });

  /** POST /executions as a client sends it, with the answer's Retry-After. */
  async function start(workflow: string, input: unknown) {
    const response = await fetch(`${runtime.url}/executions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ workflow, input }),
    });
    const body: JsonBody = await response.json();
    return { status: response.status, retryAfter: response.headers.get("retry-after"), body };
  }

  async function executionsOf(workflow: string): Promise<number> {
    const { body } = await api.call("GET", `/executions?workflow=${workflow}&limit=100`);
    return body.executions.length;
  }

  it("answers 429 with Retry-After past the limit, creating nothing", async () => {
    const name = `rated-${kind}`;
    await api.register({
      name,
      rateLimit: { limit: 2, periodSeconds: 3600 },
      nodes: [{ id: "only", type: "noop" }],
    });
    expect((await start(name, {})).status).toBe(202);
    expect((await start(name, {})).status).toBe(202);
    const refused = await start(name, {});
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe("RateLimited");
    expect(refused.body.error.message).toContain("at most 2 executions every 3600 s");
    // The next token comes in half an hour (2 an hour): roughly that many seconds.
    expect(Number(refused.retryAfter)).toBeGreaterThan(1700);
    expect(Number(refused.retryAfter)).toBeLessThanOrEqual(1800);
    expect(await executionsOf(name)).toBe(2);
  });

  it("gives each key value a bucket of its own", async () => {
    const name = `rated-by-tenant-${kind}`;
    await api.register({
      name,
      rateLimit: { key: "{% input.tenant %}", limit: 1, periodSeconds: 3600 },
      nodes: [{ id: "only", type: "noop" }],
    });
    expect((await start(name, { tenant: "a" })).status).toBe(202);
    const again = await start(name, { tenant: "a" });
    expect(again.status).toBe(429);
    expect(again.body.error.message).toContain('this one: "a"');
    expect((await start(name, { tenant: "b" })).status).toBe(202);
    expect(await executionsOf(name)).toBe(2);
  });

  it("refuses a rate limit that cannot work at registration, naming the field", async () => {
    const bad = await api.call("POST", "/workflows", {
      name: `rated-bad-${kind}`,
      rateLimit: { key: "{% input.( %}", limit: 0, periodSeconds: 1 },
      nodes: [{ id: "only", type: "noop" }],
    });
    expect(bad.status).toBe(400);
    const paths = bad.body.error.details.map((d: { path: string }) => d.path);
    expect(paths).toContain("rateLimit.limit");
    expect(paths).toContain("rateLimit.key");
  });
});
