/**
 * WEFT_DEFAULT_MAX_ATTEMPTS reaches the engine: read from the environment as the deployed functions
 * read it, it bounds the attempts of a node whose definition names none, and only those.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalRuntime, startLocalRuntime } from "../../local/runtime.js";
import { HISTORY } from "../../shared/engine/lifecycle.js";
import { type ApiClient, apiClient } from "../support/runtime.js";

describe("WEFT_DEFAULT_MAX_ATTEMPTS=1 (memory backend)", () => {
  let runtime: LocalRuntime;
  let api: ApiClient;

  beforeAll(async () => {
    runtime = await startLocalRuntime({
      backend: "memory",
      port: 0,
      waitSeconds: 0,
      sweep: false,
      onError: () => {},
      env: { WEFT_DEFAULT_MAX_ATTEMPTS: "1" },
    });
    api = apiClient(runtime.url);
  });
  afterAll(async () => {
    await runtime?.stop();
  });

  /** Runs a one-node workflow whose node always fails (retryably); returns its attempts as the history shows. */
  async function attemptsOf(definition: { name: string; [field: string]: unknown }) {
    expect((await api.call("POST", "/workflows", definition)).status).toBe(201);
    const started = await api.call("POST", "/executions", { workflow: definition.name });
    const view = await api.waitForEnd(started.body.executionId);
    expect(view.status).toBe("FAILED");
    const history = await api.call("GET", `/executions/${started.body.executionId}/events?limit=100`);
    const types: string[] = history.body.events.map((event: { type: string }) => event.type);
    return {
      node: view.nodes[0],
      started: types.filter((type) => type === HISTORY.nodeStarted).length,
      retries: types.filter((type) => type === HISTORY.nodeRetryScheduled).length,
    };
  }

  const failing = { id: "flaky", type: "fail", params: { message: "always" } };
  const noDelay = { initialSeconds: 0, jitter: "none" };

  it("runs a node that names no maxAttempts exactly once", async () => {
    const result = await attemptsOf({ name: "once", nodes: [failing] });
    expect(result).toMatchObject({ node: { status: "FAILED", attempt: 1 }, started: 1, retries: 0 });
  });

  it("leaves a node's own maxAttempts, and its definition's defaults, in charge", async () => {
    const own = await attemptsOf({
      name: "own-policy",
      nodes: [{ ...failing, retry: { maxAttempts: 2, backoff: noDelay } }],
    });
    expect(own).toMatchObject({ node: { status: "FAILED", attempt: 2 }, started: 2, retries: 1 });
    const defaults = await attemptsOf({
      name: "definition-defaults",
      defaults: { retry: { maxAttempts: 2, backoff: noDelay } },
      nodes: [failing],
    });
    expect(defaults).toMatchObject({ node: { status: "FAILED", attempt: 2 }, started: 2, retries: 1 });
  });
});
