/**
 * A small route table: method + path pattern (`/executions/{id}/trigger`). It matches on the request's
 * method and raw path, so it works behind API Gateway with a `$default` route as well as with explicit
 * routes (whose own pathParameters are ignored).
 */

export interface Route<H> {
  method: string;
  /** Literal segments and `{name}` parameters, e.g. `/executions/{id}/trigger`. */
  pattern: string;
  handler: H;
}

export type RouteMatch<H> =
  | { kind: "found"; route: Route<H>; params: Record<string, string> }
  /** The path is known but not with this method; `allowed` lists the methods it has. */
  | { kind: "method-not-allowed"; allowed: string[] }
  | { kind: "not-found" };

interface CompiledRoute<H> {
  route: Route<H>;
  segments: Array<{ literal: string } | { param: string }>;
}

/** Thrown for a path segment that is not valid percent-encoding. */
export class MalformedPathError extends Error {
  override name = "MalformedPathError";
}

function splitPath(path: string): string[] {
  // "/a/b/" and "/a/b" are the same resource; empty segments in the middle ("/a//b") never match.
  const trimmed = path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
  return trimmed.split("/").slice(1);
}

function compile<H>(route: Route<H>): CompiledRoute<H> {
  if (!route.pattern.startsWith("/")) throw new Error(`route pattern must start with "/": ${route.pattern}`);
  const segments = splitPath(route.pattern).map((segment) => {
    const param = /^\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(segment);
    return param?.[1] === undefined ? { literal: segment } : { param: param[1] };
  });
  return { route, segments };
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new MalformedPathError(`malformed percent-encoding in path segment "${segment}"`);
  }
}

export class Router<H> {
  private readonly compiled: CompiledRoute<H>[];

  constructor(routes: readonly Route<H>[]) {
    this.compiled = routes.map((route) => compile({ ...route, method: route.method.toUpperCase() }));
  }

  match(method: string, path: string): RouteMatch<H> {
    const parts = splitPath(path);
    const allowed = new Set<string>();
    for (const { route, segments } of this.compiled) {
      const params = matchSegments(segments, parts);
      if (params === undefined) continue;
      if (route.method === method.toUpperCase()) return { kind: "found", route, params };
      allowed.add(route.method);
    }
    return allowed.size > 0
      ? { kind: "method-not-allowed", allowed: [...allowed].sort() }
      : { kind: "not-found" };
  }
}

function matchSegments(
  segments: CompiledRoute<unknown>["segments"],
  parts: readonly string[],
): Record<string, string> | undefined {
  if (segments.length !== parts.length) return undefined;
  const params: Record<string, string> = {};
  for (const [index, segment] of segments.entries()) {
    const part = parts[index];
    if (part === undefined) return undefined;
    if ("literal" in segment) {
      if (segment.literal !== part) return undefined;
    } else {
      if (part === "") return undefined;
      params[segment.param] = decodeSegment(part);
    }
  }
  return params;
}
