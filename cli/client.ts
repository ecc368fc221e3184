/**
 * A small typed client of the weft HTTP API (the contract in the design brief). Errors come back as
 * ApiError (the API's `{error: {code, message, details}}`) or UnreachableError (no answer at all).
 */

import { parseExact, stringifyExact } from "../shared/domain/exact-numbers.js";
import type { ExternalTask, TaskErrorReport } from "../shared/engine/external.js";
import type { ExecutionView, UploadTicket } from "../shared/engine/views.js";
import {
  API_ROUTES,
  type DeadLettersPage,
  type DeregisterResponse,
  type EventsPage,
  type ExecutionRef,
  type ExecutionsPage,
  type RedriveResponse,
  type RegisterResponse,
  type RouteName,
  type RouteParams,
  type RouteResponse,
  routePath,
  type SettledResponse,
  type TaskHeartbeatResponse,
  type WorkerHeartbeatResponse,
  type WorkerRegistered,
  type WorkersPage,
  type WorkflowResponse,
  type WorkflowsPage,
} from "../shared/http/contract.js";
import { ApiError, CliError, UnreachableError } from "./errors.js";
import { isLoopback, type RequestSigner } from "./signing.js";

export type {
  ExternalTask,
  TaskCancellation,
  TaskErrorReport,
  WorkerView,
} from "../shared/engine/external.js";
export type { PayloadReference } from "../shared/engine/payload-views.js";
export type { ExecutionListItem } from "../shared/engine/queries.js";
export type { ExecutionView, NodeView, UploadTicket } from "../shared/engine/views.js";
export type {
  DeadLetter,
  DeadLettersPage,
  DeregisterResponse,
  EventsPage,
  ExecutionRef,
  ExecutionsPage,
  RedriveResponse,
  RegisterResponse,
  SettledResponse,
  TaskHeartbeatResponse,
  WorkerHeartbeatResponse,
  WorkerRegistered,
  WorkersPage,
  WorkflowListItem,
  WorkflowResponse,
  WorkflowsPage,
} from "../shared/http/contract.js";
/** One history event as the API answers it. */
export type HistoryEventView = EventsPage["events"][number];

/**
 * A member of a request body given as its JSON text, written into the body as it is: an input's
 * exact text (shared/domain/json.ts), so -0 or 1e400 reach the API as they would by upload.
 */
export class JsonText {
  constructor(readonly text: string) {}
}

/** Where an execution's input comes from: sent in the request, or an upload (`POST /payloads`). */
export type InputSource = { input: unknown } | { inputRef: string };

export interface ClientOptions {
  /** Base URL, e.g. http://127.0.0.1:3000 or https://abc.execute-api.eu-west-1.amazonaws.com/prod */
  baseUrl: string;
  signer?: RequestSigner;
  /** Per-request timeout. Default 30 s (API Gateway's own limit is about that). */
  timeoutMs?: number;
  /** Timeout of an upload's PUT (up to 10 MiB). Default 5 minutes. */
  uploadTimeoutMs?: number;
}

type Query = Record<string, string | number | undefined>;

export class WeftClient {
  readonly baseUrl: string;
  private readonly signer: RequestSigner | undefined;
  private readonly timeoutMs: number;
  private readonly uploadTimeoutMs: number;

  constructor(options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.signer = options.signer;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.uploadTimeoutMs = options.uploadTimeoutMs ?? 300_000;
  }

  /** True when every call is signed (SigV4) for a deployed API. */
  get signs(): boolean {
    return this.signer !== undefined;
  }

  registerWorkflow(definition: unknown): Promise<{ status: number; body: RegisterResponse }> {
    return this.call("registerWorkflow", {}, { body: definition });
  }

  async listWorkflows(query: { limit?: number; next?: string } = {}): Promise<WorkflowsPage> {
    return (await this.call("listWorkflows", {}, { query })).body;
  }

  async getWorkflow(name: string, version?: number): Promise<WorkflowResponse> {
    return (await this.call("getWorkflow", { name }, { query: { version } })).body;
  }

  /** `input` may be a JsonText (sent as it is); `inputRef` names an upload (createUpload, upload). */
  async startExecution(request: {
    workflow: string;
    version?: number;
    input?: unknown;
    inputRef?: string;
    start?: boolean;
    idempotencyKey?: string;
  }): Promise<{ status: number; body: ExecutionRef }> {
    return this.call("startExecution", {}, { body: request });
  }

  async trigger(executionId: string, given?: InputSource): Promise<ExecutionRef> {
    return (await this.call("triggerExecution", { id: executionId }, { body: given ?? {} })).body;
  }

  /** `POST /payloads`: where to upload an input of `bytes` bytes (its UTF-8 JSON text), and its inputRef. */
  async createUpload(bytes: number): Promise<UploadTicket> {
    try {
      return (await this.call("createUpload", {}, { body: { bytes } })).body;
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) {
        throw new ApiError(
          404,
          "UploadsUnsupported",
          `the weft API at ${this.baseUrl} takes no uploads (POST /payloads answered 404); an input over the direct limit needs a newer API`,
        );
      }
      throw error;
    }
  }

  /**
   * Makes an upload's presigned request: PUTs `text` to `ticket.upload.url` with exactly the headers
   * it names (content-length is part of the signature). The URL carries its own signature, so the
   * request is never signed with SigV4 here; it goes to S3 (or the local runtime), not the API.
   */
  async upload(ticket: UploadTicket, text: string): Promise<void> {
    const { url, method, headers } = ticket.upload;
    const body = Buffer.from(text, "utf8");
    const length = Object.entries(headers).find(([name]) => name.toLowerCase() === "content-length")?.[1];
    if (length !== undefined && Number(length) !== body.byteLength) {
      throw new CliError(
        `the upload was signed for ${length} bytes but the input is ${body.byteLength} bytes`,
        1,
        "UploadFailed",
      );
    }
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      throw new CliError(`POST /payloads answered an upload URL that is not a URL`, 1, "UploadFailed");
    }
    // Never the query in messages: it holds the signature (and, on S3, the credential and token).
    const where = `${target.origin}${target.pathname}`;
    let response: Response;
    try {
      response = await fetch(target, {
        method,
        headers,
        body,
        signal: AbortSignal.timeout(this.uploadTimeoutMs),
      });
    } catch (error) {
      const cause = describeCause(error);
      throw new CliError(
        `cannot upload the input to ${where}${cause ? ` (${cause})` : ""}`,
        1,
        "UploadFailed",
      );
    }
    const answer = await response.text().catch(() => "");
    if (!response.ok) {
      throw new CliError(
        `the upload of the input to ${where} answered HTTP ${response.status}${uploadErrorText(answer)}`,
        1,
        "UploadFailed",
      );
    }
  }

  async cancel(executionId: string, reason?: string): Promise<ExecutionRef> {
    const body = reason === undefined ? {} : { reason };
    return (await this.call("cancelExecution", { id: executionId }, { body })).body;
  }

  /**
   * `resolve`: true asks for large values inline (`?resolve=true`), false for references (cheap to
   * poll, even from the local runtime, which inlines by default); absent, the API's default.
   */
  async getExecution(executionId: string, options: { resolve?: boolean } = {}): Promise<ExecutionView> {
    const resolve = options.resolve === undefined ? undefined : String(options.resolve);
    return (await this.call("describeExecution", { id: executionId }, { query: { resolve } })).body;
  }

  async listEvents(executionId: string, page: { after?: string; limit?: number } = {}): Promise<EventsPage> {
    const query = { after: page.after, limit: page.limit };
    return (await this.call("listEvents", { id: executionId }, { query })).body;
  }

  async listExecutions(query: {
    workflow?: string;
    status?: string;
    limit?: number;
    next?: string;
  }): Promise<ExecutionsPage> {
    return (await this.call("listExecutions", {}, { query })).body;
  }

  async listDeadLetters(query: { limit?: number; next?: string }): Promise<DeadLettersPage> {
    return (await this.call("listDeadLetters", {}, { query })).body;
  }

  async redrive(messageIds?: string[]): Promise<RedriveResponse> {
    const body = messageIds === undefined || messageIds.length === 0 ? {} : { messageIds };
    return (await this.call("redrive", {}, { body })).body;
  }

  // ── external workers (a worker process's calls) ─────────────────────────────────────────────

  /** `POST /workers`: registers (again, under `workerId`); answers its id and heartbeat period. */
  async registerWorker(registration: {
    workerId?: string;
    pool: string;
    executors?: string[];
    capabilities?: Record<string, string>;
    labels?: string[];
    maxParallel?: number;
  }): Promise<WorkerRegistered> {
    return (await this.call("registerWorker", {}, { body: registration })).body;
  }

  /** A page of the registry (`next` from the previous page for the one after it). */
  async listWorkers(query: { limit?: number; next?: string } = {}): Promise<WorkersPage> {
    return (await this.call("listWorkers", {}, { query })).body;
  }

  async workerHeartbeat(workerId: string): Promise<WorkerHeartbeatResponse> {
    return (await this.call("workerHeartbeat", { id: workerId })).body;
  }

  async deregisterWorker(workerId: string): Promise<DeregisterResponse> {
    return (await this.call("deregisterWorker", { id: workerId })).body;
  }

  /**
   * `POST /workers/{id}/poll`: a task taken for the worker, or undefined when none came within
   * `waitSeconds` (at most 20; the API's 204). `signal` ends the wait early (e.g. on shutdown).
   */
  async pollTask(
    workerId: string,
    options: { waitSeconds?: number; signal?: AbortSignal } = {},
  ): Promise<ExternalTask | undefined> {
    const body = options.waitSeconds === undefined ? {} : { waitSeconds: options.waitSeconds };
    const answer = await this.call(
      "pollTask",
      { id: workerId },
      { body, ...(options.signal === undefined ? {} : { signal: options.signal }) },
    );
    return answer.status === 204 ? undefined : answer.body;
  }

  async heartbeatTask(taskToken: string): Promise<TaskHeartbeatResponse> {
    return (await this.call("heartbeatTask", {}, { body: { taskToken } })).body;
  }

  /** `output` may be a JsonText (sent as it is). */
  async completeTask(taskToken: string, output: unknown): Promise<SettledResponse> {
    return (await this.call("completeTask", {}, { body: { taskToken, output } })).body;
  }

  async failTask(taskToken: string, error: TaskErrorReport): Promise<SettledResponse> {
    return (await this.call("failTask", {}, { body: { taskToken, error } })).body;
  }

  // ── callbacks ────────────────────────────────────────────────────────────────────────────────

  /** `output` may be a JsonText (sent as it is); absent, the node's output is null. */
  async completeCallback(token: string, output?: unknown): Promise<SettledResponse> {
    const body = output === undefined ? { token } : { token, output };
    return (await this.call("completeCallback", {}, { body })).body;
  }

  /** For good unless `retryable` is true (then by the node's retry policy). */
  async failCallback(
    token: string,
    error: { name?: string; message?: string; retryable?: boolean },
  ): Promise<SettledResponse> {
    return (await this.call("failCallback", {}, { body: { token, error } })).body;
  }

  async heartbeatCallback(token: string): Promise<SettledResponse> {
    return (await this.call("heartbeatCallback", {}, { body: { token } })).body;
  }

  /**
   * Sends a request as it came (`weft console`'s proxy: the browser's calls), signed as every other
   * call when this client signs, and answers the API's response as it is: status, content type and
   * body, errors included. Throws only when no answer came (UnreachableError).
   */
  async forward(request: {
    method: string;
    /** Path and query string, e.g. `/executions?status=FAILED`. */
    target: string;
    body?: string;
    contentType?: string;
  }): Promise<{ status: number; headers: Record<string, string>; body: Buffer }> {
    const url = new URL(`${this.baseUrl}${request.target}`);
    let headers: Record<string, string> = { accept: "application/json" };
    if (request.body !== undefined) headers["content-type"] = request.contentType ?? "application/json";
    if (this.signer) {
      headers = await this.signer({
        method: request.method,
        url,
        headers,
        ...(request.body === undefined ? {} : { body: request.body }),
      });
    }
    let response: Response;
    try {
      response = await fetch(url, {
        method: request.method,
        headers,
        ...(request.body === undefined ? {} : { body: request.body }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      throw new UnreachableError(unreachableMessage(this.baseUrl, error));
    }
    const body = Buffer.from(await response.arrayBuffer());
    const answered: Record<string, string> = {};
    for (const name of ["content-type", "allow", "retry-after"]) {
      const value = response.headers.get(name);
      if (value !== null) answered[name] = value;
    }
    return { status: response.status, headers: answered, body };
  }

  /**
   * Calls a route of the contract by name; the answer has that route's type. A 204 answers no body
   * (undefined: only a route whose type allows it, the poll, answers 204).
   */
  async call<K extends RouteName>(
    name: K,
    params: RouteParams<K>,
    options: { body?: unknown; query?: Query; signal?: AbortSignal } = {},
  ): Promise<{ status: number; body: RouteResponse<K> }> {
    const { method } = API_ROUTES[name];
    const url = new URL(`${this.baseUrl}${routePath(name, params)}`);
    for (const [key, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    const body = options.body === undefined ? undefined : bodyText(options.body);
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
        signal:
          options.signal === undefined
            ? AbortSignal.timeout(this.timeoutMs)
            : AbortSignal.any([options.signal, AbortSignal.timeout(this.timeoutMs)]),
      });
    } catch (error) {
      // Called off by the caller: its own reason, not an unreachable API.
      if (options.signal?.aborted) throw options.signal.reason;
      throw new UnreachableError(unreachableMessage(this.baseUrl, error));
    }
    const text = await response.text();
    if (response.status === 204) return { status: 204, body: undefined as RouteResponse<K> };
    let parsed: unknown;
    try {
      // Exact numbers (exact-numbers.ts): an id beyond 2^53 in an answer keeps its digits.
      parsed = text === "" ? undefined : parseExact(text);
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
    // The API's own answer for this route (the contract's type); not re-validated here.
    return { status: response.status, body: parsed as RouteResponse<K> };
  }
}

/** JSON.stringify, except that members given as JsonText are written as their text. */
function bodyText(body: unknown): string {
  if (!isRecord(body) || !Object.values(body).some((value) => value instanceof JsonText)) {
    return stringifyExact(body) as string;
  }
  const members = Object.entries(body)
    .filter(([, value]) => value !== undefined)
    .map(
      ([key, value]) =>
        `${JSON.stringify(key)}:${value instanceof JsonText ? value.text : stringifyExact(value)}`,
    );
  return `{${members.join(",")}}`;
}

/** An upload's error answer, short: S3's `<Code>` and `<Message>`, else the text's start. */
function uploadErrorText(text: string): string {
  const code = /<Code>([^<]*)<\/Code>/.exec(text)?.[1];
  const message = /<Message>([^<]*)<\/Message>/.exec(text)?.[1];
  if (code !== undefined || message !== undefined) {
    return `: ${[code, message].filter((part) => part !== undefined).join(": ")}`;
  }
  const snippet = text.trim().slice(0, 200);
  return snippet === "" ? "" : `: ${snippet}`;
}

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
  const hint =
    url && isLoopback(url) ? " — is `weft dev` (or `npm start` in weft's repository) running?" : "";
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
