/**
 * A small typed client of the weft HTTP API (the contract in the design brief). Errors come back as
 * ApiError (the API's `{error: {code, message, details}}`) or UnreachableError (no answer at all).
 */
import type { ErrorInfo, ExecutionStatus } from "../shared/domain/records.js";
import type { ExecutionListItem, HistoryPage } from "../shared/engine/queries.js";
import type { ExecutionView } from "../shared/engine/views.js";
import { ApiError, CliError, UnreachableError } from "./errors.js";
import { isLoopback, type RequestSigner } from "./signing.js";

export type { ExecutionListItem } from "../shared/engine/queries.js";
export type { ExecutionView, NodeView } from "../shared/engine/views.js";

export interface RegisterResponse {
  name: string;
  version: number;
  definitionHash: string;
}

export interface ExecutionRef {
  executionId: string;
  status: ExecutionStatus;
}

/** One history event as the API answers it (the engine's own page type). */
export type HistoryEventView = HistoryPage["events"][number];
export type EventsPage = HistoryPage;

export interface ExecutionsPage {
  executions: ExecutionListItem[];
  next?: string;
}

export interface DeadLetter {
  id: string;
  executionId: string;
  nodeId: string;
  attempt: number;
  error: ErrorInfo;
  at: string;
  reason: string;
  receiveCount?: number;
}

export interface DeadLettersPage {
  deadLetters: DeadLetter[];
  next?: string;
}

export interface RedriveResponse {
  redriven: string[];
  skipped: Array<{ id: string; reason: string }>;
}

export interface WorkflowResponse {
  name: string;
  version: number;
  definitionHash: string;
  createdAt: string;
  definition: {
    name: string;
    nodes: Array<{ id: string; type: string; dependsOn?: string[]; fanIn?: string }>;
  };
}

export interface ClientOptions {
  /** Base URL, e.g. http://127.0.0.1:3000 or https://abc.execute-api.eu-west-1.amazonaws.com/prod */
  baseUrl: string;
  signer?: RequestSigner;
  /** Per-request timeout. Default 30 s (API Gateway's own limit is about that). */
  timeoutMs?: number;
}

type Query = Record<string, string | number | undefined>;

export class WeftClient {
  readonly baseUrl: string;
  private readonly signer: RequestSigner | undefined;
  private readonly timeoutMs: number;

  constructor(options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.signer = options.signer;
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  registerWorkflow(definition: unknown): Promise<{ status: number; body: RegisterResponse }> {
    return this.request("POST", "/workflows", { body: definition });
  }

  async getWorkflow(name: string, version?: number): Promise<WorkflowResponse> {
    return (await this.request<WorkflowResponse>("GET", `/workflows/${enc(name)}`, { query: { version } }))
      .body;
  }

  async startExecution(request: {
    workflow: string;
    version?: number;
    input?: unknown;
    start?: boolean;
    idempotencyKey?: string;
  }): Promise<{ status: number; body: ExecutionRef }> {
    return this.request("POST", "/executions", { body: request });
  }

  async trigger(executionId: string, input?: unknown): Promise<ExecutionRef> {
    const body = input === undefined ? {} : { input };
    return (await this.request<ExecutionRef>("POST", `/executions/${enc(executionId)}/trigger`, { body }))
      .body;
  }

  async cancel(executionId: string, reason?: string): Promise<ExecutionRef> {
    const body = reason === undefined ? {} : { reason };
    return (await this.request<ExecutionRef>("POST", `/executions/${enc(executionId)}/cancel`, { body }))
      .body;
  }

  async getExecution(executionId: string): Promise<ExecutionView> {
    return (await this.request<ExecutionView>("GET", `/executions/${enc(executionId)}`)).body;
  }

  async listEvents(executionId: string, page: { after?: string; limit?: number } = {}): Promise<EventsPage> {
    return (
      await this.request<EventsPage>("GET", `/executions/${enc(executionId)}/events`, {
        query: { after: page.after, limit: page.limit },
      })
    ).body;
  }

  async listExecutions(query: {
    workflow?: string;
    status?: string;
    limit?: number;
    next?: string;
  }): Promise<ExecutionsPage> {
    return (await this.request<ExecutionsPage>("GET", "/executions", { query })).body;
  }

  async listDeadLetters(query: { limit?: number; next?: string }): Promise<DeadLettersPage> {
    return (await this.request<DeadLettersPage>("GET", "/dlq", { query })).body;
  }

  async redrive(messageIds?: string[]): Promise<RedriveResponse> {
    const body = messageIds === undefined || messageIds.length === 0 ? {} : { messageIds };
    return (await this.request<RedriveResponse>("POST", "/dlq/redrive", { body })).body;
  }

  async request<T>(
    method: string,
    path: string,
    options: { body?: unknown; query?: Query } = {},
  ): Promise<{ status: number; body: T }> {
    const url = new URL(`${this.baseUrl}${path}`);
    for (const [key, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    let headers: Record<string, string> = { accept: "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (this.signer) {
      try {
        headers = await this.signer({ method, url, headers, ...(body === undefined ? {} : { body }) });
      } catch (error) {
        throw new CliError(
          `cannot sign the request to ${url.host} with AWS SigV4: ${error instanceof Error ? error.message : String(error)} — configure AWS credentials (AWS_PROFILE, \`aws sso login\`, AWS_ACCESS_KEY_ID…) or pass --no-sigv4 for an API without IAM auth`,
          1,
          "SigningFailed",
        );
      }
    }

    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers,
        ...(body === undefined ? {} : { body }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      throw new UnreachableError(unreachableMessage(this.baseUrl, error));
    }
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text === "" ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (!response.ok) throw toApiError(response.status, parsed, text, method, url);
    if (parsed === undefined) {
      throw new ApiError(
        response.status,
        "InvalidResponse",
        `${method} ${url.pathname} answered without JSON`,
      );
    }
    return { status: response.status, body: parsed as T };
  }
}

const enc = encodeURIComponent;

function toApiError(status: number, parsed: unknown, text: string, method: string, url: URL): ApiError {
  if (isRecord(parsed) && isRecord(parsed.error)) {
    const { code, message, details } = parsed.error;
    return new ApiError(
      status,
      typeof code === "string" ? code : `Http${status}`,
      typeof message === "string" ? message : `HTTP ${status}`,
      Array.isArray(details) ? details : [],
    );
  }
  // API Gateway's own answers (e.g. 403 from IAM auth) are `{"message": "…"}`.
  if (isRecord(parsed) && typeof parsed.message === "string") {
    const hint = status === 403 ? " (is the request signed with credentials allowed to call this API?)" : "";
    return new ApiError(status, status === 403 ? "Forbidden" : `Http${status}`, `${parsed.message}${hint}`);
  }
  const snippet = text.trim().slice(0, 200);
  return new ApiError(
    status,
    `Http${status}`,
    `${method} ${url.pathname} answered HTTP ${status}${snippet ? `: ${snippet}` : ""}`,
  );
}

function unreachableMessage(baseUrl: string, error: unknown): string {
  let url: URL | undefined;
  try {
    url = new URL(baseUrl);
  } catch {
    url = undefined;
  }
  const cause = describeCause(error);
  const hint = url && isLoopback(url) ? " — is `npm start` running?" : "";
  return `cannot reach the weft API at ${baseUrl}${hint}${cause ? ` (${cause})` : ""}`;
}

function describeCause(error: unknown): string {
  if (error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError")) {
    return "no answer in time";
  }
  const cause = error instanceof Error ? (error.cause as { code?: unknown; message?: unknown }) : undefined;
  if (cause && typeof cause.code === "string") return cause.code;
  if (cause && typeof cause.message === "string") return cause.message;
  return error instanceof Error ? error.message : "";
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
