/**
 * The weft HTTP API, called by the contract's route names (shared/http/contract.ts) as the CLI's
 * client does. Requests go to the page's own origin: the local runtime serves the console and the
 * API together, and `weft console` proxies (and signs) the API beside the console's files.
 */
import { parseExact, stringifyExact } from "../../shared/domain/exact-numbers.js";
import {
  API_ROUTES,
  type RouteName,
  type RouteParams,
  type RouteResponse,
  routePath,
} from "../../shared/http/contract.js";

export type { ModeledCost } from "../../shared/domain/cost-model.js";
export type { WorkflowDefinition } from "../../shared/domain/definition.js";
export type { CatchCondition } from "../../shared/domain/edges.js";
export { dependencyIds, dependencyLabel, edgeConditions } from "../../shared/domain/edges.js";
export type { ExecutionListItem } from "../../shared/engine/queries.js";
export type { ExecutionView, NodeView } from "../../shared/engine/views.js";
export { displayState } from "../../shared/engine/views.js";
export type {
  DeadLetter,
  DeadLettersPage,
  EventsPage,
  ExecutionDescription,
  ExecutionRef,
  ExecutionsPage,
  RedriveResponse,
  WorkflowListItem,
  WorkflowResponse,
  WorkflowsPage,
} from "../../shared/http/contract.js";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

type Query = Record<string, string | number | undefined>;

/** The API's base: where the page is (`/` locally; any prefix works). */
function apiUrl(path: string, query: Query = {}): URL {
  const url = new URL(`.${path}`, window.location.href);
  url.hash = "";
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== "") url.searchParams.set(key, String(value));
  }
  return url;
}

export async function call<K extends RouteName>(
  name: K,
  params: RouteParams<K>,
  options: { query?: Query; body?: unknown; signal?: AbortSignal } = {},
): Promise<RouteResponse<K>> {
  const { method } = API_ROUTES[name];
  const url = apiUrl(routePath(name, params), options.query);
  let response: Response;
  try {
    response = await fetch(url, {
      method,
      headers: {
        accept: "application/json",
        ...(options.body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(options.body === undefined ? {} : { body: stringifyExact(options.body) }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
  } catch (error) {
    if (options.signal?.aborted) throw error;
    throw new ApiError(0, "Unreachable", `cannot reach the weft API (${String(error)})`);
  }
  const text = await response.text();
  let body: unknown;
  try {
    // Exact numbers (an id beyond 2^53) keep their digits; JSON.parse would round them.
    body = text === "" ? undefined : parseExact(text);
  } catch {
    body = undefined;
  }
  if (!response.ok) {
    const error =
      (body as { error?: { code?: string; message?: string }; message?: string } | undefined) ?? {};
    throw new ApiError(
      response.status,
      error.error?.code ?? `Http${response.status}`,
      error.error?.message ?? error.message ?? `${method} ${url.pathname} answered HTTP ${response.status}`,
    );
  }
  return body as RouteResponse<K>;
}

/** Every page of a paged listing (`next` cursors), up to `max` items. */
export async function everyPage<T>(
  fetchPage: (next: string | undefined) => Promise<{ items: T[]; next?: string | undefined }>,
  max = 10_000,
): Promise<T[]> {
  const all: T[] = [];
  let next: string | undefined;
  do {
    const page = await fetchPage(next);
    all.push(...page.items);
    next = page.next;
  } while (next !== undefined && all.length < max);
  return all;
}

export function errorMessage(error: unknown): string {
  if (error instanceof ApiError) return `${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}
