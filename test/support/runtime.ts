/** Starts the real local runtime (HTTP API + poller + handlers) on a free port for an e2e test. */
import { inject } from "vitest";
import { type LocalRuntime, type LocalRuntimeOptions, startLocalRuntime } from "../../local/runtime.js";
import type { ExecutionView } from "../../shared/engine/views.js";
import { uniqueName } from "./aws.js";
import type { BackendKind } from "./backends.js";
import { NO_PROGRESS_MS, waitForProgress } from "./progress.js";

export async function startRuntime(
  kind: BackendKind,
  options: Partial<LocalRuntimeOptions> = {},
): Promise<LocalRuntime> {
  const quiet = { onError: () => {}, ...options };
  if (kind === "memory")
    return startLocalRuntime({ backend: "memory", port: 0, waitSeconds: 0, ...quiet, env: {} });
  return startLocalRuntime({
    backend: "aws",
    port: 0,
    endpoint: inject("awsEndpoints"),
    region: "us-east-1",
    credentials: { accessKeyId: "test", secretAccessKey: "test" },
    names: {
      table: uniqueName("e2e-table"),
      queue: uniqueName("e2e-tasks"),
      deadLetter: uniqueName("e2e-dlq"),
      eventBus: uniqueName("e2e-bus"),
      payloadBucket: uniqueName("e2e-payloads").toLowerCase(),
    },
    waitSeconds: 1,
    env: {},
    ...quiet,
  });
}

/** A parsed JSON response, read loosely: tests assert on its fields directly. */
// biome-ignore lint/suspicious/noExplicitAny: response bodies are untyped JSON the assertions check
export type JsonBody = any;

export interface ApiClient {
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body: JsonBody }>;
  raw(method: string, path: string, body: string): Promise<{ status: number; body: JsonBody }>;
  /** Registers a workflow (201, or 200 for a version already there); throws with the answer otherwise. */
  register(definition: { name: string; [field: string]: unknown }): Promise<JsonBody>;
  /** Starts an execution (202) and gives its id; throws with the answer otherwise. */
  start(workflow: string, input?: unknown): Promise<string>;
  /**
   * Polls the execution until it ends. Waits on progress (test/support/progress.ts): gives up only after
   * `idleMs` (NO_PROGRESS_MS) in which no node appeared or changed status or attempt.
   */
  waitForEnd(executionId: string, idleMs?: number): Promise<ExecutionView>;
}

export function apiClient(baseUrl: string): ApiClient {
  const raw = async (method: string, path: string, body?: string) => {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      ...(body === undefined ? {} : { body }),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  };
  const client: ApiClient = {
    call: (method, path, body) => raw(method, path, body === undefined ? undefined : JSON.stringify(body)),
    raw: (method, path, body) => raw(method, path, body),
    async register(definition) {
      const { status, body } = await client.call("POST", "/workflows", definition);
      if (status !== 200 && status !== 201)
        throw new Error(`POST /workflows answered ${status}: ${JSON.stringify(body)}`);
      return body;
    },
    async start(workflow, input) {
      const { status, body } = await client.call("POST", "/executions", { workflow, input });
      if (status !== 202) throw new Error(`POST /executions answered ${status}: ${JSON.stringify(body)}`);
      return body.executionId as string;
    },
    async waitForEnd(executionId, idleMs = NO_PROGRESS_MS) {
      return waitForProgress(
        `execution ${executionId}`,
        async () => {
          const { body } = await client.call("GET", `/executions/${executionId}`);
          if (["SUCCEEDED", "FAILED", "CANCELLED"].includes(body?.status))
            return { done: true, value: body as ExecutionView };
          // Progress: any node created, changing status or attempt, or a map's items moving on.
          const nodes = ((body?.nodes ?? []) as ExecutionView["nodes"]).map((n) => [
            n.id,
            n.status,
            n.attempt,
            ...(n.items ? [n.items] : []),
          ]);
          return {
            done: false,
            progress: [body?.status, nodes],
            state: `${body?.status}: ${JSON.stringify(nodes)}`,
          };
        },
        { idleMs },
      );
    },
  };
  return client;
}

/** A node of an execution's view, by id. */
export const nodeOf = (view: JsonBody, id: string): JsonBody =>
  view.nodes.find((n: { id: string }) => n.id === id);
