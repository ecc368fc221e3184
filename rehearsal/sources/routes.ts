/**
 * The HTTP API's routes from the template (AWS::ApiGatewayV2::Route → its Integration → the Lambda
 * function), and route selection as API Gateway does it: the most specific match wins — literal
 * segments over `{param}`, `{param}` over a greedy `{proxy+}`, an exact method over ANY — then the
 * `$default` route; no match is API Gateway's own 404.
 */
import { referencedIds } from "../cfn/intrinsics.js";
import { type CfnTemplate, resourcesOfType, targetId } from "../cfn/template.js";

export interface ApiRoute {
  routeKey: string;
  /** Upper case, or ANY. */
  method: string;
  /** Path segments: literal text, `{name}`, or `{name+}` (last only). */
  segments: string[];
  authorizationType: string;
  functionLogicalId: string;
  payloadFormatVersion: string;
  timeoutMs: number;
}

export interface RouteMatch {
  route: ApiRoute;
  pathParameters: Record<string, string>;
}

export function apiRoutes(template: CfnTemplate): ApiRoute[] {
  return resourcesOfType(template, "AWS::ApiGatewayV2::Route").map(([logicalId, resource]) => {
    const props = resource.Properties ?? {};
    const routeKey = String(props.RouteKey);
    const [integrationId] = [...referencedIds(props.Target)];
    const integration = integrationId ? template.Resources[integrationId] : undefined;
    if (integration?.Type !== "AWS::ApiGatewayV2::Integration") {
      throw new Error(`route ${logicalId} (${routeKey}) has no integration the rehearsal can follow`);
    }
    const ip = integration.Properties ?? {};
    if (ip.IntegrationType !== "AWS_PROXY")
      throw new Error(`route ${routeKey}: integration type ${String(ip.IntegrationType)}`);
    const functionLogicalId = targetId(ip.IntegrationUri);
    if (!functionLogicalId)
      throw new Error(`route ${routeKey}: its integration names no function of the template`);
    const [method = "", path = ""] = routeKey === "$default" ? ["ANY", "$default"] : routeKey.split(" ", 2);
    return {
      routeKey,
      method: method.toUpperCase(),
      segments: path === "$default" ? ["$default"] : path.split("/").filter(Boolean),
      authorizationType: String(props.AuthorizationType ?? "NONE"),
      functionLogicalId,
      payloadFormatVersion: String(ip.PayloadFormatVersion ?? "2.0"),
      timeoutMs: Number(ip.TimeoutInMillis ?? 30_000),
    };
  });
}

function matchSegments(
  route: ApiRoute,
  parts: string[],
): { score: number[]; params: Record<string, string> } | undefined {
  const params: Record<string, string> = {};
  const score: number[] = [];
  for (let i = 0; i < route.segments.length; i++) {
    const segment = route.segments[i] as string;
    const greedy = /^\{(.+)\+\}$/.exec(segment);
    if (greedy) {
      if (i !== route.segments.length - 1 || parts.length <= i) return undefined;
      params[greedy[1] as string] = parts.slice(i).join("/");
      score.push(0);
      return { score, params };
    }
    const part = parts[i];
    if (part === undefined) return undefined;
    const param = /^\{(.+)\}$/.exec(segment);
    if (param) {
      params[param[1] as string] = part;
      score.push(1);
    } else if (segment === part) score.push(2);
    else return undefined;
  }
  return parts.length === route.segments.length ? { score, params } : undefined;
}

function compareScores(a: number[], b: number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? -1) - (b[i] ?? -1);
    if (d !== 0) return d;
  }
  return 0;
}

/** The route API Gateway would pick for `method` and the raw (still percent-encoded) `path`. */
export function selectRoute(
  routes: readonly ApiRoute[],
  method: string,
  path: string,
): RouteMatch | undefined {
  const parts = path
    .split("/")
    .filter(Boolean)
    .map((part) => {
      try {
        return decodeURIComponent(part);
      } catch {
        return part;
      }
    });
  let best: { route: ApiRoute; score: number[]; params: Record<string, string> } | undefined;
  for (const route of routes) {
    if (route.segments[0] === "$default") continue;
    if (route.method !== "ANY" && route.method !== method.toUpperCase()) continue;
    const matched = matchSegments(route, parts);
    if (!matched) continue;
    const score = [...matched.score, route.method === "ANY" ? 0 : 1];
    if (!best || compareScores(score, best.score) > 0) best = { route, score, params: matched.params };
  }
  if (best) return { route: best.route, pathParameters: best.params };
  const fallback = routes.find((route) => route.segments[0] === "$default");
  return fallback ? { route: fallback, pathParameters: {} } : undefined;
}
