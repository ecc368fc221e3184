/** Steps the scenarios share: checked API calls, and waiting for an execution or a node to get somewhere. */
import type { ApiAnswer } from "../client.js";
import { waitFor } from "../wait.js";
import type { RehearsalContext } from "./context.js";

export class ScenarioFailure extends Error {
  override readonly name = "ScenarioFailure";
}

export function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new ScenarioFailure(message);
}

/** The status was the expected one, else a failure naming the error code the API answered. */
export function expectStatus<T>(answer: ApiAnswer<T>, status: number, what: string): T {
  if (answer.status !== status) {
    const error = (answer.body as { error?: { code?: string; message?: string }; message?: string }) ?? {};
    const why = error.error
      ? `${error.error.code}: ${error.error.message}`
      : (error.message ?? answer.text.slice(0, 200));
    throw new ScenarioFailure(`${what}: expected HTTP ${status}, got ${answer.status} (${why})`);
  }
  return answer.body;
}

export interface NodeView {
  id: string;
  type: string;
  status: string;
  attempt: number;
  output?: unknown;
  outputRef?: { sha256?: string; bytes: number; url?: string };
  error?: { name?: string; message?: string };
}

export interface ExecutionView {
  executionId: string;
  status: string;
  input?: unknown;
  inputRef?: { sha256?: string; bytes: number; url?: string };
  output?: unknown;
  outputRef?: { sha256?: string; bytes: number; url?: string };
  error?: { name?: string; message?: string };
  nodes: NodeView[];
  onFailure?: NodeView;
}

export const TERMINAL = ["SUCCEEDED", "FAILED", "CANCELLED"];

export async function register(
  ctx: RehearsalContext,
  definition: Record<string, unknown>,
): Promise<{ name: string; version: number }> {
  const answer = await ctx.api.post<{ name: string; version: number }>("/workflows", definition);
  if (answer.status !== 200) expectStatus(answer, 201, `POST /workflows ${String(definition.name)}`);
  return answer.body;
}

export async function start(ctx: RehearsalContext, body: Record<string, unknown>): Promise<string> {
  const answer = expectStatus(
    await ctx.api.post<{ executionId: string }>("/executions", body),
    202,
    "POST /executions",
  );
  check(typeof answer.executionId === "string", "POST /executions answered no executionId");
  return answer.executionId;
}

export async function describe(
  ctx: RehearsalContext,
  executionId: string,
  resolve?: boolean,
): Promise<ExecutionView> {
  return expectStatus(
    await ctx.api.get<ExecutionView>(
      `/executions/${executionId}`,
      resolve === undefined ? undefined : { resolve: String(resolve) },
    ),
    200,
    `GET /executions/${executionId}`,
  );
}

export function nodeOf(view: ExecutionView, nodeId: string): NodeView {
  const node = view.nodes.find((n) => n.id === nodeId);
  if (!node) throw new ScenarioFailure(`execution ${view.executionId} has no node ${nodeId}`);
  return node;
}

/** Polls the execution until `done` says so. */
export async function waitForExecution(
  ctx: RehearsalContext,
  executionId: string,
  done: (view: ExecutionView) => boolean,
  what: string,
  timeoutMs = 60_000,
): Promise<ExecutionView> {
  let last: ExecutionView | undefined;
  return waitFor(
    what,
    async () => {
      last = await describe(ctx, executionId, false);
      return done(last) ? last : undefined;
    },
    {
      timeoutMs,
      intervalMs: 300,
      describe: () =>
        last
          ? `status ${last.status}; ${last.nodes.map((n) => `${n.id} ${n.status}#${n.attempt}`).join(", ")}`
          : "no answer",
    },
  );
}

export function waitForEnd(
  ctx: RehearsalContext,
  executionId: string,
  timeoutMs = 60_000,
): Promise<ExecutionView> {
  return waitForExecution(
    ctx,
    executionId,
    (view) => TERMINAL.includes(view.status),
    `execution ${executionId} to end`,
    timeoutMs,
  );
}

/** A history event as `GET /executions/{id}/events` answers it. */
export interface HistoryEventView {
  type: string;
  /** When: epoch ms (or an RFC 3339 text). */
  at: number | string;
  nodeId?: string;
  attempt?: number;
  detail?: Record<string, unknown>;
}

/** The first 100 events of an execution's history, in history order. */
export async function historyOf(ctx: RehearsalContext, executionId: string): Promise<HistoryEventView[]> {
  return expectStatus(
    await ctx.api.get<{ events: HistoryEventView[] }>(`/executions/${executionId}/events`, { limit: "100" }),
    200,
    "GET /executions/{id}/events",
  ).events;
}

/** An event's time in epoch ms. */
export function eventMs(event: HistoryEventView): number {
  return typeof event.at === "number" ? event.at : Date.parse(event.at);
}
