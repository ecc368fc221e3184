/**
 * The HTTP API's contract, stated once: every route (its name, method and path), the shape each one
 * answers, and the request schemas (./schemas.ts). The api function serves exactly these routes
 * (functions/api/app.ts makes a handler per name, and the compiler refuses a missing one), infra/
 * turns them into API Gateway routes, and the CLI's client calls them by name with these types. A
 * route missing from one of the three is therefore not possible.
 */
import type { ModeledCost } from "../domain/cost-model.js";
import type { WorkflowDefinition } from "../domain/definition.js";
import type { ErrorInfo, ExecutionStatus } from "../domain/records.js";
import type {
  ExternalTask,
  RegisteredWorker,
  TaskCancellation,
  WorkerView,
} from "../engine/external-views.js";
import type { ExecutionListItem, HistoryPage } from "../engine/queries.js";
import type { ExecutionView, UploadTicket } from "../engine/views.js";

export type HttpMethod = "GET" | "POST" | "DELETE";

export interface RouteSpec {
  readonly method: HttpMethod;
  /** Literal segments and `{name}` parameters, as API Gateway writes them. */
  readonly path: string;
}

export const API_ROUTES = {
  registerWorkflow: { method: "POST", path: "/workflows" },
  /** Registered workflows by name, paged (`limit`, `next`). */
  listWorkflows: { method: "GET", path: "/workflows" },
  getWorkflow: { method: "GET", path: "/workflows/{name}" },
  /** An upload for an execution input too large for a request: answers a presigned PUT. */
  createUpload: { method: "POST", path: "/payloads" },
  startExecution: { method: "POST", path: "/executions" },
  listExecutions: { method: "GET", path: "/executions" },
  describeExecution: { method: "GET", path: "/executions/{id}" },
  triggerExecution: { method: "POST", path: "/executions/{id}/trigger" },
  cancelExecution: { method: "POST", path: "/executions/{id}/cancel" },
  listEvents: { method: "GET", path: "/executions/{id}/events" },
  listDeadLetters: { method: "GET", path: "/dlq" },
  redrive: { method: "POST", path: "/dlq/redrive" },
  // External workers (engine/external.ts). Task and callback tokens travel in bodies, never in
  // paths, so access logs never hold them.
  registerWorker: { method: "POST", path: "/workers" },
  listWorkers: { method: "GET", path: "/workers" },
  workerHeartbeat: { method: "POST", path: "/workers/{id}/heartbeat" },
  deregisterWorker: { method: "DELETE", path: "/workers/{id}" },
  /** A long poll (up to 20 s): at most one task the worker may run, taken for it; 204 when none. */
  pollTask: { method: "POST", path: "/workers/{id}/poll" },
  heartbeatTask: { method: "POST", path: "/tasks/heartbeat" },
  completeTask: { method: "POST", path: "/tasks/complete" },
  failTask: { method: "POST", path: "/tasks/fail" },
  // Callbacks (engine/callbacks.ts): a waiting `callback` node settled by its token.
  completeCallback: { method: "POST", path: "/callbacks/complete" },
  failCallback: { method: "POST", path: "/callbacks/fail" },
  heartbeatCallback: { method: "POST", path: "/callbacks/heartbeat" },
} as const satisfies Record<string, RouteSpec>;

export type RouteName = keyof typeof API_ROUTES;

/** The route names, in the table's order. */
export const ROUTE_NAMES = Object.keys(API_ROUTES) as RouteName[];

/** The `{name}` parameters of a path, as a type: "/executions/{id}/trigger" → "id". */
type PathParams<P extends string> = P extends `${string}{${infer Name}}${infer Rest}`
  ? Name | PathParams<Rest>
  : never;

export type RouteParams<K extends RouteName> = Record<PathParams<(typeof API_ROUTES)[K]["path"]>, string>;

/** A route's path with its parameters filled in (percent-encoded). */
export function routePath<K extends RouteName>(name: K, params: RouteParams<K>): string {
  const values = params as Record<string, string>;
  return API_ROUTES[name].path.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, param: string) => {
    const value = values[param];
    if (value === undefined) throw new Error(`route ${name}: parameter "${param}" is missing`);
    return encodeURIComponent(value);
  });
}

// ---------------------------------------------------------------------------------------------
// What each route answers (its success body; errors are ErrorBody).

export interface RegisterResponse {
  name: string;
  version: number;
  definitionHash: string;
  /** What was accepted but looks wrong (a `workflow` node naming a workflow not registered yet). */
  warnings?: Array<{ path: string; code: string; message: string }>;
}

export interface WorkflowListItem {
  name: string;
  latestVersion: number;
  /** When its first version was registered. */
  createdAt: string;
  /** The latest version's description, when it has one. */
  description?: string;
}

export interface WorkflowsPage {
  workflows: WorkflowListItem[];
  next?: string;
}

export interface WorkflowResponse {
  name: string;
  version: number;
  definitionHash: string;
  createdAt: string;
  /** The definition as registered. */
  definition: WorkflowDefinition;
}

export interface ExecutionRef {
  executionId: string;
  status: ExecutionStatus;
}

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

export type EventsPage = HistoryPage;

export type WorkerRegistered = RegisteredWorker;

export interface WorkersPage {
  workers: WorkerView[];
  /** The cursor of the next page (`?next=`); absent on the last. */
  next?: string;
}

export interface WorkerHeartbeatResponse {
  cancellations: TaskCancellation[];
}

export interface DeregisterResponse {
  workerId: string;
  /** Tasks it held, given up at once (retried elsewhere by policy). */
  released: number;
}

/** A poll's answer: the task taken for the worker, or (204) none within the wait. */
export type PollResponse = ExternalTask | undefined;

export interface TaskHeartbeatResponse {
  /** Stop the task (its execution was cancelled, or it failed elsewhere): then call /tasks/fail. */
  cancelRequested: boolean;
}

/** What settling a task or a callback answers (202: its node ended with it; the rest follows). */
export interface SettledResponse {
  accepted: true;
}

/**
 * GET /executions/{id}: the execution, and its modeled cost — AWS requests and dollars by service
 * as the engine's protocol counts them for its records (shared/engine/cost-model.ts, docs/cost.md).
 */
export type ExecutionDescription = ExecutionView & { cost: ModeledCost };

export interface RouteResponses {
  registerWorkflow: RegisterResponse;
  listWorkflows: WorkflowsPage;
  getWorkflow: WorkflowResponse;
  createUpload: UploadTicket;
  startExecution: ExecutionRef;
  listExecutions: ExecutionsPage;
  describeExecution: ExecutionDescription;
  triggerExecution: ExecutionRef;
  cancelExecution: ExecutionRef;
  listEvents: EventsPage;
  listDeadLetters: DeadLettersPage;
  redrive: RedriveResponse;
  registerWorker: WorkerRegistered;
  listWorkers: WorkersPage;
  workerHeartbeat: WorkerHeartbeatResponse;
  deregisterWorker: DeregisterResponse;
  pollTask: PollResponse;
  heartbeatTask: TaskHeartbeatResponse;
  completeTask: SettledResponse;
  failTask: SettledResponse;
  completeCallback: SettledResponse;
  failCallback: SettledResponse;
  heartbeatCallback: SettledResponse;
}

export type RouteResponse<K extends RouteName> = RouteResponses[K];

/** Every error answer: a stable code, a message, and one detail per problem. */
export interface ErrorBody {
  error: { code: string; message: string; details: Array<{ path: string; code: string; message: string }> };
}
